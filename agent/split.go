package agent

import (
	"cmp"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
)

// windowProcesses returns the processes of a window's recording, those
// that waited longest on locks first (by pid among equals), at most max
// of them, and how many more it had.
func windowProcesses(rec *recording.Recording, max int) (procs []recording.Process, more int) {
	procs = slices.Clone(rec.Meta.Processes)
	if len(procs) == 0 && rec.Meta.PID != 0 {
		procs = []recording.Process{{PID: rec.Meta.PID, Comm: rec.Meta.Comm, Cmdline: rec.Meta.Cmdline, Exe: rec.Meta.Exe, BuildID: rec.Meta.BuildID, GoVersion: rec.Meta.GoVersion}}
	}
	waited := map[int]uint64{}
	for _, l := range rec.Locks {
		waited[lockPID(rec, l)] += l.WaitNS
	}
	slices.SortFunc(procs, func(a, b recording.Process) int {
		if c := cmp.Compare(waited[b.PID], waited[a.PID]); c != 0 {
			return c
		}
		return cmp.Compare(a.PID, b.PID)
	})
	if len(procs) > max {
		return procs[:max], len(procs) - max
	}
	return procs, 0
}

// lockPID returns the process of a lock entry (Meta.PID in recordings
// made before LockStat.PID existed).
func lockPID(rec *recording.Recording, l recording.LockStat) int {
	if l.PID == 0 {
		return rec.Meta.PID
	}
	return l.PID
}

// forProcess returns the part of a window's recording that belongs to
// process p, to analyze and export on its own: the metrics are per
// process (their pid label), and the analysis then counts a process's
// threads, not the whole target's. Samples, locks, events and thread
// series of other processes are left out; a wake-up from another process
// stays with the thread it woke. Parts not split by process (stacks, Go
// and Java data) are shared with rec, which must not be changed
// afterwards. A recording of one process is returned as it is.
func forProcess(rec *recording.Recording, p recording.Process) *recording.Recording {
	if len(rec.Meta.Processes) <= 1 {
		return rec
	}
	out := *rec
	m := &out.Meta
	m.PID, m.Comm, m.Cmdline, m.Exe, m.BuildID, m.GoVersion = p.PID, p.Comm, p.Cmdline, p.Exe, p.BuildID, p.GoVersion
	m.Processes = []recording.Process{p}
	out.Profiles = make(map[recording.View]*profile.Profile, len(rec.Profiles))
	for v, prof := range rec.Profiles {
		out.Profiles[v] = profileOf(prof, p.PID)
	}
	out.Locks = nil
	for _, l := range rec.Locks {
		if lockPID(rec, l) == p.PID {
			out.Locks = append(out.Locks, l)
		}
	}
	out.Events = nil
	for _, e := range rec.Events {
		if e.PID == p.PID || (e.Kind == recording.EventWakeup && e.PeerPID == p.PID) {
			out.Events = append(out.Events, e)
		}
	}
	if rec.Threads != nil {
		tl := *rec.Threads
		tl.Threads = nil
		for _, s := range rec.Threads.Threads {
			if s.PID == p.PID || s.PID == 0 && rec.Meta.PID == p.PID {
				tl.Threads = append(tl.Threads, s)
			}
		}
		out.Threads = &tl
	}
	return &out
}

// profileOf returns prof with only the samples of process pid; samples
// without a pid label (the Go runtime's profiles, of one process) are
// kept. The location and function tables are shared with prof.
func profileOf(prof *profile.Profile, pid int) *profile.Profile {
	out := &profile.Profile{
		SampleType:        prof.SampleType,
		DefaultSampleType: prof.DefaultSampleType,
		Mapping:           prof.Mapping,
		Location:          prof.Location,
		Function:          prof.Function,
		Comments:          prof.Comments,
		DocURL:            prof.DocURL,
		DropFrames:        prof.DropFrames,
		KeepFrames:        prof.KeepFrames,
		TimeNanos:         prof.TimeNanos,
		DurationNanos:     prof.DurationNanos,
		PeriodType:        prof.PeriodType,
		Period:            prof.Period,
	}
	for _, s := range prof.Sample {
		if v, ok := s.NumLabel[recording.LabelPID]; !ok || len(v) == 0 || v[0] == int64(pid) {
			out.Sample = append(out.Sample, s)
		}
	}
	return out
}
