package core

import (
	"fmt"
	"strings"

	"github.com/contend-dev/contend/internal/units"
)

// EvidenceText words one fact behind a verdict from its figures. Every
// EvidenceKind has a sentence here; an unknown kind (a newer
// analyzer) lists its figures as they are.
func EvidenceText(e Evidence) string {
	if e.Text != "" {
		return e.Text
	}
	w := words{e: e}
	if fn, ok := evidenceWords[e.Kind]; ok {
		return fn(w)
	}
	return w.raw()
}

// FillEvidenceText sets the Text of every evidence item of r (for the
// JSON output, where scripts read the words as well as the figures).
func FillEvidenceText(r *Result) {
	for i := range r.Findings {
		for j := range r.Findings[i].Evidence {
			e := &r.Findings[i].Evidence[j]
			e.Text = EvidenceText(*e)
		}
	}
}

// words reads the figures and names of one evidence item.
type words struct{ e Evidence }

func (w words) f(k string) float64  { return w.e.Figures[k] }
func (w words) i(k string) int64    { return int64(w.e.Figures[k] + 0.5) }
func (w words) n(k string) string   { return w.e.Names[k] }
func (w words) on(k string) bool    { return w.e.Figures[k] != 0 }
func (w words) sec(k string) string { return units.Seconds(w.f(k)) }
func (w words) pct(k string) string { return units.Percent(w.f(k)) }
func (w words) cnt(k string) string { return units.Count(w.i(k)) }
func (w words) num(k string) string { return units.Float(w.f(k)) }

// items renders the items as "name (value)" with value formatted by f.
func (w words) items(f func(float64) string) string {
	parts := make([]string, len(w.e.Items))
	for i, it := range w.e.Items {
		parts[i] = fmt.Sprintf("%s (%s)", it.Name, f(it.Value))
	}
	return strings.Join(parts, ", ")
}

// states renders the items as goroutine states: "48 sync.Mutex.Lock, 2
// runnable".
func (w words) states() string {
	parts := make([]string, len(w.e.Items))
	for i, it := range w.e.Items {
		parts[i] = fmt.Sprintf("%s %s", countItems(it.Value), it.Name)
	}
	return strings.Join(parts, ", ")
}

// raw lists an unknown kind's figures and names.
func (w words) raw() string {
	var parts []string
	for k, v := range w.e.Names {
		parts = append(parts, k+"="+v)
	}
	for k, v := range w.e.Figures {
		parts = append(parts, fmt.Sprintf("%s=%s", k, units.Float(v)))
	}
	return string(w.e.Kind) + ": " + strings.Join(parts, ", ")
}

func countItems(v float64) string { return units.Count(int64(v + 0.5)) }

