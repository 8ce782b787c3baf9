package core

import (
	"fmt"
	"math"
	"strings"

	"github.com/contend-dev/contend/internal/units"
)

// This file holds the models behind each suggestion's expected effect:
// from the figures a verdict measured, what a metric becomes once the
// change is made, as after divided by before with a range. A remedy
// whose effect no model can state from what was measured says why
// instead (noModel), and no figure is printed for it.

// Metric names what a prediction is about.
type Metric string

// The metrics a prediction can be about. Each is measured the same way
// before and after the change, so that a fixed variant can be held
// against its bad one.
const (
	// MetricWait is the time the finding's waiters spend waiting for the
	// lock at its program point, per second of wall time.
	MetricWait Metric = "wait_seconds"
	// MetricCPU is the CPU burned at the finding's point in lock
	// machinery (spinning, futex calls and the context switches of
	// hand-offs), per second of wall time.
	MetricCPU Metric = "cpu_seconds"
	// MetricThroughput is the process's operations per second.
	MetricThroughput Metric = "throughput"
)

// Prediction is a suggestion's expected effect on one metric: Factor is
// after divided by before, the most likely value; Low and High bound
// what the model allows for; Basis says in one sentence what the model
// assumed.
type Prediction struct {
	Metric Metric  `json:"metric"`
	Factor float64 `json:"factor"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Basis  string  `json:"basis"`
}

// Inside reports whether a measured factor falls inside the
// prediction's range.
func (p Prediction) Inside(measured float64) bool {
	return measured >= p.Low && measured <= p.High
}

// model predicts a remedy's effect from the figures of its verdict: the
// predictions, or none and the reason no model can say.
type model func(s Sugg) ([]Prediction, string)

// models holds one model per remedy; TestEveryRemedyHasAModel fails when
// a remedy has none. A remedy that cannot be predicted has a model that
// always returns its reason.
var models = map[Remedy]model{
	RemedyMoveIOOff:    predictMoveIOOff,
	RemedyCoalesceIO:   noModel("how many writes coalescing saves depends on how often a waiter's write is superseded, which the recording does not show"),
	RemedyTurns:        noModel("the gain depends on how much of the computation leaves the lock, which the recording cannot tell"),
	RemedyGIL:          noModel("the gain depends on how much of the work moves to processes or native code, which the recording cannot tell"),
	RemedyGVL:          noModel("the gain depends on how much of the work moves to processes or native code, which the recording cannot tell"),
	RemedyCombine:      predictCombine,
	RemedyBiggerGroups: predictBiggerGroups,
	RemedyHotKey:       noModel("the gain depends on how the hot key's state is split or read, which the recording cannot tell"),
	RemedyStripe:       predictStripe,
	RemedyShorten:      noModel("the gain depends on how much of the critical section moves out, which the recording cannot tell"),
	RemedyPark:         predictPark,
	RemedyFewerThreads: predictFewerThreads,
	RemedyRuntimeLock:  noModel("the waiting is on the Go runtime's own lock; its gain depends on runtime work the profiles do not break down"),
	RemedyFileLock:     noModel("the gain depends on how much work leaves the kernel lock, which the recording cannot tell"),
	RemedyMmapLock:     noModel("the gain depends on how many mapping changes leave the hot path, which the recording cannot tell"),
	RemedyPipeWriter:   noModel("the gain depends on how fast the reader drains and what the buffer drops, which the recording cannot tell"),
	RemedyBlockingLock: noModel("the gain depends on how long the lock sat free between retries, which the recording does not measure"),
	RemedyWriterPref:   noModel("writer preference shortens the writers' waits and lengthens the readers'; the recording cannot tell the sum"),
}

// noModel is the model of a remedy whose effect cannot be predicted from
// a recording: it returns why.
func noModel(why string) model {
	return func(Sugg) ([]Prediction, string) { return nil, why }
}

// Predict returns what remedy r is expected to change, from s: the
// predictions, or none and the reason.
func Predict(r Remedy, s Sugg) ([]Prediction, string) {
	m := models[r]
	if m == nil {
		return nil, "no model for this change"
	}
	ps, why := m(s)
	if len(ps) == 0 && why == "" {
		why = "the model had no figures to start from"
	}
	return ps, why
}

// stripeResidualLow bounds from below the share of a run-queue round
// that a waiter who finds its stripe held by a preempted holder waits:
// it runs at a random instant of the round the holder waits through, so
// half of it on average whatever the round's length, which is what keeps
// the model from 2 to 64 threads per CPU. The high end is 1+f for a
// critical section that takes a share f of the CPU: a whole round when
// the waiter comes in just after the holder was preempted, and once
// woken, a waiter of a lock without hand-off (glibc's mutex, HotSpot's
// monitors) finds the stripe retaken by its releaser and waits another
// round with about the probability f that the releaser is preempted
// inside it again.
const stripeResidualLow = 0.5

// predictStripe is the queueing on each stripe once the lock is split in
// stripeCount. Each of the n contenders shares its stripe with k others:
// n/stripeCount-1 when the keys spread evenly over the stripes, and
// (n-1)/stripeCount on average when they hash at random, the two ends of
// the range. A thread is inside its critical section for a share f of its
// CPU time, and once the process has more runnable threads than CPUs, a
// thread preempted there keeps its stripe held through the run-queue
// round that follows: the lock wait the stripes remove turns into
// waiting for a CPU, and what waiting is left is a sharer finding its
// stripe held by a preempted holder. A thread is blocked for the share b
// of the time that solves
//
//	b = k·f·r·(1-b)²
//
// (it is running when it asks, its sharer holds the stripe with
// probability f when not blocked itself, and it then waits the share r of
// a round, stripeResidualLow to 1+f). With no more threads
// than CPUs no holder is preempted and it waits r of a hold, a share f of
// its cycle: k·f·f·r. The factor is n·b over the average number waiting
// today.
func predictStripe(s Sugg) ([]Prediction, string) {
	n := float64(s.participants)
	switch {
	case s.GoLang:
		// The model rests on holders preempted at a random instant, as
		// OS threads are. Goroutines leave their CPU where they block,
		// seldom inside a critical section, and the block profile counts
		// a woken goroutine's wait for a CPU as waiting for the lock
		// (docs/results.md gives the model's miss on go/stripe).
		return nil, "goroutines are descheduled where they block rather than preempted inside critical sections, which the stripe model assumes; no model of goroutine scheduling is checked yet"
	case s.mean <= 0:
		return nil, "without the recording's duration the waiting cannot be turned into a number waiting, which the model starts from"
	case s.csShare <= 0:
		return nil, "the critical section's share of the waiters' CPU time is not measured (it needs a live recording's CPU samples)"
	case n < 2:
		return nil, "fewer than two contenders"
	}
	kEven, kRandom := math.Max(n/stripeCount-1, 0), (n-1)/stripeCount
	f := s.csShare
	saturated := s.CPUs <= 0 || n > float64(s.CPUs)
	waiting := func(k, r float64) float64 {
		a := k * f * r
		if !saturated {
			a *= f
		}
		return n * blockedShare(a)
	}
	rHigh := 1 + f
	left := waiting((kEven+kRandom)/2, (stripeResidualLow+rHigh)/2)
	share := func(w float64) float64 { return math.Min(w/s.mean, 1) }
	p := Prediction{Metric: MetricWait, Factor: share(left),
		Low: share(waiting(kEven, stripeResidualLow)), High: share(waiting(kRandom, rHigh))}
	p.Basis = fmt.Sprintf("%s contenders share each of %d stripes with %s to %s others, and spend %s of their CPU time inside the critical section",
		units.Float(n), stripeCount, units.Float(kEven), units.Float(kRandom), units.Percent(f))
	if saturated {
		p.Basis += fmt.Sprintf("; with more of them than the %s CPUs a holder preempted there keeps its stripe for half a run-queue round to more than one, so about %s of them still wait", cpusWord(s.CPUs), units.Float(left))
	} else {
		p.Basis += "; with a CPU each, a waiter waits half a short hold to a little more than one"
	}
	return []Prediction{p}, ""
}

// middle is the most likely factor of a range: the geometric mean, since
// the ends are ratios, or half the high end when the low end is 0.
func middle(lo, hi float64) float64 {
	if lo <= 0 {
		return hi / 2
	}
	return math.Sqrt(lo * hi)
}

// cpusWord is "2" or "available" when the CPU count is unknown.
func cpusWord(n int) string {
	if n <= 0 {
		return "available"
	}
	return fmt.Sprint(n)
}

// blockedShare solves b = a·(1-b)² for the root in [0, 1): the share of
// its time a thread is blocked when it blocks at rate a while running
// and only a sharer not blocked itself can hold its lock.
func blockedShare(a float64) float64 {
	if a <= 0 {
		return 0
	}
	return (2*a + 1 - math.Sqrt(4*a+1)) / (2 * a)
}

// predictMoveIOOff: the hold shrinks by the share of the waiting that
// coincided with the holder's I/O, s. At worst only that share of the
// waiting goes (High = 1-s). At best the lock stops queueing at all once
// its holds are short, which a closed set of threads allows (Low = 0).
// The most likely factor treats the lock as an M/M/1 queue whose load
// falls from its busy share ρ to ρ(1-s) with the same arrivals: its
// waiting, ρ²/(1-ρ), falls faster than the load; the factor is the
// geometric mean of that and High.
func predictMoveIOOff(s Sugg) ([]Prediction, string) {
	if s.ioShare <= 0 {
		return nil, "the holders' I/O share of the waiting is not measured: only a live recording times their I/O against the waiting"
	}
	sh := math.Min(s.ioShare, 1)
	hi := 1 - sh
	mm1 := 0.0
	if rho := s.busy; rho > 0 && rho < 1 {
		q := func(r float64) float64 { return r * r / (1 - r) }
		mm1 = q(rho*(1-sh)) / q(rho)
	}
	basis := fmt.Sprintf("%s of the waiting coincides with the holder's I/O; the hold shrinks by that much", units.Percent(sh))
	if mm1 > 0 {
		basis += fmt.Sprintf(", and the queue on a lock busy %s of the time shrinks faster than the hold", units.Percent(s.busy))
	}
	return []Prediction{{Metric: MetricWait, Factor: middle(mm1, hi), Low: 0, High: hi, Basis: basis}}, ""
}

// The park model's constant.
//
// parkCPUHigh bounds the CPU a parking lock takes where the spin burned
// it: a parked wait costs two futex calls and two context switches, some
// 5–30 µs of CPU, while a spin convoy is reported only where preempted
// holders make its spinners burn whole scheduler slices (0.75–3 ms) per
// wait; even with ten times as many waits once the waiters stop taking
// the holders' CPU, that is under a fifth of the spinning.
const parkCPUHigh = 0.2

// predictPark: the CPU spent spinning is freed. A spin that took a share
// s of the process's CPU leaves 1-s for the work; parked, the work gets
// it all, up to 1/(1-s) times today's throughput. Spinning also slows the
// holder: every poll of the lock word pulls its cache line away, and the
// holder's writes and its release must take it back, so the critical
// section itself speeds up once nobody spins, by up to the spin's share
// again (a cache-line transfer costs about what a short critical section
// does): the high end is (1+s)/(1-s). The low end is no gain, for a lock
// whose holders' work was never short of CPU.
func predictPark(s Sugg) ([]Prediction, string) {
	if s.CPUSeconds <= 0 {
		return nil, "the CPU spent spinning is not measured"
	}
	out := []Prediction{{Metric: MetricCPU, Factor: parkCPUHigh / 2, Low: 0, High: parkCPUHigh,
		Basis: fmt.Sprintf("the %s of spinning stops; a parked wait costs only its futex calls and context switches", units.Seconds(s.CPUSeconds))}}
	if s.Share > 0 && s.Share < 1 {
		freed := 1 / (1 - s.Share)
		out = append(out, Prediction{Metric: MetricThroughput, Factor: freed, Low: 1, High: freed * (1 + s.Share),
			Basis: fmt.Sprintf("the %s of the process's CPU spent spinning goes to the work, and the holder no longer fights the spinners for the lock's cache line", units.Percent(s.Share))})
	}
	return out, ""
}

// predictCombine: hand-offs saved. A combining holder drains every item
// queued when its turn ends, about 1+L of them where L waited on average
// today, so the lock changes hands at most once per 1+L items and
// producers that find it busy leave their item instead of sleeping: the
// waiting and the hand-offs' CPU fall to at most 1/(1+L) of today.
func predictCombine(s Sugg) ([]Prediction, string) {
	if s.mean <= 0 {
		return nil, "without the recording's duration the number waiting, which sets the group a holder drains, is unknown"
	}
	hi := 1 / (1 + s.mean)
	basis := fmt.Sprintf("a holder drains the %s items queued on average per turn, and producers that find the lock busy leave their item instead of sleeping", units.Float(s.mean))
	out := []Prediction{{Metric: MetricWait, Factor: hi / 2, Low: 0, High: hi, Basis: basis}}
	if s.CPUSeconds > 0 {
		out = append(out, Prediction{Metric: MetricCPU, Factor: hi / 2, Low: 0, High: hi, Basis: "one hand-off per group instead of one per item"})
	}
	return out, ""
}

// predictBiggerGroups: a producer waits behind about H holds today.
// Handing over a batch per call, it waits for at most one per item: the
// waiting per second, items per second times wait per item, falls to
// poolGainHigh/H of today at most (the items per second may rise by what
// fewer switches save, the CPU-saturation model's bound for the same
// change). Fed by one producer per CPU instead, each producer may wait
// for more than one hold (its group's leader, then its own write), but
// no more than all the time: at most CPUs producers waiting against the
// mean number waiting today. The range covers either change, so its
// high end is the larger bound; both are per producer and per CPU, so
// they hold from 2 to 64 producers per CPU (RocksDB's write queue at 8
// and 64 per CPU: docs/realworld.md).
func predictBiggerGroups(s Sugg) ([]Prediction, string) {
	if s.holds <= 1 {
		return nil, "a producer waits for about one hold already: fewer producers would not shorten it"
	}
	hi := poolGainHigh / s.holds
	if s.CPUs > 0 && s.mean > 0 {
		hi = math.Max(hi, float64(s.CPUs)/s.mean)
	}
	hi = math.Min(1, hi)
	return []Prediction{{Metric: MetricWait, Factor: 0.5 / s.holds, Low: 0, High: hi,
		Basis: fmt.Sprintf("a producer waits behind about %s holds today; batched, at most one per item, and with one producer per CPU at most the %d producers waiting", units.Float(s.holds), s.CPUs)}}, ""
}

// The CPU-saturation model's constants: the same work runs on the same
// CPUs, so throughput stays within these bounds of today's.
const (
	// poolGainHigh: only the context switches and the cache refills of
	// the threads beyond the CPUs are saved, a few microseconds per slice
	// of 0.75–3 ms, at most a few percent; a quarter leaves room for the
	// caches of threads that no longer evict each other's working set,
	// which grows with threads per CPU.
	poolGainHigh = 1.25
	// poolGainLow: a pool of one worker per CPU leaves a CPU idle while a
	// worker waits for its next request, and beside other busy processes
	// it draws the CPU share of fewer threads; on the fixtures' shared
	// 2-CPU machine that cost up to 7% (c/saturate), so a tenth.
	poolGainLow = 0.9
)

// predictFewerThreads: run-queue time turned into pool queueing. The
// waiting moves from the run queue to the pool's queue, so it does not
// shrink; throughput stays at what the CPUs give, plus what switching
// threads cost.
func predictFewerThreads(s Sugg) ([]Prediction, string) {
	return []Prediction{{Metric: MetricThroughput, Factor: 1, Low: poolGainLow, High: poolGainHigh,
		Basis: fmt.Sprintf("the same work on the same %s CPUs: the %s of run-queue waiting becomes queueing in the pool, and only the context switches are saved", cpusWord(s.CPUs), units.Seconds(s.WaitS))}}, ""
}

// ExpectedLine words predictions in one line: "waiting: ×0.21–0.33 of
// today, about 3.6× less; throughput: ×1–3.7 of today, about 1.9× more".
func ExpectedLine(ps []Prediction) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s: ×%s–%s of today, %s", p.Metric.Word(), units.Float(p.Low), units.Float(p.High), change(p.Factor)))
	}
	return strings.Join(parts, "; ")
}

// Word names the metric in a sentence: "waiting", "CPU in the lock",
// "throughput".
func (m Metric) Word() string {
	switch m {
	case MetricWait:
		return "waiting"
	case MetricCPU:
		return "CPU in the lock"
	case MetricThroughput:
		return "throughput"
	}
	return string(m)
}

// change says a factor in words: "about 3.6× less", "about 1.9× more",
// "about the same".
func change(f float64) string {
	switch {
	case f <= 0:
		return "all of it gone"
	case f < 0.9:
		return "about " + times(1/f) + " less"
	case f > 1.1:
		return "about " + times(f) + " more"
	}
	return "about the same"
}

// times renders a ratio with the precision a model's range allows: two
// significant digits ("3.6×", "25×").
func times(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", x), ".0") + "×"
}
