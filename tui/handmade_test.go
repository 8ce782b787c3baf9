package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// The hand-made input of the golden renders: a C relay server whose nine
// workers spin on one busy-wait lock (the spin convoy of the design's first
// case) while two pool threads idle on a condition variable, recorded for
// ten seconds. The recording's timeline and the result agree with each
// other the way the analyzer's output agrees with its input.

const (
	hmPID     = 4242
	hmSamples = 100 // 10 s at the collector's 100 ms /proc interval
)

// hmThreads describes each thread of the hand-made process: its comm and
// a state pattern repeated over the samples.
var hmThreads = []struct {
	tid     int
	comm    string
	pattern string
	// ticks of user CPU per sample (USER_HZ 100, 100 ms: 10 = one CPU).
	ticks uint64
}{
	{4242, "relayd", "S", 0},
	{4243, "worker", "RRRRRRRRRS", 2},
	{4244, "worker", "RRRRRRRRS", 2},
	{4245, "worker", "RRRRRRRS", 2},
	{4246, "worker", "RRRRRRSRRRRRS", 2},
	{4247, "worker", "RRRRRSR", 2},
	{4248, "worker", "RRRRSRRRRRR", 2},
	{4249, "worker", "RRRSRR", 2},
	{4250, "worker", "RRSRRRRRRRRRRRR", 2},
	{4251, "worker", "RSRRRRRRRRRRRRRRRRRSSS", 1},
	{4252, "pool", "SSSSSSSSSD", 0},
	{4253, "pool", "S", 0},
}

func hmTimeline() *recording.Timeline {
	tl := &recording.Timeline{Interval: 100 * time.Millisecond, ClockTicks: 100, Samples: hmSamples}
	for _, th := range hmThreads {
		s := recording.ThreadSeries{TID: th.tid, Comm: th.comm}
		var states strings.Builder
		var ut, vol, invol uint64
		for i := 0; i < hmSamples; i++ {
			c := th.pattern[i%len(th.pattern)]
			states.WriteByte(c)
			ut += th.ticks
			if c == 'S' {
				vol++
			} else {
				invol += 3
			}
			s.UTime = append(s.UTime, ut)
			s.STime = append(s.STime, ut/10)
			s.Voluntary = append(s.Voluntary, vol)
			s.Involuntary = append(s.Involuntary, invol)
		}
		s.States = states.String()
		tl.Threads = append(tl.Threads, s)
	}
	return tl
}

func hmRecording() *recording.Recording {
	return &recording.Recording{
		Meta: recording.Meta{
			Version:  recording.FormatVersion,
			Source:   recording.SourceLive,
			PID:      hmPID,
			Comm:     "relayd",
			NumCPU:   2,
			Start:    time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC),
			Duration: 10 * time.Second,
			Probes:   []string{"futex", "sched", "oncpu", "io"},
			Counters: map[string]uint64{"ev_futex_wait": 120400, "ev_sched_switch": 63002, "drop_ringbuf_event": 0, "drop_stack_miss": 3},
		},
		Threads: hmTimeline(),
	}
}

func hmFrame(fn, file string, line int, module string) recording.Frame {
	return recording.Frame{Func: fn, File: file, Line: line, Module: module}
}

var (
	hmSpinStack = []recording.Frame{
		hmFrame("spin_acquire", "/src/relayd/lock.c", 41, "relayd"),
		hmFrame("relay_lock", "/src/relayd/relay.c", 88, "relayd"),
		hmFrame("on_incoming_message", "/src/relayd/relay.c", 130, "relayd"),
		hmFrame("worker_main", "/src/relayd/worker.c", 57, "relayd"),
		hmFrame("start_thread", "", 0, "libc.so.6"),
		hmFrame("clone3", "", 0, "libc.so.6"),
	}
	hmStatsStack = []recording.Frame{
		hmFrame("__futex_abstimed_wait_common", "", 0, "libc.so.6"),
		hmFrame("___pthread_mutex_lock", "", 0, "libc.so.6"),
		hmFrame("stats_add", "/src/relayd/stats.c", 22, "relayd"),
		hmFrame("on_incoming_message", "/src/relayd/relay.c", 141, "relayd"),
		hmFrame("worker_main", "/src/relayd/worker.c", 57, "relayd"),
	}
	hmStatsWaker = []recording.Frame{
		hmFrame("__lll_lock_wake", "", 0, "libc.so.6"),
		hmFrame("___pthread_mutex_unlock", "", 0, "libc.so.6"),
		hmFrame("stats_add", "/src/relayd/stats.c", 25, "relayd"),
		hmFrame("on_incoming_message", "/src/relayd/relay.c", 141, "relayd"),
	}
	hmIdleStack = []recording.Frame{
		hmFrame("__futex_abstimed_wait_common", "", 0, "libc.so.6"),
		hmFrame("pthread_cond_wait@@GLIBC_2.3.2", "", 0, "libc.so.6"),
		hmFrame("pool_wait", "/src/relayd/pool.c", 63, "relayd"),
		hmFrame("pool_main", "/src/relayd/pool.c", 80, "relayd"),
	}
)

