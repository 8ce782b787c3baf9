// Package recording is the one model that both the live path (collector)
// and the offline path (Go pprof dumps) produce, and that the analyzer and
// the TUI consume.
//
// On disk a recording is a directory of plain pprof files (one per view, each
// opening in `go tool pprof` as is) plus small JSON files: meta.json,
// locks.json, threads.json, stacks.json, events.jsonl.gz and the goroutine
// dumps as text. Write and Read convert between the directory and the
// in-memory Recording.
package recording

import (
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/javadump"
)

// FormatVersion is the version of the on-disk layout written into meta.json.
// Readers refuse a recording with a higher major version.
const FormatVersion = 1

// View names one pprof profile of a recording. The view is also the file
// name stem: view "futex-wait" is stored as futex-wait.pb.gz.
type View string

// Views recorded by the eBPF collector. Sample types and labels of each are
// documented beside the constant; the collector writes them and the analyzer
// relies on them.
const (
	// ViewFutexWait: futex waits per (process, thread, lock address, user
	// stack). Values: [waits/count, delay/nanoseconds]. Labels: pid (num),
	// tid (num), lock (string, "0x…", an address in process pid),
	// lock_key (string, the lock's identity across the recording, see
	// LabelLockKey), lock_name (string, optional), owner (num, glibc
	// owner tid seen when the wait blocked, optional), op (string: wait,
	// wait_bitset, lock_pi, lock_pi2, wait_requeue_pi, futex_wait,
	// futex_waitv). A wait is seen when its thread goes to sleep in it,
	// and its delay counted from then to the thread's running again; a
	// wait that returned at once (EAGAIN) is not seen (older recordings
	// counted it with delay 0). Only
	// waits of at least the stack threshold carry their real stack;
	// shorter waits appear under a single "[short waits]" frame, and a
	// stack that could not be taken under "[stack lost]". A wait still in
	// progress at the end of the recording (or window) is one sample
	// with the label in_progress=1, its delay counted up to the end (from
	// the start of the recording or window if it began before). Its stack
	// is unwound by the collector from a copy of the waiting thread's
	// stack (the kernel's frame-pointer walk stops at the first function
	// built without frame pointers; for a wait already in
	// progress when the recording started, from the registers /proc
	// shows, which can end the walk early); when no copy could be taken
	// the sample has the single frame "[in progress]".
	ViewFutexWait View = "futex-wait"
	// ViewFutexWake: futex wakes per (process, thread, lock address, waker
	// stack). Values: [wakes/count, woken/count]. Labels: pid, tid, lock,
	// lock_key, lock_name.
	// A wake is seen when it wakes a sleeping thread, once per thread;
	// older recordings counted every call and aggregated the wakes that
	// woke nobody under a "[woke nobody]" frame.
	ViewFutexWake View = "futex-wake"
	// ViewOffCPU: time off CPU per (thread, state left in, stack).
	// Values: [switches/count, offcpu/nanoseconds, runqueue/nanoseconds]
	// — the third is the part of the off-CPU time spent runnable, waiting
	// for a CPU. Labels: pid, tid, state (runnable, sleeping,
	// uninterruptible, other).
	ViewOffCPU View = "offcpu"
	// ViewOnCPU: cpu-clock samples per (thread, user+kernel stack).
	// Values: [samples/count, cpu/nanoseconds]. Labels: pid, tid.
	ViewOnCPU View = "oncpu"
	// ViewIO: I/O syscalls per (thread, syscall, stack).
	// Values: [calls/count, latency/nanoseconds]. Labels: pid, tid,
	// syscall. A call is seen when its thread goes to sleep in it, and its
	// latency counted from then to the thread's running again, once per
	// sleep; a call that never slept is not seen (its CPU time shows in
	// ViewOnCPU; older recordings counted it with latency 0).
	// Calls shorter than the I/O threshold appear under "[short calls]".
	// A call still in progress at the end is one sample under
	// "[in progress]" with in_progress=1, as in ViewFutexWait.
	ViewIO View = "io"
	// ViewWakes: wake edges waker → wakee with the waker's stack.
	// Values: [wakes/count]. Labels: pid and tid (the waker's; absent when
	// the waker was not a task), wakee_pid and wakee (num), context
	// (string: task, hardirq, softirq, idle). Wakes from interrupts, the
	// idle task or a process outside the target carry the marker frames
	// "[hardirq]", "[softirq]", "[idle]" or "[other process]" instead of a
	// stack.
	//
	// Every live view: a sample whose thread has exited may be folded with
	// those of other exited threads into one (so that short-lived threads
	// do not grow a recording without bound): it has no tid label (no
	// wakee label, in ViewWakes, when the wakee was folded) and a threads
	// label giving how many exited threads it sums.
	ViewWakes View = "wakes"
)

