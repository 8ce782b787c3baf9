package agent

import (
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/procfs"

	"github.com/contend-dev/contend/collector"
)

// MaxProcesses bounds how many processes of a window are analyzed and
// exported, those that waited longest on locks first. The collector
// records every process of the target set in one session; what grows with
// the processes is the agent's work after each window (an analysis per
// process, tens of milliseconds for a busy one) and the metric series
// (2×(--top+1) lock series per process). Four keep both within a few
// times one process's. More processes are left out of that window's
// metrics and a warning says how many.
const MaxProcesses = 4

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

// resolver says which processes of a target are alive. It remembers the
// start time of each pid given with -p the first time it sees it, so that
// another process that later reuses the id is not taken for it.
type resolver struct {
	t     collector.Target
	root  string
	fs    procfs.FS
	first map[int]uint64
}

func newResolver(t collector.Target, procRoot string) (*resolver, error) {
	root := procRoot
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	pfs, err := procfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	return &resolver{t: t, root: procRoot, fs: pfs, first: map[int]uint64{}}, nil
}

// session returns the target of the next collector session: the pids of
// -p that still run (each the process first seen under its id), or the
// --comm or --cgroup target as given while a process of it runs. ok is
// false when no process of the target runs.
func (r *resolver) session() (t collector.Target, ok bool, err error) {
	if r.t.Follows() {
		pids, err := r.t.Resolve(r.root)
		if err != nil {
			return r.t, false, err
		}
		return r.t, len(pids) > 0, nil
	}
	var live []int
	for _, pid := range r.t.PIDs {
		_, ok, rerr := r.read(pid)
		if rerr != nil {
			// Out of descriptors or memory: whether it runs is
			// unknown, so it is kept, and the session says more.
			ok, err = true, rerr
		}
		if ok {
			live = append(live, pid)
		}
	}
	return collector.Target{PIDs: live}, len(live) > 0, err
}

// process reads pid's name and start time; false when it is gone, a
// zombie, unreadable, or (for a pid given with -p) another process than
// the one first seen under that id.
func (r *resolver) process(pid int) (Process, bool) {
	p, ok, _ := r.read(pid)
	return p, ok
}

// read is process, with an error when pid's /proc files could not be
// read for lack of descriptors or memory: that is no sign of the process
// being gone, and ok is false then.
func (r *resolver) read(pid int) (p Process, ok bool, err error) {
	if pid == os.Getpid() {
		return Process{}, false, nil
	}
	pr, err := r.fs.Proc(pid)
	if err != nil {
		if outOfResources(err) {
			return Process{}, false, fmt.Errorf("read pid %d: %w", pid, err)
		}
		return Process{}, false, nil
	}
	st, err := pr.Stat()
	if err != nil && outOfResources(err) {
		return Process{}, false, fmt.Errorf("read pid %d: %w", pid, err)
	}
	if err != nil || st.State == "Z" || st.State == "X" {
		return Process{}, false, nil
	}
	p = Process{PID: pid, Comm: st.Comm, Start: st.Starttime}
	if slices.Contains(r.t.PIDs, pid) {
		if first, known := r.first[pid]; known && first != p.Start {
			return Process{}, false, nil // another process has the id now
		}
		r.first[pid] = p.Start
	}
	return p, true, nil
}