func hmPoint(stack []recording.Frame, idx int) analyzer.ProgramPoint {
	f := stack[idx]
	return analyzer.ProgramPoint{Function: f.Func, File: f.File, Line: f.Line, Stack: stack, PointIndex: idx}
}

// hmHist is a log2 wait histogram peaking around 16–64 µs with a tail to
// 4 ms.
func hmHist() []uint64 {
	h := make([]uint64, 32)
	for i, n := range map[int]uint64{10: 120, 11: 410, 12: 980, 13: 2210, 14: 3120, 15: 2630, 16: 1190, 17: 380, 18: 96, 19: 31, 20: 9, 21: 2} {
		h[i] = n
	}
	return h
}

func hmResult() *analyzer.Result {
	spinPt := hmPoint(hmSpinStack, 1)
	statsPt := hmPoint(hmStatsStack, 2)
	statsWaker := hmPoint(hmStatsWaker, 2)
	idlePt := hmPoint(hmIdleStack, 2)
	res := &analyzer.Result{
		Schema: analyzer.SchemaVersion,
		Target: analyzer.Target{PID: hmPID, Comm: "relayd", Source: recording.SourceLive, Duration: 10 * time.Second,
			Population: 12, Unit: "threads", NumCPU: 2},
		Findings: []analyzer.Finding{
			{
				Kind:         analyzer.KindSpinConvoy,
				Headline:     "9 of 12 threads spin at ONE program point: busy-wait in relay_lock (relay.c:88)",
				Point:        spinPt,
				Lock:         &analyzer.LockID{Address: "0x55d0c2a4e0c0", Name: "relay_table+0x40 (relayd)"},
				Participants: 9, Population: 12, Unit: "threads",
				WaitSeconds: 0.84, WaitShare: 0.0093, CPUSeconds: 16.8,
				Evidence: []analyzer.Evidence{
					{Source: "oncpu", Text: "97% of 1783 on-CPU samples of the 9 threads are in spin_acquire called from relay_lock (relay.c:88)"},
					{Source: "proc", Text: "the 9 threads were runnable in 88% of /proc samples while the process had 2 CPUs: 4.5 runnable threads per CPU"},
					{Source: "sched", Text: "41230 involuntary switches (preempted while spinning); no futex waits at this point"},
					{Source: "disasm", Text: "spin_acquire loops on a cmpxchg with a pause instruction and never calls futex"},
				},
				Confidence: analyzer.ConfidenceHigh,
				Suggestion: analyzer.Suggestion{
					Action:       "Replace the busy-wait in spin_acquire with a parking lock (pthread_mutex_t, or a futex wait after a short spin).",
					Reasoning:    "There are more spinning threads than CPUs, so the holder is often preempted while the spinners burn its CPU time; spinning only pays when the holder can never be descheduled.",
					ExpectedGain: "≈17 CPU seconds per 10 s freed; throughput should stop collapsing above 2 threads",
				},
				Score: 17.6,
			},
			{
				Kind:     analyzer.KindLockConvoy,
				Headline: "6 of 12 threads wait at ONE program point: lock in stats_add (stats.c:22)",
				Point:    statsPt,
				Lock: &analyzer.LockID{Address: "0x55d0c2a4f200", Name: "global_stats+0x0 (relayd)",
					Words: []string{"0x55d0c2a4f200"}, Owner: 4247},
				Releaser:     &statsWaker,
				Participants: 6, Population: 12, Unit: "threads",
				WaitSeconds: 1.92, WaitShare: 0.032, CPUSeconds: 0.11,
				Evidence: []analyzer.Evidence{
					{Source: "futex", Text: "11178 waits by 6 distinct threads on global_stats (0x55d0c2a4f200), 1.92 s blocked, p99 262µs"},
					{Source: "futex", Text: "hold times are short: wakes follow waits within 40 µs at p50"},
				},
				Confidence: analyzer.ConfidenceMedium,
				Suggestion: analyzer.Suggestion{
					Action:       "Stripe the lock: a fixed array of 8 locks indexed by a hash of the relay id.",
					Reasoning:    "Many distinct threads take turns on one lock for short critical sections: the cost comes from sharing, not from the work done under the lock.",
					ExpectedGain: "≈6× less waiting with 8 stripes",
				},
				Score: 2.03,
			},
		},
		Idle: []analyzer.IdleGroup{
			{Reason: "idle worker pool waiting on a condition variable", Point: idlePt, Count: 2, Unit: "threads", WaitSeconds: 19.6},
		},
		Points: []analyzer.PointRow{
			{Point: spinPt, Count: 9, Unit: "threads", States: map[string]int{"runnable": 8, "sleeping": 1}, WaitSeconds: 0.84, CPUSeconds: 16.8},
			{Point: statsPt, Count: 6, Unit: "threads", States: map[string]int{"sleeping": 5, "runnable": 1}, WaitSeconds: 1.92, CPUSeconds: 0.11},
			{Point: idlePt, Count: 2, Unit: "threads", States: map[string]int{"sleeping": 2}, WaitSeconds: 19.6, Idle: true},
		},
		Locks: []analyzer.LockRow{
			{Lock: analyzer.LockID{Address: "0x55d0c2a4f200", Name: "global_stats+0x0 (relayd)", Owner: 4247},
				Waits: 11178, DistinctWaiters: 6, WaitSeconds: 1.92,
				P50: 24 * time.Microsecond, P99: 262 * time.Microsecond, Max: 3100 * time.Microsecond,
				Hist: hmHist(), Waiter: &statsPt, Waker: &statsWaker},
			{Lock: analyzer.LockID{Address: "0x55d0c2a4e800", Name: "pool_cond+0x8 (relayd)", Words: []string{"0x55d0c2a4e800", "0x55d0c2a4e804", "0x55d0c2a4e7d8"}},
				Waits: 40, DistinctWaiters: 2, WaitSeconds: 19.6,
				P50: 500 * time.Millisecond, P99: 1000 * time.Millisecond, Max: 1000 * time.Millisecond,
				Hist: []uint64{28: 21, 29: 19}, Waiter: &idlePt, Idle: true},
		},
		Notes: []string{"io probe: no I/O syscalls of at least 10µs were seen"},
	}
	tl := hmTimeline()
	for _, u := range tl.Usage(0, hmSamples-1) {
		var states string
		for _, s := range tl.Threads {
			if s.TID == u.TID {
				states = s.States
			}
		}
		res.Threads = append(res.Threads, analyzer.ThreadRow{
			TID: u.TID, Comm: u.Comm, States: states,
			CPUSeconds: tl.Seconds(u.Ticks()), UserSeconds: tl.Seconds(u.UTime), SysSeconds: tl.Seconds(u.STime),
			Voluntary: u.Voluntary, Involuntary: u.Involuntary,
		})
	}
	return res
}

// hmManyPoints returns a result with n program points, to test scrolling.
func hmManyPoints(n int) *analyzer.Result {
	res := hmResult()
	res.Points = nil
	for i := 0; i < n; i++ {
		st := []recording.Frame{hmFrame(fmt.Sprintf("handler_%02d", i), "/src/relayd/handlers.c", 100+i, "relayd")}
		res.Points = append(res.Points, analyzer.PointRow{
			Point: hmPoint(st, 0), Count: n - i, Unit: "threads",
			States: map[string]int{"sleeping": n - i}, WaitSeconds: float64(i) / 10,
		})
	}
	return res
}
