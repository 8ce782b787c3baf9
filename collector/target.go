package collector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/contend-dev/contend/internal/procroot"
	"golang.org/x/sys/unix"
)

// procPath joins a path under the proc mount root ("" means /proc).
func procPath(root string, parts ...string) string { return procroot.Path(root, parts...) }

// procFS opens the proc mount at root ("" means /proc).
func procFS(root string) (procfs.FS, error) { return procroot.FS(root) }

// checkTarget verifies that pid is a live process (a thread group leader,
// not another thread's id).
func checkTarget(root string, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	path := procPath(root, strconv.Itoa(pid), "status")
	var (
		status procfs.ProcStatus
		stat   procfs.ProcStat
		p      procfs.Proc
	)
	pfs, err := procFS(root)
	if err == nil {
		p, err = pfs.Proc(pid)
	}
	if err == nil {
		status, err = p.NewStatus()
	}
	if err == nil {
		stat, err = p.Stat()
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		// Under hidepid=invisible a process of another user is missing
		// from /proc, but it exists: signalling it is refused, not
		// failed.
		if (root == "" || root == "/proc") && unix.Kill(pid, 0) == unix.EPERM {
			return procAccessError(path, pid)
		}
		return fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	if errors.Is(err, fs.ErrPermission) {
		return procAccessError(path, pid)
	}
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	if stat.State == "Z" {
		return fmt.Errorf("pid %d is a zombie: %w", pid, ErrNoProcess)
	}
	if status.TGID != 0 && status.TGID != pid {
		return fmt.Errorf("pid %d is a thread of process %d; record the process: %w", pid, status.TGID, ErrNoProcess)
	}
	return nil
}

// targetInfo describes the target for Meta.
type targetInfo struct {
	comm      string
	cmdline   []string
	exe       string
	goVersion string
	// cpusAllowed is how many CPUs the process may run on.
	cpusAllowed int
}

// readTarget reads what /proc says about pid; missing parts stay empty.
func readTarget(root string, pid int) targetInfo {
	var t targetInfo
	pfs, err := procFS(root)
	if err != nil {
		return t
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return t
	}
	t.comm, _ = p.Comm()
	t.cmdline, _ = p.CmdLine()
	t.exe, _ = p.Executable()
	t.goVersion = goBuildVersion(procPath(root, strconv.Itoa(pid), "exe"))
	if st, err := p.NewStatus(); err == nil {
		t.cpusAllowed = len(st.CpusAllowedList)
	}
	return t
}

// release returns uname -r, "" when unknown.
func release() string {
	r, _ := KernelRelease()
	return r
}

// onlineCPUs counts the CPUs listed in /sys/devices/system/cpu/online
// ("0-3,6"); 0 when unreadable.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	return countCPUList(strings.TrimSpace(string(b)))
}

// countCPUList counts the CPUs of a kernel CPU list ("0-3,6" is 5).
func countCPUList(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// monotonicNow reads CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// exitPoll is how often the /proc fallback of watchExit looks at the
// target; a pidfd needs no polling.
const exitPoll = 100 * time.Millisecond

// watchExit calls exited once the whole process pid has exited (or become
// a zombie), or returns when ctx is done. It waits on a pidfd; where that
// is unavailable it polls /proc.
func watchExit(ctx context.Context, root string, pid int, exited func()) {
	if root == "" || root == "/proc" {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			defer unix.Close(fd)
			for ctx.Err() == nil {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, err := unix.Poll(fds, int(exitPoll/time.Millisecond))
				if err != nil && !errors.Is(err, unix.EINTR) {
					break
				}
				if n > 0 {
					exited()
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
	}
	t := time.NewTicker(exitPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if checkTarget(root, pid) != nil {
				exited()
				return
			}
		}
	}
}
