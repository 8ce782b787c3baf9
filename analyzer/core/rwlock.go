package core

import (
	"fmt"
	"time"

	"github.com/contend-dev/contend/internal/units"
)

// RWFacts are a reader-writer lock's waits, its readers and writers
// counted apart (live: the wait stacks' pthread_rwlock_rdlock or
// _wrlock, and the futex word waited on).
type RWFacts struct {
	// Readers and Writers count the distinct threads seen waiting on each
	// side; the waits and their time are summed per side.
	Readers, Writers           int
	ReaderWaits, WriterWaits   int64
	ReaderWaitNS, WriterWaitNS int64
	// ReadPhaseWaits and ReadPhaseWaitNS are the part of the writers'
	// waits spent on __wrphase_futex: waiting for a read phase to end,
	// which only readers holding the lock prolong.
	ReadPhaseWaits, ReadPhaseWaitNS int64
}

// WriterMean and ReaderMean are each side's mean time per wait, 0 when
// the side did not wait. A writer's acquisition may take more than one
// wait (glibc's writers queue on __writers_futex, then wait for the read
// phase to end), so WriterMean is a lower bound of its wait per
// acquisition.
func (f *RWFacts) WriterMean() time.Duration { return meanOf(f.WriterWaitNS, f.WriterWaits) }
func (f *RWFacts) ReaderMean() time.Duration { return meanOf(f.ReaderWaitNS, f.ReaderWaits) }

func meanOf(ns, n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(ns / n)
}

// Thresholds of writer starvation. Neither counts threads or CPUs: both
// sides' waits include the run-queue delay of a woken thread, which grows
// with threads per CPU for readers and writers alike.
const (
	// starveMinWriterWait is the least mean wait of a writer for it to be
	// starved. A tenth of a second per acquisition is a latency a user
	// sees, ten scheduler time slices (MaxShortHold), and above the
	// writers' waits of a writer-preferring lock even beside CPU hogs
	// (tens of milliseconds in the rwstarve fixture, whose readers hold
	// under a millisecond); a starved writer waits seconds.
	starveMinWriterWait = 100 * time.Millisecond
	// starveMinRatio is how many times the readers' mean wait a writer's
	// must reach: the writers wait many reader holds in a row while the
	// readers flow. With writer preference or a fair lock a writer waits
	// for the read holds under way to drain, and a reader for about one
	// write hold and that drain, so the two means stay within a small
	// factor of each other (about 2 in the rwstarve fixture's fixed
	// variant); ten times means readers passed the writers over and over.
	starveMinRatio = 10
)

// WriterStarved reports whether a reader-writer lock starves its writers:
// they wait at least starveMinWriterWait per wait and starveMinRatio
// times what the readers wait, while readers take the lock.
//
// Readers that never wait are the extreme of it: on a reader-preferring
// lock whose read holds overlap, a reader always finds the read side held
// and enters, so the recording has the writers' waits alone (in a few
// seconds, or at any length once there are many readers per CPU). The
// lock's own words then tell who kept the writers out: a writer waits on
// __wrphase_futex only for a read phase to end, so writers that wait
// there starveMinWriterWait per wait were kept out by readers holding the
// lock all that time.
func (c *LockCase) WriterStarved() bool {
	f := c.RW
	if f == nil || f.Writers == 0 || f.WriterMean() < starveMinWriterWait {
		return false
	}
	if f.ReaderWaits == 0 {
		return meanOf(f.ReadPhaseWaitNS, f.ReadPhaseWaits) >= starveMinWriterWait
	}
	return f.Readers > 0 && float64(f.WriterMean()) >= starveMinRatio*float64(max(f.ReaderMean(), 1))
}

// writerStarvedEvidence shows the two sides' waits.
func writerStarvedEvidence(c *LockCase) Evidence {
	f := c.RW
	w, r := f.WriterMean(), f.ReaderMean()
	return Fact("futex", EvWriterStarved, "writers", f.Writers, "readers", f.Readers,
		"writer_waits", f.WriterWaits, "reader_waits", f.ReaderWaits,
		"writer_mean_s", w, "reader_mean_s", r, "writer_wait_s", Seconds(f.WriterWaitNS),
		"read_phase_waits", f.ReadPhaseWaits, "read_phase_wait_s", Seconds(f.ReadPhaseWaitNS),
		"ratio", float64(w)/float64(max(r, 1)), "lock", LockName(&c.ID))
}

// writerStarvedHeadline: "2 writers wait 1.93 s per acquisition for ONE
// reader-writer lock while 24 readers flow: table_rw (rwstarve) in
// table_update (rwstarve.c:73)".
func writerStarvedHeadline(c *LockCase) string {
	f := c.RW
	if f.ReaderWaits == 0 {
		return fmt.Sprintf("%s wait %s per acquisition for ONE reader-writer lock that readers hold throughout: %s",
			countOf(f.Writers, "writer"), units.Duration(f.WriterMean()), c.What)
	}
	return fmt.Sprintf("%s wait %s per acquisition for ONE reader-writer lock while %s flow: %s",
		countOf(f.Writers, "writer"), units.Duration(f.WriterMean()), countOf(f.Readers, "reader"), c.What)
}

func writerPref(s Sugg) Suggestion {
	f := s.rw
	if f == nil {
		f = &RWFacts{}
	}
	return Suggestion{
		Action: "Give the writers preference: initialise the lock with pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) (or use a fair lock), so that a waiting writer stops new readers and gets the lock once the read holds under way end; for read-mostly data, let readers read without the lock instead (copy-on-write: build the new version aside and publish it with an atomic pointer swap, or RCU). Striping does not help: the readers need not wait for each other, the writers wait for them all.",
		Reasoning: fmt.Sprintf("The lock prefers readers: while any reader holds it, new readers keep taking it, and %s waited %s per wait against %s, so each write waits for many reader holds in a row. Writer preference bounds a writer's wait by the read holds under way when it arrives; readers then wait for a write now and then, about one write hold each.",
			countOf(f.Writers, "writer"), units.Duration(f.WriterMean()), readersWait(f)),
	}
}

// readersWait says what the readers waited: "98 ms for the readers", or
// that none waited.
func readersWait(f *RWFacts) string {
	if f.ReaderWaits == 0 {
		return "no wait at all for the readers"
	}
	return units.Duration(f.ReaderMean()) + " for the readers"
}

// countOf says "2 writers", "1 reader".
func countOf(n int, word string) string {
	return units.Count(int64(n)) + " " + units.Plural(int64(n), word)
}