// Views of Go runtime profiles, fetched live or read from files. They are
// stored exactly as the runtime wrote them, except that a live recording's
// mutex and block views are deltas over the recording: in a snapshot of a
// running session (a window), deltas between cumulative profiles fetched
// every few seconds, and the CPU view the profile parts completed so far.
// Each covers the span its TimeNanos and DurationNanos give, which can
// differ from Meta.Start and Meta.Duration by up to the fetch period (a
// Meta.Warnings entry says so when it differs by more than a quarter).
const (
	// ViewGoMutex: runtime mutex profile (stacks end at Unlock).
	ViewGoMutex View = "go-mutex"
	// ViewGoBlock: runtime block profile (stacks where goroutines waited).
	ViewGoBlock View = "go-block"
	// ViewGoCPU: runtime CPU profile.
	ViewGoCPU View = "go-cpu"
	// ViewGoGoroutine: goroutine profile in protobuf form (no wait states).
	ViewGoGoroutine View = "go-goroutine"
	// ViewGoLockWaits: goroutine waits for a sync.Mutex or sync.RWMutex
	// measured by the eBPF collector's uprobes on the runtime's lock slow
	// paths (a live Go target without a pprof endpoint; GoData.Uprobes
	// names the functions), per (process, waiter stack). Values:
	// [contentions/count, delay/nanoseconds], as in a block profile, whose
	// meaning they share: each sample is where goroutines waited for a
	// lock, the leaf the slow path (internal/sync.(*Mutex).lockSlow,
	// sync.runtime_SemacquireRWMutexR, sync.runtime_SemacquireRWMutex),
	// every parked acquisition counted (no sampling rate). Labels: pid,
	// lock (the lock's semaphore word; with the entry/return probes the
	// *Mutex lockSlow ran on; "0x…" in process pid).
	ViewGoLockWaits View = "go-lockwaits"
)

// LiveViews lists the views the eBPF collector produces, in display order.
var LiveViews = []View{ViewFutexWait, ViewFutexWake, ViewOffCPU, ViewOnCPU, ViewIO, ViewWakes}

// GoViews lists the Go runtime profile views, in display order.
var GoViews = []View{ViewGoMutex, ViewGoBlock, ViewGoLockWaits, ViewGoCPU, ViewGoGoroutine}

// Label keys used on samples of the live views.
const (
	LabelPID      = "pid"       // num: process (thread group id) of tid; absent in recordings made before it existed: Meta.PID
	LabelTID      = "tid"       // num: thread id (kernel pid of the task)
	LabelLock     = "lock"      // string: futex address in process pid, "0x%x"
	LabelLockName = "lock_name" // string: data symbol containing the lock, "sym+0x10 (module)", or its shared mapping
	// LabelLockKey (string) identifies the lock across processes:
	// LockStat.Key. Samples of one lock in several processes (a futex in
	// shared memory) share it; without it, (pid, lock) is the identity.
	LabelLockKey = "lock_key"
	// LabelThreads (num) is the number of exited threads a folded sample
	// sums; such a sample has no tid label.
	LabelThreads  = "threads"
	LabelWakeePID = "wakee_pid" // num: process of the woken thread (ViewWakes)
	LabelOwner    = "owner"     // num: owner tid read beside a glibc mutex word
	LabelOp       = "op"        // string: futex operation
	LabelState    = "state"     // string: thread state left in (ViewOffCPU)
	LabelSyscall  = "syscall"   // string: syscall name (ViewIO)
	LabelWakee    = "wakee"     // num: woken thread (ViewWakes)
	LabelContext  = "context"   // string: waker context (ViewWakes)
	// LabelInProgress (num, always 1) marks a wait or I/O call still in
	// progress at the end of the recording (ViewFutexWait, ViewIO).
	LabelInProgress = "in_progress"
)

