package core

import (
	"time"

	"github.com/contend-dev/contend/recording"
)

// SchemaVersion is the version of the JSON form of Result. Bump the major
// number on any incompatible change; docs/json-schema.md documents it.
const SchemaVersion = "2.0"

// Kind is the verdict of a finding.
type Kind string

// Finding kinds.
const (
	// KindSpinConvoy: many threads/goroutines burn CPU in one busy-wait.
	KindSpinConvoy Kind = "spin-convoy"
	// KindLockConvoy: many distinct waiters on one lock with short holds;
	// contention comes from sharing (suggest striping).
	KindLockConvoy Kind = "lock-convoy"
	// KindIOUnderLock: waiters block while the holder does I/O.
	KindIOUnderLock Kind = "io-under-lock"
	// KindSerializedWriter: one hot lock handed over at a very high rate
	// among many producers (suggest combining).
	KindSerializedWriter Kind = "serialized-writer"
	// KindRuntimeLock: contention on a lock internal to a language runtime
	// (Go's runtime locks), not user code.
	KindRuntimeLock Kind = "runtime-lock"
	// KindHotStripe: the lock is one element of an array of locks (a
	// striped lock) and takes most of the array's waiting: one key is hot.
	KindHotStripe Kind = "hot-stripe"
	// KindCPUSaturation: the threads wait for a CPU, not for a lock: more
	// of them are runnable than there are CPUs, and lock waits are a small
	// part of their time.
	KindCPUSaturation Kind = "cpu-saturation"
	// KindWriterStarvation: a reader-writer lock whose writers wait many
	// reader holds in a row, a long time per acquisition, while readers
	// flow (suggest writer preference or copy-on-write, never striping).
	KindWriterStarvation Kind = "writer-starvation"
	// KindContention: contention that is real but fits none of the
	// specific kinds above.
	KindContention Kind = "contention"
	// KindKernelObjectLock: threads asleep in the kernel on one object (a
	// flock or record lock, a file's inode lock, the process's mmap lock,
	// a pipe or socket whose reader is slower than its writers), woken by
	// threads that were using it: a lock no futex shows.
	KindKernelObjectLock Kind = "kernel-object-lock"
	// KindPolledLock: threads fail a non-blocking acquire and sleep
	// between tries at one point while another holds the object: a lock
	// whose waiters poll, which reads as idle sleeping without the failed
	// attempts.
	KindPolledLock Kind = "polled-lock"
)

// Confidence is how sure the analyzer is of a verdict.
type Confidence string

// Confidence levels. High: several independent sources agree. Medium: one
// strong source. Low: inferred (a guessed pairing, a heuristic).
const (
	ConfidenceHigh   Confidence = "high"
	ConfidenceMedium Confidence = "medium"
	ConfidenceLow    Confidence = "low"
)

// Result is everything the analyzer computed over one recording.
type Result struct {
	Schema string `json:"schema"`
	// Target summarises what was analyzed.
	Target Target `json:"target"`
	// Findings are ranked by cost (time lost, then CPU burned), highest
	// first.
	Findings []Finding `json:"findings"`
	// Idle lists waits that are not contention (idle pools, idle runtime
	// threads, netpoll, timers). Never reported as findings.
	Idle []IdleGroup `json:"idle,omitempty"`
	// Points lists program points where threads or goroutines sit.
	Points []PointRow `json:"points,omitempty"`
	// Locks lists per-lock statistics.
	Locks []LockRow `json:"locks,omitempty"`
	// Threads lists per-thread rows.
	Threads []ThreadRow `json:"threads,omitempty"`
	// Notes are caveats about the input ("mutex profile empty: …").
	Notes []string `json:"notes,omitempty"`
	// Missing lists data the analysis needed and did not have, with what
	// it would have decided: "no finding" over such an input is not "no
	// contention".
	Missing []Missing `json:"missing,omitempty"`
}

// Missing is one kind of data the analysis lacked.
type Missing struct {
	// What names the data ("the Go runtime's profiles").
	What string `json:"what"`
	// Decides says what it would have shown or decided, and how to get it.
	Decides string `json:"decides"`
}

// Target summarises the analyzed input.
type Target struct {
	PID     int      `json:"pid,omitempty"`
	Comm    string   `json:"comm,omitempty"`
	Source  string   `json:"source"`
	Inputs  []string `json:"inputs,omitempty"`
	Partial bool     `json:"partial,omitempty"`
	// Duration is the profiled wall time, 0 when unknown.
	Duration time.Duration `json:"duration_ns"`
	// Population is how many threads (live) or goroutines (Go dumps) the
	// process had; Unit says which.
	Population int    `json:"population,omitempty"`
	Unit       string `json:"unit,omitempty"`
	NumCPU     int    `json:"num_cpu,omitempty"`
}

