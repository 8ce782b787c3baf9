package live

import (
	"testing"

	"github.com/contend-dev/contend/recording"
)

// rwSample is a wait of tid on addr from pthread_rwlock_<side>lock,
// called by fn.
func rwSample(tid int, addr uint64, side, fn string) *liveSample {
	return &liveSample{tid: tid, addr: addr, values: []int64{1, 1e6}, frames: []recording.Frame{
		{Func: "__futex_abstimed_wait_common"},
		{Func: "__pthread_rwlock_" + side + "lock_full64"},
		{Func: "pthread_rwlock_" + side + "lock"},
		{Func: fn},
	}}
}

// The three futex words of a pthread_rwlock_t each place its base: a
// writers' word by its alignment (__writers_futex at 12 is the only one
// not 8-byte aligned), a readers' word by the structure already placed,
// or by a readers' word 8 bytes on (__readers, then __wrphase_futex).
func TestRWBases(t *testing.T) {
	const base = 0x1000
	word := func(addr uint64, s ...*liveSample) rwWord {
		w := &futexWord{addr: addr, waitS: s}
		rw, ok := rwWordOf(w)
		if !ok {
			t.Fatalf("word 0x%x not judged a reader-writer lock's", addr)
		}
		return rw
	}
	for name, tc := range map[string]struct {
		words []rwWord
	}{
		"writers on both words": {[]rwWord{
			word(base+8, rwSample(1, base+8, "wr", "update")),
			word(base+12, rwSample(2, base+12, "wr", "update")),
		}},
		"readers join the writers' structure": {[]rwWord{
			word(base+8, rwSample(1, base+8, "rd", "lookup")),
			word(base+12, rwSample(2, base+12, "wr", "update")),
		}},
		"writer-preferring readers on __readers and __wrphase_futex": {[]rwWord{
			word(base, rwSample(1, base, "rd", "lookup")),
			word(base+8, rwSample(2, base+8, "rd", "lookup")),
		}},
		"a writers' word whose stack a reader's collided with": {[]rwWord{
			word(base+8, rwSample(1, base+8, "rd", "lookup")),
			word(base+12, rwSample(2, base+12, "rd", "lookup")),
		}},
	} {
		t.Run(name, func(t *testing.T) {
			bases := rwBases(tc.words)
			if len(bases) != len(tc.words) {
				t.Fatalf("%d words placed of %d", len(bases), len(tc.words))
			}
			for w, b := range bases {
				if b != base {
					t.Errorf("word 0x%x placed at base 0x%x, want 0x%x", w.addr, b, base)
				}
			}
		})
	}
}

// A word waited on from anywhere else is not a reader-writer lock's, even
// beside stacks cut at the futex call.
func TestRWWordOfOtherLocks(t *testing.T) {
	mutex := &liveSample{tid: 1, frames: []recording.Frame{{Func: "__lll_lock_wait"}, {Func: "pthread_mutex_lock"}, {Func: "f"}}}
	cut := &liveSample{tid: 2, frames: []recording.Frame{{Func: "__futex_abstimed_wait_common"}}}
	if _, ok := rwWordOf(&futexWord{waitS: []*liveSample{mutex, cut}}); ok {
		t.Error("a mutex word judged a reader-writer lock's")
	}
	if _, ok := rwWordOf(&futexWord{waitS: []*liveSample{cut}}); ok {
		t.Error("a word with only cut stacks judged a reader-writer lock's")
	}
	if _, ok := rwWordOf(&futexWord{waitS: []*liveSample{cut, rwSample(3, 0, "rd", "lookup")}}); !ok {
		t.Error("a readers' word with a cut stack beside not judged a reader-writer lock's")
	}
}
