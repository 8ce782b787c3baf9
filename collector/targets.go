package collector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/recording"
)

// Target selects the processes a recording follows: the processes named
// (PIDs), every process with one name (Comm), or every process of a cgroup
// (Cgroup). Exactly one is set. record, top and agent share it (see
// cmd/contend's target flags).
type Target struct {
	// PIDs are processes (thread group ids) to record.
	PIDs []int
	// Comm is a process name (/proc/PID/comm, at most 15 bytes): every
	// process with that name, including those started while recording.
	Comm string
	// Cgroup is a cgroup v2 directory, absolute or relative to the
	// cgroup v2 mount (system.slice/nginx.service): every process in it
	// or in a cgroup below it, including those started while recording.
	Cgroup string
}

// commMax is the longest process name the kernel keeps (TASK_COMM_LEN 16,
// with its terminating zero).
const commMax = 15

// cgroupRoot is where the cgroup v2 hierarchy is mounted on most systems;
// cgroupMount finds where it is on this one (/sys/fs/cgroup/unified on a
// hybrid v1/v2 system).
const cgroupRoot = "/sys/fs/cgroup"

// cgroupMount returns the mount point of the cgroup v2 hierarchy, from
// /proc/self/mountinfo; cgroupRoot when none is listed.
func cgroupMount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupRoot
	}
	for _, line := range strings.Split(string(b), "\n") {
		// "36 25 0:31 / /sys/fs/cgroup/unified rw,... shared:9 - cgroup2 cgroup2 rw"
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			return f[4]
		}
	}
	return cgroupRoot
}

// Validate checks that exactly one selection is given and that it is well
// formed.
func (t Target) Validate() error {
	n := 0
	if len(t.PIDs) > 0 {
		n++
	}
	if t.Comm != "" {
		n++
	}
	if t.Cgroup != "" {
		n++
	}
	switch {
	case n == 0:
		return errors.New("no target: give -p PID[,PID…], --comm NAME or --cgroup PATH")
	case n > 1:
		return errors.New("give one of -p, --comm and --cgroup")
	}
	seen := map[int]bool{}
	for _, p := range t.PIDs {
		if p <= 0 {
			return fmt.Errorf("pid %d: a process id is a positive number", p)
		}
		if seen[p] {
			return fmt.Errorf("pid %d given twice", p)
		}
		seen[p] = true
	}
	if t.Comm != "" && len(t.Comm) > commMax {
		return fmt.Errorf("--comm %q: the kernel keeps at most %d bytes of a process name (see /proc/PID/comm)", t.Comm, commMax)
	}
	return nil
}

// mode returns the kernel's target mode (enum ct_target_mode).
func (t Target) mode() int {
	switch {
	case t.Comm != "":
		return targetModeComm
	case t.Cgroup != "":
		return targetModeCgroup
	}
	return targetModePIDs
}

// Follows reports whether processes may join the target while recording
// (--comm, --cgroup): the recording then lasts until its duration even when
// every process has left.
func (t Target) Follows() bool { return t.mode() != targetModePIDs }

// String describes the target for messages: "pid 42", "pids 42, 43",
// "processes named postgres", "cgroup system.slice/x.service".
func (t Target) String() string {
	switch {
	case t.Comm != "":
		return fmt.Sprintf("processes named %s", t.Comm)
	case t.Cgroup != "":
		return "cgroup " + t.Cgroup
	case len(t.PIDs) == 1:
		return fmt.Sprintf("pid %d", t.PIDs[0])
	}
	s := make([]string, len(t.PIDs))
	for i, p := range t.PIDs {
		s[i] = strconv.Itoa(p)
	}
	return "pids " + strings.Join(s, ", ")
}

// Recording returns the target as recorded in Meta.Target.
func (t Target) Recording() *recording.Target {
	return &recording.Target{PIDs: slices.Clone(t.PIDs), Comm: t.Comm, Cgroup: t.Cgroup}
}

// CgroupDir returns the cgroup's directory in the cgroup v2 hierarchy.
func (t Target) CgroupDir() string {
	if filepath.IsAbs(t.Cgroup) {
		return filepath.Clean(t.Cgroup)
	}
	return filepath.Join(cgroupMount(), t.Cgroup)
}

// checkCgroup verifies that the cgroup exists in a cgroup v2 hierarchy.
func (t Target) checkCgroup() error {
	dir := t.CgroupDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("--cgroup %s: no such cgroup (%s): %w", t.Cgroup, dir, ErrNoProcess)
		}
		return fmt.Errorf("--cgroup %s: %w", t.Cgroup, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("--cgroup %s: %s is not in a cgroup v2 hierarchy (the cgroup v2 mount here is %s)", t.Cgroup, dir, cgroupMount())
	}
	return nil
}

// Resolve returns the processes the target names now, under the proc
// mount root ("" is /proc). For PIDs, every one must exist: the first
// that does not gives an error naming it (wrapping ErrNoProcess). For Comm
// and Cgroup the list may be empty.
func (t Target) Resolve(root string) ([]int, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	switch t.mode() {
	case targetModeComm:
		return processesNamed(root, t.Comm)
	case targetModeCgroup:
		if err := t.checkCgroup(); err != nil {
			return nil, err
		}
		return cgroupProcesses(t.CgroupDir())
	}
	for _, p := range t.PIDs {
		if err := checkTarget(root, p); err != nil {
			return nil, err
		}
	}
	return slices.Clone(t.PIDs), nil
}

// processesNamed lists the live processes whose comm is name.
func processesNamed(root, name string) ([]int, error) {
	ents, err := os.ReadDir(procPath(root))
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(procPath(root, e.Name(), "comm"))
		if err != nil || strings.TrimSuffix(string(b), "\n") != name {
			continue
		}
		if checkTarget(root, pid) == nil {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out, nil
}

// cgroupProcesses lists the processes of the cgroup dir and of every
// cgroup below it.
func cgroupProcesses(dir string) ([]int, error) {
	seen := map[int]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // a child cgroup removed meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && pid != os.Getpid() {
				seen[pid] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the processes of cgroup %s: %w", dir, err)
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// openCgroup opens the cgroup's directory for the kernel's exec check
// (ct_cgroup); the caller closes the descriptor.
func (t Target) openCgroup() (int, error) {
	fd, err := unix.Open(t.CgroupDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open cgroup %s: %w", t.CgroupDir(), err)
	}
	return fd, nil
}

// closeFD closes a descriptor the collector opened.
func closeFD(fd int) { unix.Close(fd) }