// Finding is one verdict with its evidence and suggestion.
type Finding struct {
	Kind Kind `json:"kind"`
	// Headline is the one-line summary, e.g. "37 of 52 goroutines wait at
	// ONE program point: lock in (*Pool).Get (pool.go:88)".
	Headline string `json:"headline"`
	// Point is where the participants sit: the first frame outside lock
	// machinery.
	Point ProgramPoint `json:"point"`
	// Lock identifies the lock, when known.
	Lock *LockID `json:"lock,omitempty"`
	// Releaser is where the lock is released or the waiters are woken (the
	// Go mutex profile's Unlock site, the futex waker), when known.
	Releaser *ProgramPoint `json:"releaser,omitempty"`
	// Participants of Population (Unit: "threads", "goroutines") take part.
	Participants int    `json:"participants"`
	Population   int    `json:"population,omitempty"`
	Unit         string `json:"unit"`
	// ParticipantsEstimated is true when Participants is a lower bound
	// derived from the time waited or burned (Little's law: wait / wall
	// time) rather than counted in a goroutine dump or thread states.
	ParticipantsEstimated bool `json:"participants_estimated,omitempty"`
	// WaitSeconds is time lost waiting, summed over participants.
	WaitSeconds float64 `json:"wait_seconds"`
	// WaitShare is WaitSeconds divided by the profiled wall time times the
	// number of participants (0 when the duration is unknown).
	WaitShare float64 `json:"wait_share,omitempty"`
	// CPUSeconds is CPU burned at the point (spinning), summed.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Evidence lists the facts behind the verdict, strongest first.
	Evidence []Evidence `json:"evidence"`
	// Confidence of the verdict.
	Confidence Confidence `json:"confidence"`
	// Suggestion is what to change, with its reasoning.
	Suggestion Suggestion `json:"suggestion"`
	// Score is the ranking key (seconds lost plus CPU seconds burned).
	Score float64 `json:"score"`
}