// Thread states used in LabelState and in timelines.
const (
	StateRunning         = "running"
	StateRunnable        = "runnable"
	StateSleeping        = "sleeping"
	StateUninterruptible = "uninterruptible"
	StateOther           = "other"
)

// Recording is everything known about one target over one interval.
// Any part may be missing: an offline analysis of a single mutex profile has
// only Profiles[ViewGoMutex]; a live recording without --pprof has no Go
// views.
type Recording struct {
	Meta Meta
	// Profiles holds one pprof profile per view present.
	Profiles map[View]*profile.Profile
	// Goroutines holds goroutine dumps (debug=1 or debug=2 text), oldest
	// first.
	Goroutines []*goprof.Dump
	// JavaDumps holds Java thread dumps (jcmd Thread.print, jstack),
	// oldest first.
	JavaDumps []*javadump.Dump
	// JITCode holds the machine code of the JIT-compiled functions that
	// took the most on-CPU samples, copied from the target at the end of
	// the recording: code generated at run time is in no file the
	// analyzer could read to confirm a busy-wait.
	JITCode []CodeBlob
	// NativeCode holds the machine code of the native functions that
	// took the most on-CPU samples (code.go); nil in a recording made
	// before it was copied.
	NativeCode []NativeCode
	// Locks holds per-lock statistics aggregated in the kernel over every
	// wait, including those too short to carry a stack.
	Locks []LockStat
	// Threads is the per-thread /proc timeline.
	Threads *Timeline
	// Events is the bounded, sampled log of timestamped waits, wakes, I/O
	// and scheduler intervals, ordered by time.
	Events []Event
	// Stacks holds the symbolized stacks that events refer to by index.
	Stacks []Stack
}

