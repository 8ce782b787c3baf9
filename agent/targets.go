package agent

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/procfs"
)

// Targets says which processes the agent watches: the processes given by
// id, and every process whose command name is Comm, including ones that
// start later (a restarted service is picked up at the next window).
//
// This is the agent's one point of contact with target selection. Once
// the collector selects targets itself (a set of pids, a command name or
// a cgroup, as one session), Resolve becomes a call to it.
type Targets struct {
	PIDs []int
	// Comm matches /proc/PID/comm exactly (the kernel keeps the first 15
	// bytes of a program's name).
	Comm string
}

// MaxProcesses bounds how many processes the agent records at once. Each
// is its own collector session with its own probes, and every attached
// futex and scheduler program runs for every such call on the machine;
// four sessions keep that cost within a few times one recording's. More
// matches are left out and a warning names how many.
const MaxProcesses = 4

// commLen is how much of a program's name the kernel keeps in comm
// (TASK_COMM_LEN 16, with the terminating NUL).
const commLen = 15

// Process is one process the agent records. Start (the process's start
// time in clock ticks since boot) tells a process from a later one that
// reuses its id.
type Process struct {
	PID   int
	Comm  string
	Start uint64
}

// String names the process as the logs do.
func (p Process) String() string { return fmt.Sprintf("pid %d (%s)", p.PID, p.Comm) }

// Validate reports a target selection that selects nothing.
func (t Targets) Validate() error {
	if len(t.PIDs) == 0 && t.Comm == "" {
		return errors.New("give the processes to watch with -p PID[,PID…] or --comm NAME")
	}
	for _, pid := range t.PIDs {
		if pid <= 0 {
			return fmt.Errorf("bad pid %d", pid)
		}
	}
	if len(t.Comm) > commLen {
		return fmt.Errorf("--comm %q: the kernel keeps only the first %d bytes of a command name (%q)", t.Comm, commLen, t.Comm[:commLen])
	}
	return nil
}

// resolver finds the live processes of a selection; it remembers the
// start time of each pid given with -p the first time it sees it, so that
// another process that later reuses the id is not taken for it.
type resolver struct {
	t     Targets
	fs    procfs.FS
	self  int
	first map[int]uint64
}

func newResolver(t Targets, procRoot string) (*resolver, error) {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", procRoot, err)
	}
	return &resolver{t: t, fs: pfs, self: os.Getpid(), first: map[int]uint64{}}, nil
}

// resolve returns the live target processes, by pid, at most
// MaxProcesses of them, and how many more matched.
func (r *resolver) resolve() (procs []Process, more int, err error) {
	seen := map[int]bool{}
	for _, pid := range r.t.PIDs {
		p, ok := r.process(pid)
		if !ok {
			continue
		}
		if st, known := r.first[pid]; known && st != p.Start {
			continue // another process has the id now
		}
		r.first[pid] = p.Start
		seen[pid] = true
		procs = append(procs, p)
	}
	if r.t.Comm != "" {
		all, err := r.fs.AllProcs()
		if err != nil {
			return nil, 0, fmt.Errorf("list processes: %w", err)
		}
		for _, pr := range all {
			if seen[pr.PID] || pr.PID == r.self {
				continue
			}
			p, ok := r.process(pr.PID)
			if ok && p.Comm == r.t.Comm {
				procs = append(procs, p)
			}
		}
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].PID < procs[j].PID })
	if len(procs) > MaxProcesses {
		more = len(procs) - MaxProcesses
		procs = procs[:MaxProcesses]
	}
	return procs, more, nil
}

// process reads pid's name and start time; false when it is gone, a
// zombie, or unreadable.
func (r *resolver) process(pid int) (Process, bool) {
	pr, err := r.fs.Proc(pid)
	if err != nil {
		return Process{}, false
	}
	st, err := pr.Stat()
	if err != nil {
		return Process{}, false
	}
	if st.State == "Z" || st.State == "X" {
		return Process{}, false
	}
	return Process{PID: pid, Comm: st.Comm, Start: st.Starttime}, true
}