// ProgramPoint is a code location with the stack that reached it.
type ProgramPoint struct {
	// Key names the point the same way in every recording of the same
	// build, whatever the load addresses: "module!function", or
	// "module+0xOFF" (module-relative) for an address no symbol names.
	Key      string `json:"key,omitempty"`
	Function string `json:"function"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Stack is the full stack, leaf first; PointIndex is the index of the
	// program point frame within it.
	Stack      []recording.Frame `json:"stack,omitempty"`
	PointIndex int               `json:"point_index"`
}

// LockID identifies a lock.
type LockID struct {
	// Key names the lock the same way in every recording of the same
	// program, across restarts and load addresses (the rules are
	// liveLockKey in live/identity.go and goLock.key in
	// goprofile/identity.go): never a raw address.
	Key string `json:"key,omitempty"`
	// Address is the futex word ("0x7f…"), empty for Go mutexes.
	Address string `json:"address,omitempty"`
	// Name is the data symbol containing it or a Go description
	// ("mutex released at (*Store).Save").
	Name string `json:"name,omitempty"`
	// Words lists every futex word folded into this lock (a condition
	// variable's sequence words and its mutex).
	Words []string `json:"words,omitempty"`
	// Owner is the owner thread when known.
	Owner int `json:"owner,omitempty"`
	// PairingGuess is true when the lock was identified by pairing a Lock
	// site with an Unlock site through shared callers, not by a direct
	// observation.
	PairingGuess bool `json:"pairing_guess,omitempty"`
}

// Evidence is one fact behind a verdict, as data: what kind of fact it
// is and its figures. EvidenceText words it, for the text report, the TUI
// and the JSON's text field.
type Evidence struct {
	// Source is where the fact comes from: "go-mutex", "go-block",
	// "goroutines", "go-cpu", "futex", "sched", "oncpu", "io", "proc",
	// "events", "disasm".
	Source string `json:"source"`
	// Kind says which fact it is; EvidenceKind's constants document the
	// figures and names each carries.
	Kind EvidenceKind `json:"kind"`
	// Figures are the fact's numbers by name. Durations are seconds and
	// their names end in "_s"; shares are fractions (0.25, not 25) and end
	// in "share"; the rest are counts, rates and averages.
	Figures map[string]float64 `json:"figures,omitempty"`
	// Names are the fact's names by role: a lock, a program point, a
	// function, a system call, a state.
	Names map[string]string `json:"names,omitempty"`
	// Items is a ranked list the fact is about (program points with their
	// waiting, system calls with their time, goroutine states with their
	// counts), heaviest first.
	Items []Item `json:"items,omitempty"`
	// Text is the fact in words. The analyzer leaves it empty; the JSON
	// renderer fills it so that scripts need not word the figures.
	Text string `json:"text,omitempty"`
}

// Item is one entry of an evidence list: a name and its figure.
type Item struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Suggestion is what to change and why.
type Suggestion struct {
	// Action is the change, imperative ("Stripe the lock: …").
	Action string `json:"action"`
	// Reasoning explains why that change fits the evidence.
	Reasoning string `json:"reasoning"`
	// ExpectedGain is the expected effect in one line ("waiting:
	// ×0.21–0.33 of today, about 3.6× less"), or "no estimate: " and the
	// reason no model can say.
	ExpectedGain string `json:"expected_gain,omitempty"`
	// Expected is the expected effect per metric, from the remedy's model
	// (predict.go); empty when no model can say, and NoEstimate says why.
	Expected   []Prediction `json:"expected,omitempty"`
	NoEstimate string       `json:"no_estimate,omitempty"`
}

// IdleGroup is a set of threads or goroutines that wait without it being
// contention.
type IdleGroup struct {
	// Reason is why this is not contention ("idle worker pool waiting on a
	// condition variable", "Go idle thread (runtime.notesleep)").
	Reason string       `json:"reason"`
	Point  ProgramPoint `json:"point"`
	Count  int          `json:"count"`
	Unit   string       `json:"unit"`
	// WaitSeconds is the time spent idle there, when known.
	WaitSeconds float64 `json:"wait_seconds,omitempty"`
	// TIDs are the threads counted in Count, for live recordings: one
	// thread can idle at several points, so counting threads across
	// groups takes their union.
	TIDs []int `json:"tids,omitempty"`
}

// IdleCount is how many distinct threads or goroutines idle: Count summed
// over the groups without TIDs, plus the union of the others' TIDs.
func IdleCount(groups []IdleGroup) int {
	n := 0
	tids := map[int]bool{}
	for _, g := range groups {
		if g.TIDs == nil {
			n += g.Count
			continue
		}
		for _, t := range g.TIDs {
			tids[t] = true
		}
	}
	return n + len(tids)
}

// PointRow is one program point where threads or goroutines sit.
type PointRow struct {
	Point ProgramPoint `json:"point"`
	// Count is how many threads/goroutines were seen there.
	Count int    `json:"count"`
	Unit  string `json:"unit"`
	// States maps a state name (running, runnable, sleeping,
	// uninterruptible, or a Go wait reason) to a count.
	States      map[string]int `json:"states,omitempty"`
	WaitSeconds float64        `json:"wait_seconds,omitempty"`
	CPUSeconds  float64        `json:"cpu_seconds,omitempty"`
	// Idle is true when the point is classified as not contention.
	Idle bool `json:"idle,omitempty"`
}

// LockRow is per-lock statistics.
type LockRow struct {
	Lock            LockID        `json:"lock"`
	Waits           uint64        `json:"waits"`
	DistinctWaiters int           `json:"distinct_waiters"`
	WaitSeconds     float64       `json:"wait_seconds"`
	P50             time.Duration `json:"p50_ns"`
	P99             time.Duration `json:"p99_ns"`
	Max             time.Duration `json:"max_ns,omitempty"`
	// Hist is a log2 histogram of wait durations in nanoseconds
	// (Hist[i] counts waits in [2^i, 2^(i+1))).
	Hist   []uint64      `json:"hist,omitempty"`
	Waiter *ProgramPoint `json:"waiter,omitempty"`
	Waker  *ProgramPoint `json:"waker,omitempty"`
	Idle   bool          `json:"idle,omitempty"`
}

// ThreadRow is per-thread figures from the /proc timeline and probes.
type ThreadRow struct {
	TID  int    `json:"tid"`
	Comm string `json:"comm"`
	// States is the state strip: one letter per timeline sample.
	States      string  `json:"states"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	UserSeconds float64 `json:"user_seconds"`
	SysSeconds  float64 `json:"sys_seconds"`
	Voluntary   uint64  `json:"voluntary"`
	Involuntary uint64  `json:"involuntary"`
	WaitSeconds float64 `json:"wait_seconds,omitempty"`
}