// Meta describes the target, the recording and its completeness.
type Meta struct {
	Version int `json:"version"`
	// Source says how the recording was made: "live" (collector) or
	// "files" (Go profiles given to analyze).
	Source string `json:"source"`
	// Inputs lists the files an offline recording was built from, with the
	// kind recognised in each.
	Inputs []Input `json:"inputs,omitempty"`

	// PID, Comm, Cmdline, Exe and BuildID describe the target process,
	// the first of Processes when several were recorded.
	PID     int      `json:"pid,omitempty"`
	Comm    string   `json:"comm,omitempty"`
	Cmdline []string `json:"cmdline,omitempty"`
	Exe     string   `json:"exe,omitempty"`
	BuildID string   `json:"build_id,omitempty"`
	Kernel  string   `json:"kernel,omitempty"`
	// NumCPU is the number of CPUs online on the machine that recorded.
	NumCPU int `json:"num_cpu,omitempty"`
	// CPUsAllowed is how many CPUs the target may run on (its affinity,
	// Cpus_allowed_list of /proc/PID/status), 0 when unknown. It is less
	// than NumCPU under taskset or a cpuset.
	CPUsAllowed int `json:"cpus_allowed,omitempty"`
	// GoVersion of the target when known (from its build info).
	GoVersion string `json:"go_version,omitempty"`
	// GoData says, for a live recording of a Go target, where its runtime
	// profiles came from and which of them the recording holds; nil for
	// other targets and in recordings made before it existed.
	GoData *GoData `json:"go_data,omitempty"`
	// Target says how the processes were selected; absent in recordings
	// of one process by pid made before it existed.
	Target *Target `json:"target,omitempty"`
	// Processes lists every process recorded, with when it joined and
	// left the recording; absent in recordings made before it existed
	// (one process: PID).
	Processes []Process `json:"processes,omitempty"`

	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`

	// Probes lists what was attached, e.g. "futex", "sched", "oncpu", "io".
	Probes []string `json:"probes,omitempty"`
	// Settings holds thresholds and rates used, e.g. "stack_threshold":
	// "10µs", "oncpu_hz": "99".
	Settings map[string]string `json:"settings,omitempty"`
	// Counters holds every event, drop and miss counter, always written
	// even when zero, e.g. "ev_futex_wait", "drop_ringbuf_event",
	// "drop_stack_user", "info_window_skipped" (CounterTotals sums them).
	Counters map[string]uint64 `json:"counters,omitempty"`
	// Partial is true when the recording was cut short (target exited,
	// signal, error) and holds less than was asked for.
	Partial bool `json:"partial,omitempty"`
	// PartialReason says why Partial is set.
	PartialReason string `json:"partial_reason,omitempty"`
	// Warnings are human-readable notes about missing data ("mutex profile
	// empty: the program never called runtime.SetMutexProfileFraction").
	Warnings []string `json:"warnings,omitempty"`
	// Files is the recording's manifest: every other file Write put in
	// the directory, with its size in bytes. Read refuses a recording
	// whose listed files are missing or of another size, so a damaged
	// recording is never read as one with nothing in it. Write sets it;
	// nil in a recording written before the manifest existed.
	Files map[string]int64 `json:"files"`
}

// Prefixes of the counter names in Meta.Counters: "ev_" counters count
// events the probes saw, "drop_" counters count data lost (events, stacks,
// map entries), "sampled_" counters count event records and stack windows
// the rate limits left out by design (the aggregates still hold those
// events), "info_" counters are none of these (how often a cache answered,
// windows skipped because their stack was already named).
const (
	CounterEventPrefix   = "ev_"
	CounterDropPrefix    = "drop_"
	CounterSampledPrefix = "sampled_"
	CounterInfoPrefix    = "info_"
)

// SampledOut sums the sampled_* counters of m.Counters.
func (m Meta) SampledOut() uint64 {
	var n uint64
	for k, v := range m.Counters {
		if strings.HasPrefix(k, CounterSampledPrefix) {
			n += v
		}
	}
	return n
}

// CounterTotals sums the event counters (ev_*) and the drop counters
// (drop_*) of m.Counters; sampled_* and info_* counters are in neither sum.
func (m Meta) CounterTotals() (events, drops uint64) {
	for k, v := range m.Counters {
		switch {
		case strings.HasPrefix(k, CounterEventPrefix):
			events += v
		case strings.HasPrefix(k, CounterDropPrefix):
			drops += v
		}
	}
	return events, drops
}

// Target is how a live recording chose its processes.
type Target struct {
	// PIDs are the processes named with -p.
	PIDs []int `json:"pids,omitempty"`
	// Comm is the process name of --comm: every process with that name,
	// including those started while recording.
	Comm string `json:"comm,omitempty"`
	// Cgroup is the cgroup v2 directory of --cgroup: every process in it
	// or its descendants.
	Cgroup string `json:"cgroup,omitempty"`
}

// Process is one process of a live recording.
type Process struct {
	PID       int      `json:"pid"`
	Comm      string   `json:"comm,omitempty"`
	Cmdline   []string `json:"cmdline,omitempty"`
	Exe       string   `json:"exe,omitempty"`
	BuildID   string   `json:"build_id,omitempty"`
	GoVersion string   `json:"go_version,omitempty"`
	// Joined is when the process joined the recording, since Meta.Start
	// (0: from the start).
	Joined time.Duration `json:"joined_ns,omitempty"`
	// Left is when it left (it exited, or exec'd out of --comm or
	// --cgroup), since Meta.Start; 0 when it stayed to the end.
	Left time.Duration `json:"left_ns,omitempty"`
	// Exited is set when it left because it exited.
	Exited bool `json:"exited,omitempty"`
}

// Input is one file an offline recording was built from.
type Input struct {
	Path string      `json:"path"`
	Kind goprof.Kind `json:"kind"`
}

// LockStat is the in-kernel aggregate of every futex wait and wake on one
// address. Durations are nanoseconds.
type LockStat struct {
	Addr uint64 `json:"addr"`
	// PID is the process the address belongs to (0 in recordings made
	// before it existed: Meta.PID).
	PID int `json:"pid,omitempty"`
	// Name is the data symbol containing the address, "sym+0x1b0 (module)",
	// the shared mapping it lies in ("/dev/shm/x+0x40"), or "" when the
	// address is on a heap or stack.
	Name string `json:"name,omitempty"`
	// Shared is the identity of a futex word in memory shared between
	// processes (waited on and woken without FUTEX_PRIVATE_FLAG, in a
	// MAP_SHARED mapping): the same in every process that maps it, so
	// the entries of several processes with the same Shared are one lock.
	// Nil for a process-private word.
	Shared *SharedLock `json:"shared,omitempty"`
	// Key identifies the lock across the recording (see LockKey); the
	// samples of the live views carry it as the lock_key label.
	Key string `json:"key,omitempty"`
	// Waits counts FUTEX_WAIT-class calls seen; Blocked counts those
	// that actually slept. The probes see a wait when its thread goes to
	// sleep (no syscall is hooked), so in recordings they make the two
	// are equal: a wait that returned EAGAIN at once is not seen.
	// Recordings of older versions, which hooked the syscalls' exits,
	// counted those in Waits.
	Waits   uint64 `json:"waits"`
	Blocked uint64 `json:"blocked"`
	// Timeouts counts waits that ended with no futex wake: by their
	// timeout or a signal (older versions: ETIMEDOUT alone). A wait
	// whose wake the probes did not see at all counts as a timeout too
	// when the scheduler's run-delay record gives its run-queue time
	// (Meta.Counters' info_wake_sched_futex); without that record it is
	// in neither Timeouts nor the waits woken by a call, and
	// drop_wake_unseen counts it, for every lock together (absent in
	// recordings made before the counter existed).
	Timeouts uint64 `json:"timeouts,omitempty"`
	WaitNS   uint64 `json:"wait_ns"`
	// RunqNS is the part of WaitNS the woken waiters spent runnable,
	// waiting for a CPU, from their wake to their switch-in (0 in
	// recordings made before it existed; for a wait whose wake was not
	// seen, from its enqueue, as the scheduler records it, or nothing
	// without that record).
	RunqNS uint64 `json:"runq_ns,omitempty"`
	MaxNS  uint64 `json:"max_ns"`
	// Hist is a log2 histogram of wait durations: Hist[i] counts waits with
	// 2^i <= ns < 2^(i+1) (Hist[0] also holds 0 and 1 ns).
	Hist []uint64 `json:"hist"`
	// Wakes counts FUTEX_WAKE-class wakes on this address and Woken the
	// threads they woke. A wake is seen when it wakes a sleeping thread,
	// once per thread woken, so the two are equal; older versions counted
	// every call in Wakes, those that woke nobody included.
	Wakes uint64 `json:"wakes"`
	Woken uint64 `json:"woken"`
	// Waiters lists distinct waiting thread ids (bounded; WaitersTruncated
	// says when more were seen).
	Waiters          []int `json:"waiters,omitempty"`
	WaitersTruncated bool  `json:"waiters_truncated,omitempty"`
	// WaitersSeen counts the distinct threads that waited, including
	// exited threads whose ids were folded away (0 in recordings made
	// before it existed: len(Waiters)).
	WaitersSeen int `json:"waiters_seen,omitempty"`
	// Wakers lists distinct waking thread ids (bounded).
	Wakers []int `json:"wakers,omitempty"`
	// WakersSeen counts the distinct threads that woke it, as WaitersSeen.
	WakersSeen int `json:"wakers_seen,omitempty"`
	// Owners counts, per owner tid read beside the futex word at wait time,
	// how many waits saw that owner (glibc mutexes only).
	Owners map[int]uint64 `json:"owners,omitempty"`
	// InProgress counts the waits, included in Waits, Blocked, WaitNS,
	// MaxNS and Hist, that were still in progress at the end of the
	// recording: their time is counted up to the end.
	InProgress uint64 `json:"in_progress,omitempty"`
}

// SharedLock is the identity of a futex word in shared memory: the
// mapping's device and inode and the word's offset in it, as
// /proc/PID/maps gives them.
type SharedLock struct {
	Dev    string `json:"dev"`
	Inode  uint64 `json:"inode"`
	Offset uint64 `json:"offset"`
	// Path is the mapping's path ("/dev/shm/pool", "/dev/zero (deleted)"
	// for shared anonymous memory).
	Path string `json:"path,omitempty"`
}

// Name names the word by its mapping: "/dev/shm/pool+0x40".
func (s *SharedLock) Name() string {
	p := s.Path
	if p == "" {
		p = "[shared " + s.Dev + " " + strconv.FormatUint(s.Inode, 10) + "]"
	}
	return p + "+0x" + strconv.FormatUint(s.Offset, 16)
}

// LockKey is the identity of a lock across a recording: "shared:DEV:INODE:OFFSET"
// for a word in shared memory, "PID:0xADDR" for a process-private one.
func LockKey(pid int, addr uint64, shared *SharedLock) string {
	if shared != nil {
		return "shared:" + shared.Dev + ":" + strconv.FormatUint(shared.Inode, 10) + ":0x" + strconv.FormatUint(shared.Offset, 16)
	}
	return strconv.Itoa(pid) + ":0x" + strconv.FormatUint(addr, 16)
}

// Timeline is the per-thread /proc sampling of the target.
type Timeline struct {
	// Interval between samples.
	Interval time.Duration `json:"interval_ns"`
	// ClockTicks is the unit of UTime and STime (USER_HZ, usually 100).
	ClockTicks int `json:"clock_ticks"`
	// Samples is the number of sampling instants; series index i is taken
	// at Start + i*Interval relative to Meta.Start.
	Samples int `json:"samples"`
	// Threads holds one series per thread seen.
	Threads []ThreadSeries `json:"threads"`
	// DroppedThreads counts threads left out to keep the timeline
	// bounded: series of exited threads beyond the timeline's budget,
	// oldest first (their data stays in the probe views).
	DroppedThreads int `json:"dropped_threads,omitempty"`
}

// ThreadSeries is one thread's /proc samples. Slices are indexed by sample
// instant minus First; a thread that did not exist yet or had exited has no
// entry there.
type ThreadSeries struct {
	// PID is the thread's process (0 in recordings made before it
	// existed: Meta.PID).
	PID  int    `json:"pid,omitempty"`
	TID  int    `json:"tid"`
	Comm string `json:"comm"`
	// First is the index of the first sample instant this thread was seen.
	First int `json:"first"`
	// States holds one /proc state letter per sample (R, S, D, T, Z, I, …).
	States string `json:"states"`
	// UTime and STime are cumulative clock ticks at each sample.
	UTime []uint64 `json:"utime"`
	STime []uint64 `json:"stime"`
	// Voluntary and Involuntary are cumulative context switch counts.
	Voluntary   []uint64 `json:"voluntary"`
	Involuntary []uint64 `json:"involuntary"`
}

// EventKind names the kind of an Event.
type EventKind string

// Event kinds written by the collector.
const (
	// EventWait: a futex wait interval, from its thread's going to sleep
	// in it to its running again. TID waited on Addr; Peer is the owner
	// tid read when it blocked (0 when unknown).
	EventWait EventKind = "wait"
	// EventWake: a futex wake. TID woke Peer threads waiting on Addr (one
	// event per thread woken, Peer 1; older recordings one per call).
	EventWake EventKind = "wake"
	// EventIO: an I/O syscall interval; Syscall names it.
	EventIO EventKind = "io"
	// EventRunq: TID was runnable but not running (preempted or woken and
	// waiting for a CPU) for Dur.
	EventRunq EventKind = "runq"
	// EventDSleep: TID slept uninterruptibly (D state) for Dur.
	EventDSleep EventKind = "dsleep"
	// EventWakeup: TID (the waker) woke Peer (sched_waking).
	EventWakeup EventKind = "wakeup"
	// EventSleep: TID slept in the kernel for Dur from T, at least the
	// stack threshold: uninterruptibly (a lock the kernel holds: the mmap
	// lock, an inode's lock, a page being read), or inside a system call
	// that is not a futex (a file lock, a pipe, a socket, a sleep).
	// State is uninterruptible or sleeping; Syscall the call ("" outside
	// one: a page fault); Obj the file the call named (nil when it takes
	// none); Peer and PeerPID the thread and process whose wake ended
	// the sleep (0 when the wake came from an interrupt or was not seen).
	// Stack holds the kernel frames the thread slept on (Frame.Kernel,
	// named from /proc/kallsyms when recorded), leaf first, then its
	// user frames. Absent from recordings made before it existed.
	EventSleep EventKind = "sleep"
	// EventTryFail: TID's non-blocking lock attempt failed at T because
	// another held the lock: fcntl F_SETLK or F_OFD_SETLK, or flock with
	// LOCK_NB, returning EAGAIN or EACCES (Obj.Err). Syscall names the
	// call, Obj its file and range, Stack the user stack of the attempt.
	// Meta.Counters' ev_lock_try_fail counts every such failure, the log
	// holds them as the rate limit allows.
	EventTryFail EventKind = "tryfail"
)

// Object is the object of a system call a thread slept in or failed on:
// the file behind its file descriptor, and for a record lock the range
// asked for.
type Object struct {
	// FD is the call's descriptor in process PID.
	FD int `json:"fd"`
	// Dev and Inode identify the file: Dev "MAJOR:MINOR" in hex, as in
	// /proc/PID/maps and /proc/locks ("08:01"; "00:0e" for a pipe, whose
	// Inode is the pipe's). Both zero when the descriptor was not open.
	Dev   string `json:"dev,omitempty"`
	Inode uint64 `json:"inode,omitempty"`
	// Path is the file's path as /proc/PID/fd named it while recording
	// ("pipe:[1234]" for a pipe), "" when it could not be read (the
	// descriptor closed, the process gone): Dev and Inode still name it.
	Path string `json:"path,omitempty"`
	// Cmd is the call's command: an fcntl lock command (F_SETLK,
	// F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW) or a flock operation
	// ("LOCK_EX", "LOCK_EX|LOCK_NB"); "" for other calls.
	Cmd string `json:"cmd,omitempty"`
	// Range is the byte range of an fcntl record lock.
	Range *LockRange `json:"range,omitempty"`
	// Err is the error a failed attempt returned (EventTryFail):
	// "EAGAIN" or "EACCES".
	Err string `json:"err,omitempty"`
}

// Key identifies the file across a recording and across runs on one
// machine: "file:DEV:INODE", "" when the inode is unknown.
func (o *Object) Key() string {
	if o == nil || o.Inode == 0 {
		return ""
	}
	return "file:" + o.Dev + ":" + strconv.FormatUint(o.Inode, 10)
}

// LockRange is the struct flock of an fcntl record lock command.
type LockRange struct {
	// Type is F_RDLCK, F_WRLCK or F_UNLCK.
	Type string `json:"type"`
	// Whence is SEEK_SET, SEEK_CUR or SEEK_END: what Start counts from.
	Whence string `json:"whence"`
	Start  int64  `json:"start"`
	// Len is the range's length, 0 for "to the end of the file".
	Len int64 `json:"len"`
}

// Event is one entry of the event log. Times are nanoseconds since
// Meta.Start.
type Event struct {
	Kind EventKind `json:"k"`
	T    int64     `json:"t"`
	Dur  int64     `json:"d,omitempty"`
	// PID is the process of TID (0 in recordings made before it existed:
	// Meta.PID, and for an EventWakeup whose waker was not a task).
	PID int `json:"pid,omitempty"`
	TID int `json:"tid"`
	// PeerPID is the process of Peer in an EventWakeup.
	PeerPID int    `json:"peer_pid,omitempty"`
	Peer    int    `json:"peer,omitempty"`
	Addr    uint64 `json:"addr,omitempty"`
	Syscall string `json:"sys,omitempty"`
	// Stack is an index into Recording.Stacks, or -1 when none was taken.
	Stack int `json:"stack"`
	// State is the state an EventSleep left the CPU in (StateSleeping,
	// StateUninterruptible).
	State string `json:"state,omitempty"`
	// Obj is the object of an EventSleep's or EventTryFail's call.
	Obj *Object `json:"obj,omitempty"`
}

// End returns the time the event's interval ends.
func (e Event) End() int64 { return e.T + e.Dur }

// Frame is one symbolized stack frame.
type Frame struct {
	// Func is the function name; for an unresolved frame it is
	// "module+0xoffset".
	Func string `json:"func"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Module is the base name of the object the address lies in;
	// ModuleJava for Java code.
	Module string `json:"module,omitempty"`
	Addr   uint64 `json:"addr,omitempty"`
	// Inlined is true for a frame expanded from inline data (not the
	// physical frame at Addr).
	Inlined bool `json:"inlined,omitempty"`
	// Kernel marks kernel frames.
	Kernel bool `json:"kernel,omitempty"`
}