// evidenceWords holds one sentence builder per kind.
var evidenceWords = map[EvidenceKind]func(w words) string{
	EvFutexWaits: func(w words) string {
		lock := w.n("lock")
		switch {
		case w.on("queue"):
			lock += " (one word per waiter, waited on at one program point: a hand-rolled queue for one lock)"
		case w.i("words") > 1:
			lock = fmt.Sprintf("%s (%d futex words of one lock structure)", lock, w.i("words"))
		}
		t := fmt.Sprintf("%s futex %s by %d threads on %s waited %s in total", w.cnt("waits"), units.Plural(w.i("waits"), "wait"), w.i("threads"), lock, w.sec("wait_s"))
		if w.f("waits") > w.f("blocked") {
			t += fmt.Sprintf(" (%s of them slept; the rest returned at once because the lock word had already changed)", w.cnt("blocked"))
		}
		if w.f("dur_s") > 0 {
			t += fmt.Sprintf("; over %s that is %s threads waiting at any moment (Little's law)", w.sec("dur_s"), w.num("mean"))
		}
		if w.on("truncated") {
			t += "; the collector stopped listing waiters at its bound, so more threads took part"
		}
		return t
	},
	EvWaitPoints: func(w words) string {
		if len(w.e.Items) == 0 {
			return ""
		}
		first := w.e.Items[0]
		rest := words{e: Evidence{Items: w.e.Items[1:]}}
		return fmt.Sprintf("waited for at %d program points: %s (%s) and %s", w.i("points"), first.Name, units.Seconds(first.Value), rest.items(units.Seconds))
	},
	EvHandoffs: func(w words) string {
		t := fmt.Sprintf("%s wakes woke a waiter: %s hand-offs a second", w.cnt("woken"), units.Rate(w.f("rate")))
		if r := w.n("releaser"); r != "" {
			t += ", mostly from " + r
		}
		return t + fmt.Sprintf("; the holds that ended in a hand-off lasted at most %s on average (%s / %s hand-offs)", w.sec("hold_bound_s"), w.sec("dur_s"), w.cnt("woken"))
	},
	EvHandoffHolds: func(w words) string {
		t := fmt.Sprintf("%s holds measured per hand-off, each from when its holder took the lock (its own wait ended, or a waiter found the lock taken) to its release: p50 %s, p90 %s, p99 %s, longest %s, mean %s; %s held in all, %s of it in I/O by the holder (%s)",
			w.cnt("holds"), w.sec("p50_s"), w.sec("p90_s"), w.sec("p99_s"), w.sec("max_s"), w.sec("mean_s"), w.sec("held_s"), w.pct("io_share"), w.sec("io_s"))
		t += fmt.Sprintf("; %s of the %s hand-offs in the event log measured (%s counted in the kernel), the others' holds fit in the %s between hand-offs not measured as held", w.pct("coverage"), w.cnt("releases"), w.cnt("woken"), w.sec("unsure_s"))
		if w.i("owner_seen") > 0 {
			t += fmt.Sprintf("; the owner field read by %s waits begun inside a hold named its releaser in %s", w.cnt("owner_seen"), w.pct("owner_agree"))
		}
		return t
	},
	EvWaitQuantiles: func(w words) string {
		var t string
		if w.n("from") == "histogram" {
			t = fmt.Sprintf("every wait, from the in-kernel log2 histogram: p50 %s, p99 %s", w.sec("p50_s"), w.sec("p99_s"))
		} else {
			t = fmt.Sprintf("waits that slept: p50 %s, p99 %s (%s logged waits of at least the stack threshold)", w.sec("p50_s"), w.sec("p99_s"), w.cnt("logged"))
		}
		if w.f("max_s") > 0 {
			t += "; the longest wait lasted " + w.sec("max_s")
		}
		return t
	},
	EvContendedSpan: func(w words) string {
		return fmt.Sprintf("at least one thread slept on the lock during %s of the span the event log covers", w.pct("share"))
	},
	EvOwnerField: func(w words) string {
		if w.i("owner") > 0 {
			return fmt.Sprintf("the glibc owner field beside the lock word named thread %d as the holder in %s of %s waits", w.i("owner"), w.cnt("waits"), w.cnt("seen"))
		}
		return fmt.Sprintf("the glibc owner field beside the lock word named %d different holders at wait time", w.i("owners"))
	},
	EvHolderPreempted: func(w words) string {
		return fmt.Sprintf("lock-holder preemption: during %s of the logged waits the holder sat runnable without a CPU for %s, %s of the time waited", w.cnt("waits"), w.sec("runq_s"), w.pct("share"))
	},
	EvHolderIO: func(w words) string {
		t := fmt.Sprintf("while a holder of the lock (from when it took the lock until it released it) was in I/O system calls or uninterruptible sleep, waiters waited %s: %s of the %s logged", w.sec("io_s"), w.pct("share"), w.sec("logged_s"))
		if len(w.e.Items) > 0 {
			t += "; by system call: " + w.items(units.Seconds)
		}
		return t
	},
	EvIOSite: func(w words) string {
		return fmt.Sprintf("the I/O is issued at %s, inside the critical section, by %d %s; %d of the %d waiters do no I/O under the lock and only stall behind it",
			w.n("site"), w.i("holders"), units.Plural(w.i("holders"), "thread"), w.i("victims"), w.i("waiters"))
	},
	EvWaitersDoIO: func(w words) string {
		t := fmt.Sprintf("%s of the logged waiting coincides with the holder's I/O (%s)", w.pct("share"), w.n("calls"))
		if s := w.n("site"); s != "" {
			t += " at " + s
		}
		return t + fmt.Sprintf("; every one of the %d waiters does that I/O under the lock itself, so the lock orders their I/O rather than stalling others behind it", w.i("waiters"))
	},
	EvTurnsHandoff: func(w words) string {
		return fmt.Sprintf("the lock is a condition variable with its mutex; the %d threads that wait on it make %s of the hand-offs themselves: each drops the lock to the next, taking turns", w.i("waiters"), w.pct("self_share"))
	},
	EvTurnsDemand: func(w words) string {
		t := fmt.Sprintf("between waits they run: together they use %s CPUs and wait %s more for a CPU, so the lock is busy about %s of the time", w.num("cpu_cpus"), w.num("runq_cpus"), units.Percent(min(w.f("cpus"), 1)))
		if n := w.i("num_cpu"); n > 0 {
			t += fmt.Sprintf("; %d threads that could use %d CPUs get about one, the rest waiting on the lock (%s on average)", w.i("waiters"), n, w.num("mean"))
		}
		return t
	},
	EvTurnsTimeouts: func(w words) string {
		return fmt.Sprintf("%s of the waits ended by timeout: the waiters wake on an interval to ask the holder to let go (a switch interval)", w.cnt("timeouts"))
	},
	EvWriterQueue: func(w words) string {
		p50 := "p50 " + w.sec("p50_s")
		if w.f("wake_latency_s") > 0 {
			p50 += fmt.Sprintf(", of which %s is the wake-up's wait for a CPU", w.sec("wake_latency_s"))
		}
		return fmt.Sprintf("a typical wait (%s) spans about %s holds of at most %s: each producer waits for the hand-off itself, not behind a crowd; the tail (p99 %s, %s× the median) is the producers that queued behind several hand-offs in a row",
			p50, w.num("holds"), w.sec("hold_bound_s"), w.sec("p99_s"), w.num("tail"))
	},
	EvWriterGroups: func(w words) string {
		return fmt.Sprintf("of %s waiters woken while others still queued, only %s (%s) then handed the lock on: the rest were woken with their work done by another thread's turn, so the queue is served a group at a time (about %s waits ended per hand-on); a typical wait (p50 %s) spans about %s holds because the producers queue behind whole groups",
			w.cnt("woken"), w.cnt("passed"), w.pct("share"), w.num("group"), w.sec("p50_s"), w.num("holds"))
	},
	EvWaiterCPU: func(w words) string {
		return fmt.Sprintf("of the waiters' %s of sampled CPU, %s is in lock machinery (the futex calls and context switches of hand-offs, or spinning in the lock), %s in %s, which takes the lock (the critical section and more), and %s elsewhere",
			w.sec("cpu_s"), w.pct("machinery_share"), w.pct("section_share"), w.n("function"), w.pct("outside_share"))
	},
	EvShortHolds: func(w words) string {
		t := fmt.Sprintf("short holds (at most %s on average) shared by %d distinct threads", w.sec("hold_bound_s"), w.i("waiters"))
		if w.f("holds") > 0 {
			t += fmt.Sprintf("; a typical wait (p50 %s) spans about %s holds: the waiters queue behind each other", w.sec("p50_s"), w.num("holds"))
		}
		return t
	},
	EvWriterStarved: func(w words) string {
		if w.i("reader_waits") == 0 {
			return fmt.Sprintf("%s %s waited %s per wait (%s waits, %s in all), %s of it for a read phase to end, and no reader waited: readers held the lock all that time",
				units.Count(w.i("writers")), units.Plural(w.i("writers"), "writer"), w.sec("writer_mean_s"), units.Count(w.i("writer_waits")), w.sec("writer_wait_s"), w.sec("read_phase_wait_s"))
		}
		return fmt.Sprintf("%s %s waited %s per wait (%s waits, %s in all) while %s %s waited %s (%s waits): the writers wait %s times as long as the readers, passed over by one reader hold after another",
			units.Count(w.i("writers")), units.Plural(w.i("writers"), "writer"), w.sec("writer_mean_s"), units.Count(w.i("writer_waits")), w.sec("writer_wait_s"),
			units.Count(w.i("readers")), units.Plural(w.i("readers"), "reader"), w.sec("reader_mean_s"), units.Count(w.i("reader_waits")), w.num("ratio"))
	},
	EvHotStripe: func(w words) string {
		return fmt.Sprintf("%s is one of %d locks of the array %s seen in use, and takes %s of the array's %s of waiting (%s): with keys spread by a hash each stripe would take about 1/%d",
			w.n("lock"), w.i("elements"), w.n("array"), w.pct("share"), w.sec("array_wait_s"), w.sec("wait_s"), w.i("elements"))
	},
	EvLatchWaits: func(w words) string {
		return fmt.Sprintf("%d threads slept %s in %s under %s, %s times (%s waiting on average), each on a latch of its own rather than on the lock's word; other threads of the target woke them %s times, about once per wait: the releaser hands the lock to the next waiter",
			w.i("threads"), w.sec("wait_s"), w.n("call"), w.n("acquire"), units.Count(w.i("waits")), w.num("mean"), units.Count(w.i("peer_wakes")))
	},
	EvLatchReleaser: func(w words) string {
		return fmt.Sprintf("%s of those wake-ups (%s) came from %s: where the holder releases the lock and sets the next waiter's latch",
			units.Count(w.i("wakes")), w.pct("share"), w.n("releaser"))
	},
	EvLatchHolderIO: func(w words) string {
		t := fmt.Sprintf("from the event log, the holders (each from the wake-up that handed it the lock to its own wake-up of the next waiter) spent %s of the %s held in I/O in the log",
			w.sec("io_s"), w.sec("hold_s"))
		if w.on("kept") {
			t += fmt.Sprintf(", which kept %s of their I/O time: about %s of the holds", w.pct("kept"), w.pct("share"))
		} else {
			t += fmt.Sprintf(" (%s)", w.pct("share"))
		}
		if len(w.e.Items) > 0 {
			t += ": " + w.items(units.Seconds)
		}
		if w.on("cut") {
			t += fmt.Sprintf(" (%s holds longer than %s, four mean holds, were left out: the log lost the wake-up that ended them)", units.Count(w.i("cut")), w.sec("cut_s"))
		}
		if w.on("all") && w.i("in_io") < w.i("holders") {
			return t + fmt.Sprintf("; %d of the %d threads seen holding it did that I/O while holding, and all did it at one rate as far as the log's sample tells (the other %d were seen in too few holds to show any): the lock orders their I/O", w.i("in_io"), w.i("holders"), w.i("holders")-w.i("in_io"))
		}
		if w.on("all") {
			return t + fmt.Sprintf("; every one of the %d threads seen holding it did that I/O while holding, so the lock orders their I/O", w.i("holders"))
		}
		return t + fmt.Sprintf("; %d of the %d threads seen holding it did", w.i("in_io"), w.i("holders"))
	},
	EvArrayMerge: func(w words) string {
		names := make([]string, 0, len(w.e.Items))
		for _, it := range w.e.Items {
			names = append(names, it.Name)
		}
		return fmt.Sprintf("%d locks of one array, %s (%s), show this at %s; the figures are the sum over them, the evidence below is the costliest lock's",
			w.i("locks"), w.n("array"), strings.Join(names, ", "), w.n("point"))
	},
	EvChain: func(w words) string {
		if w.f("wait_s") == 0 {
			t := fmt.Sprintf("the holder itself waited for %s in %s of the thread dumps that name it", w.n("what"), w.pct("share"))
			if w.on("cycle") {
				t += "; that lock's holder in turn waits for this one: a deadlock"
			}
			return t
		}
		t := fmt.Sprintf("while others waited, the holders themselves waited for %s during %s of the logged waiting (%s)", w.n("what"), w.pct("share"), w.sec("wait_s"))
		if w.on("cycle") {
			t += "; that lock's holders in turn wait for this one: a cycle, each lock's waiting feeds the other's"
		}
		return t
	},
	EvChainDump: func(w words) string {
		return fmt.Sprintf("goroutines inside its critical section are themselves waiting, %s of them for %s: the lock's waiters wait on that lock too", w.pct("share"), w.n("what"))
	},
	EvRunQueue: func(w words) string {
		return fmt.Sprintf("on average %s threads were runnable but waiting for a CPU, beside the %s CPUs' worth running, on the %d CPUs the process may use (%s threads runnable on average out of %d, over %s)",
			w.num("runq_threads"), w.num("running"), w.i("cpus"), w.num("runnable"), w.i("threads"), w.sec("dur_s"))
	},
	EvRunnableShare: func(w words) string {
		return fmt.Sprintf("the busy threads spent %s of their time runnable without a CPU and %s waiting for locks: they wait for CPUs, not for locks", w.pct("share"), w.pct("lock_share"))
	},
	EvRunQueuePoints: func(w words) string {
		return "the work they were preempted in, by function: " + w.items(units.Seconds)
	},
	EvJVMParkWords: func(w words) string {
		if w.on("by_wakes") {
			return fmt.Sprintf("each of the %d threads parks on a futex word of its own (the JVM's per-thread park event), so the words name the waiters, not the %s: the lock is told by who hands it to whom (a releasing holder wakes the next waiter's word), not by its address; thread dumps (record --jvm-dumps) name the object", w.i("threads"), w.n("flavor"))
		}
		return fmt.Sprintf("each of the %d threads parks on a futex word of its own (the JVM's per-thread park event); the thread dumps name the object they wait for, %s", w.i("threads"), w.n("lock"))
	},
	EvJavaDumpWaiters: func(w words) string {
		t := fmt.Sprintf("%d %s %s %s at %s in %d Java thread %s", w.i("waiters"), units.Plural(w.i("waiters"), "thread"), w.n("how"), w.n("lock"), w.n("point"), w.i("dumps"), units.Plural(w.i("dumps"), "dump"))
		if w.i("dumps") > 1 {
			t += fmt.Sprintf(": %s waiting on average, at most %d", w.num("mean"), w.i("max"))
		}
		if w.i("points") > 1 {
			t += fmt.Sprintf(" (at %d program points)", w.i("points"))
		}
		return t
	},
	EvJavaDumpHolder: func(w words) string {
		t := fmt.Sprintf("the holder was %q (%s) at %s", w.n("holder"), w.n("state"), w.n("at"))
		if w.i("held") < w.i("dumps") || w.i("dumps") > 1 {
			t = fmt.Sprintf("%d of %d dumps name the holder: %q (%s) at %s", w.i("held"), w.i("dumps"), w.n("holder"), w.n("state"), w.n("at"))
		}
		if w.i("holders") > 1 {
			t += fmt.Sprintf(" and %d others", w.i("holders")-1)
		}
		one := w.i("held") == 1
		switch {
		case w.i("io") > 0 && one:
			t += fmt.Sprintf(", in I/O (%s) while it holds the lock", w.n("call"))
		case w.i("io") > 0:
			t += fmt.Sprintf("; in %d of them the holder is in I/O (%s) while it holds the lock", w.i("io"), w.n("call"))
		}
		switch {
		case w.i("blocked") > 0 && one:
			t += ", itself waiting for another lock"
		case w.i("blocked") > 0:
			t += fmt.Sprintf("; in %d the holder itself waits for another lock", w.i("blocked"))
		}
		return t
	},
	EvDumpWaiters: func(w words) string {
		return fmt.Sprintf("%d of %d goroutines were waiting for this lock when the %s was taken: %s", w.i("waiters"), w.i("population"), w.n("source"), w.states())
	},
	EvBlockWaits: func(w words) string {
		t := fmt.Sprintf("%s contended %s at the Lock %s waited %s in total (%s each on average)", w.cnt("contentions"), units.Plural(w.i("contentions"), "acquisition"), units.Plural(w.i("sites"), "site"), w.sec("wait_s"), w.sec("each_s"))
		if w.f("mean") > 0 {
			t += fmt.Sprintf("; over %s that is %s goroutines waiting at any moment (Little's law)", w.sec("dur_s"), w.num("mean"))
		}
		if p := w.n("probed"); p != "" {
			t += "; measured with uprobes on " + p + ", every contended acquisition counted"
		}
		return t
	},
	EvMutexRelease: func(w words) string {
		t := fmt.Sprintf("the mutex profile charges %s of waiters' delay over %s %s to the Unlock at %s", w.sec("delay_s"), w.cnt("contentions"), units.Plural(w.i("contentions"), "contention"), w.n("site"))
		switch {
		case !w.on("paired"):
		case w.on("guess"):
			t += "; paired with the Lock site by a guess"
		default:
			t += "; the same function locks and unlocks, so both are one lock"
		}
		if len(w.e.Items) > 0 {
			reasons := make([]string, len(w.e.Items))
			for i, it := range w.e.Items {
				reasons[i] = it.Name
			}
			t += " (" + strings.Join(reasons, "; ") + ")"
		}
		return t
	},
	EvDumpUnseen: func(w words) string {
		return fmt.Sprintf("the goroutine dump shows no goroutine waiting for this lock, although the profiles average %s waiting: the waiting came in bursts, not as a standing queue", w.num("mean"))
	},
	EvDumpReleasing: func(w words) string {
		return fmt.Sprintf("the goroutine dump caught none of the %s the profiles average waiting for this lock, but %d of %d goroutines inside its Unlock: Go's mutex in starvation mode hands the lock straight to the next waiter and gives it the releaser's CPU, so the queue had moved into the hand-offs", w.num("mean"), w.i("releasing"), w.i("population"))
	},
	EvDumpSpread: func(w words) string {
		return fmt.Sprintf("the %d waiters whose lock the dump names wait on %d different mutexes, at most %d on any one: this point takes one of several locks, and the profiles add them up", w.i("named"), w.i("distinct"), w.i("most"))
	},
	EvDumpSameMutex: func(w words) string {
		return fmt.Sprintf("all %d waiters whose lock the dump names wait on the same mutex, %s", w.i("named"), w.n("addr"))
	},
	EvWaitSpread: func(w words) string {
		return fmt.Sprintf("the waits at this point fell on %d different mutexes, the busiest taking %s of the waiting: this point takes one of several locks, and its waits add them up", w.i("distinct"), w.pct("share"))
	},
	EvCallPaths: func(w words) string {
		return fmt.Sprintf("%d distinct call paths reach the Lock at %s", w.i("paths"), w.n("site"))
	},
	EvGoHoldBound: func(w words) string {
		if w.f("hold_bound_s") > w.f("max_s") {
			return fmt.Sprintf("each contended hand-off takes up to %s on average (%s / %s contended acquisitions): the lock is held long, or its holder is often descheduled while holding it, rather than shared by a crowd of short critical sections", w.sec("hold_bound_s"), w.sec("dur_s"), w.cnt("contentions"))
		}
		return fmt.Sprintf("the mean hold is at most %s (%s / %s contended acquisitions), short of the %s that would make the work under the lock the problem", w.sec("hold_bound_s"), w.sec("dur_s"), w.cnt("contentions"), w.sec("max_s"))
	},
	EvSectionCPU: func(w words) string {
		if w.on("io") {
			return fmt.Sprintf("%s of CPU ran inside the critical section, some of it in I/O calls", w.sec("cpu_s"))
		}
		return fmt.Sprintf("%s of CPU ran inside the critical section, none of it in I/O calls", w.sec("cpu_s"))
	},
	EvSpinBeforePark: func(w words) string {
		return fmt.Sprintf("%s of CPU was burned spinning in sync.Mutex before parking at the Lock site", w.sec("cpu_s"))
	},
	EvDumpHolderIO: func(w words) string {
		n := w.i("goroutines")
		verb := "are"
		if n == 1 {
			verb = "is"
		}
		how := w.n("how")
		if how == "" || how == "inside the critical section" {
			return fmt.Sprintf("%d %s inside the critical section %s in %s (state %s), called from %s", n, units.Plural(n, "goroutine"), verb, w.n("call"), w.n("state"), w.n("at"))
		}
		return fmt.Sprintf("%d %s %s in %s (state %s), called from %s: %s, so it is taken to hold the lock", n, units.Plural(n, "goroutine"), verb, w.n("call"), w.n("state"), w.n("at"), how)
	},
	EvSectionIOCPU: func(w words) string {
		names := make([]string, 0, 3)
		for _, it := range w.e.Items[:min(len(w.e.Items), 3)] {
			names = append(names, it.Name)
		}
		return fmt.Sprintf("%s of CPU (%s samples) inside the critical section is in I/O calls (%s); I/O mostly waits off-CPU, so its wall time under the lock is larger", w.sec("io_s"), w.cnt("samples"), strings.Join(names, ", "))
	},
	EvSectionIOSleep: func(w words) string {
		names := make([]string, 0, 3)
		for _, it := range w.e.Items[:min(len(w.e.Items), 3)] {
			names = append(names, it.Name)
		}
		return fmt.Sprintf("the probes saw %s I/O %s (%s) sleep inside the critical section, %s asleep in all, holding the lock", w.cnt("calls"), units.Plural(w.i("calls"), "call"), strings.Join(names, ", "), w.sec("io_s"))
	},
	EvRuntimeLock: func(w words) string {
		t := fmt.Sprintf("the mutex profile records %s %s and %s of delay on a runtime lock released in %s", w.cnt("contentions"), units.Plural(w.i("contentions"), "contention"), w.sec("delay_s"), w.n("where"))
		if w.f("mean") > 0 {
			t += fmt.Sprintf(" (%s goroutines waiting on average)", w.num("mean"))
		}
		return t
	},
	EvRuntimeLockUser: func(w words) string {
		return fmt.Sprintf("user code reaches it through %s; the lock itself belongs to the runtime, not to that code", w.n("user"))
	},
	EvSpinCPU: func(w words) string {
		t := fmt.Sprintf("%s of %s sampled CPU (%s) falls on the spin loop's instructions in %s, from %d threads", w.sec("spin_s"), w.sec("total_s"), w.pct("share"), w.n("function"), w.i("threads"))
		if w.f("dur_s") > 0 {
			t += fmt.Sprintf(": %s CPUs busy-waiting on average over %s", w.num("cpus"), w.sec("dur_s"))
		}
		return t
	},
	EvSpinLoop: func(w words) string {
		t := fmt.Sprintf("the %d-instruction loop at 0x%x re-reads one memory word until it changes, with no call or system call", w.i("insns"), uint64(w.f("start")))
		if w.on("pause") {
			t += " (it executes PAUSE, a spin-wait hint)"
		}
		return t + ": " + w.n("shape")
	},
	EvTightLoop: func(w words) string {
		t := fmt.Sprintf("%s of the function's samples fall on %d instruction addresses: a tight loop (its machine code could not be read to confirm the shape)", w.pct("share"), w.i("addrs"))
		if w.f("atomic_share") > 0 {
			t += fmt.Sprintf("; %s of them execute an atomic operation", w.pct("atomic_share"))
		}
		return t
	},
	EvSpinRunnable: func(w words) string {
		t := fmt.Sprintf("the spinning threads were runnable (R) at %s of the /proc samples and were preempted %s times (involuntary context switches)", w.pct("runnable_share"), w.cnt("involuntary"))
		if w.i("num_cpu") > 0 {
			t += fmt.Sprintf("; on average %s of the process's threads were runnable, on %d CPUs", w.num("mean_runnable"), w.i("num_cpu"))
		}
		return t
	},
	EvSpinRunq: func(w words) string {
		return fmt.Sprintf("they also sat %s runnable without a CPU inside %s: time slices queued behind other spinners while the thread that holds the flag may itself be waiting for a CPU", w.sec("runq_s"), w.n("function"))
	},
	EvSpinPark: func(w words) string {
		if w.f("park_s") == 0 {
			return "no futex wait was seen from " + w.n("function") + ": the waiters never park"
		}
		return fmt.Sprintf("only %s of futex waits from %s against %s spinning: the waiters hardly ever park", w.sec("park_s"), w.n("function"), w.sec("spin_s"))
	},
	EvKernelWaits: func(w words) string {
		t := fmt.Sprintf("%d threads slept %s times in the kernel on %s, %s in total", w.i("threads"), w.cnt("sleeps"), w.n("object"), w.sec("wait_s"))
		if w.n("frame") != "" {
			t += fmt.Sprintf(" (in %s", w.n("frame"))
			if w.n("call") != "" {
				t += " under " + w.n("call")
			}
			t += ")"
		}
		if w.f("dur_s") > 0 {
			t += fmt.Sprintf("; over %s that is %s threads asleep on it at any moment (Little's law)", w.sec("dur_s"), w.num("mean"))
		}
		return t + fmt.Sprintf("; %s of the sleeps were ended by another thread of the target (%s a second): its holder handing it on", w.cnt("woken"), units.Rate(w.f("rate")))
	},
	EvKernelHolder: func(w words) string {
		t := fmt.Sprintf("%s logged holds by %d threads, each from the later of the waiter's sleep and the holder's own last sleep on the object to the holder's wake-up of the waiter, lasted %s", w.cnt("holds"), w.i("holders"), w.sec("hold_s"))
		if w.n("holder") != "" {
			t += fmt.Sprintf("; the wake-ups came from %s", w.n("holder"))
		}
		if w.f("io_s") > 0 {
			return t + fmt.Sprintf("; the holders spent %s of it (%s) in I/O: %s", w.sec("io_s"), w.pct("share"), w.items(units.Seconds))
		}
		return t + "; the holders did no I/O the probes saw while holding it"
	},
	EvPolledTries: func(w words) string {
		t := fmt.Sprintf("%d threads failed %s on %s %s times (%s a second", w.i("threads"), w.n("call"), w.n("object"), w.cnt("failures"), units.Rate(w.f("rate")))
		if w.f("logged") > 0 && w.f("logged") != w.f("failures") {
			t += fmt.Sprintf("; %s in the event log", w.cnt("logged"))
		}
		t += ")"
		if w.n("err") != "" {
			t += ", with " + w.n("err")
		}
		return t + fmt.Sprintf(", and slept %s times in %s between tries at the same point: %s, %s of their time: they were waiting for the lock, not idle", w.cnt("sleeps"), w.n("sleep"), w.sec("sleep_s"), w.pct("share"))
	},
	EvPolledHolder: func(w words) string {
		if w.f("holders") == 0 {
			return "no other thread taking the object was seen in I/O when the tries failed: the holder's work is unknown"
		}
		return fmt.Sprintf("during %s of the failed tries another of the %d threads that take the object was in I/O (%s, %s logged): the holder does I/O while the others poll", w.pct("share"), w.i("holders"), w.n("call"), w.sec("io_s"))
	},
	EvYieldLoop: func(w words) string {
		return fmt.Sprintf("%d threads gave up the CPU %s times in %s (%s a second) and queued for it again at once: %s runnable after yielding and %s on the CPU in the loop, %s of the process's busy time",
			w.i("threads"), w.cnt("yields"), w.n("function"), units.Rate(w.f("rate")), w.sec("runq_s"), w.sec("cpu_s"), w.pct("share"))
	},
	EvGoSpinCPU: func(w words) string {
		t := fmt.Sprintf("%s of CPU (%s of the profile) is spent on the lines of %s that execute atomic loads or compare-and-swaps (%s of the function's CPU)", w.sec("spin_s"), w.pct("share"), w.n("function"), w.pct("function_share"))
		if w.f("dur_s") > 0 {
			t += fmt.Sprintf(": %s CPUs busy-waiting on average over %s", w.num("cpus"), w.sec("dur_s"))
		}
		return t
	},
	EvGoSpinYield: func(w words) string {
		if w.f("yield_share") == 0 {
			return "no sample there parks or yields (runtime.Gosched, sched_yield): the loop spins on the CPU until it wins"
		}
		return fmt.Sprintf("%s of its CPU is in yields (runtime.Gosched): the loop gives up its CPU at times but never parks", w.pct("yield_share"))
	},
	EvGoSpinDump: func(w words) string {
		where := "in " + w.n("function")
		if w.on("callers") {
			where += " or about to call it"
		}
		t := fmt.Sprintf("%d of %d goroutines are running or runnable %s in the %s: %s", w.i("running"), w.i("population"), where, w.n("source"), w.states())
		if !w.on("parked") {
			t += "; none is parked"
		}
		return t
	},
	EvGoSpinRunnable: func(w words) string {
		return fmt.Sprintf("about %s lost runnable but not running: %d goroutines in the loop over %s, less the %s of CPU they burned (estimated from one dump)", w.sec("wait_s"), w.i("running"), w.sec("dur_s"), w.sec("cpu_s"))
	},
}