// CodeBlob is the machine code of one JIT-compiled function, as it was
// in the target's memory.
type CodeBlob struct {
	// Name is the function's name (a Java method, "pkg.Class.method").
	Name string `json:"name"`
	// Start is the runtime address of Code[0].
	Start uint64 `json:"start"`
	Code  []byte `json:"code"`
}

// ModuleJava is the module of Java frames: methods a JVM compiled, named
// from its perf map ("pkg.Class.method"), its interpreter ("Interpreter":
// the method is not named) and stubs, and every frame of a Java thread
// dump.
const ModuleJava = "[java]"

// Stack is a symbolized stack, leaf first.
type Stack struct {
	Frames []Frame `json:"frames"`
	// Truncated is true when the unwinder stopped before the outermost
	// frame (window exhausted, depth limit).
	Truncated bool `json:"truncated,omitempty"`
}

// Profile returns the profile of view v, or nil.
func (r *Recording) Profile(v View) *profile.Profile {
	if r == nil || r.Profiles == nil {
		return nil
	}
	return r.Profiles[v]
}

// SetProfile stores p as view v.
func (r *Recording) SetProfile(v View, p *profile.Profile) {
	if r.Profiles == nil {
		r.Profiles = make(map[View]*profile.Profile)
	}
	r.Profiles[v] = p
}

// IsLive reports whether the recording came from the eBPF collector.
func (r *Recording) IsLive() bool { return r.Meta.Source == SourceLive }

// Sources of a recording.
const (
	SourceLive  = "live"
	SourceFiles = "files"
)

// Kinds of Go runtime data in GoData.Kinds, in the order they are listed.
const (
	GoKindMutex     = "mutex"
	GoKindBlock     = "block"
	GoKindGoroutine = "goroutine"
	GoKindCPU       = "cpu"
)

// GoKinds lists every kind of Go runtime data a live recording may hold.
var GoKinds = []string{GoKindMutex, GoKindBlock, GoKindGoroutine, GoKindCPU}

// GoData says where a live Go target's runtime profiles came from and
// which kinds the recording holds (the mutex and block profiles, a
// goroutine dump, the CPU profile), with why each absent one is.
type GoData struct {
	// Endpoint is the net/http/pprof base the profiles were fetched from,
	// "" when there was none.
	Endpoint string `json:"endpoint,omitempty"`
	// Discovered is set when Endpoint was found among the process's
	// listening sockets rather than given with --pprof.
	Discovered bool `json:"discovered,omitempty"`
	// Kinds has one entry per GoKinds kind, in that order.
	Kinds []GoDataKind `json:"kinds"`
	// Uprobes says, for a target without an endpoint, whether its
	// goroutines' lock waits were measured with uprobes instead
	// (ViewGoLockWaits); nil when they were not tried.
	Uprobes *GoUprobes `json:"uprobes,omitempty"`
}

// GoUprobes says where the Go lock probes were placed, or why not.
type GoUprobes struct {
	// Functions lists the functions probed: the park/wake probes'
	// ("runtime.(*semaRoot).queue", "runtime.releaseSudog"), or the lock
	// slow paths with the entry/return ones
	// ("internal/sync.(*Mutex).lockSlow").
	Functions []string `json:"functions,omitempty"`
	// Table says where they were found: "symbol table", or "pclntab" in
	// a binary stripped of its symbol table.
	Table string `json:"table,omitempty"`
	// Missing lists the kinds of lock whose slow path was not found, with
	// the names looked for.
	Missing []string `json:"missing,omitempty"`
	// Why says why no probe was placed, "" when some were.
	Why string `json:"why,omitempty"`
	// Detached says why the probes were taken off before the recording
	// ended (they cost the target too much), "" when they stayed; the
	// go-lockwaits view then covers only the time they were attached
	// (its DurationNanos).
	Detached string `json:"detached,omitempty"`
}

// Have reports whether the lock waits were measured with uprobes.
func (u *GoUprobes) Have() bool { return u != nil && len(u.Functions) > 0 }

// GoDataKind says whether one kind of Go runtime data was recorded.
type GoDataKind struct {
	Kind string `json:"kind"`
	Have bool   `json:"have"`
	// Why says why it is absent ("no pprof endpoint: …", "404 Not Found
	// — is net/http/pprof imported?"); "" when Have.
	Why string `json:"why,omitempty"`
}

// Absent returns the kinds the recording lacks.
func (g *GoData) Absent() []GoDataKind {
	if g == nil {
		return nil
	}
	var out []GoDataKind
	for _, k := range g.Kinds {
		if !k.Have {
			out = append(out, k)
		}
	}
	return out
}
