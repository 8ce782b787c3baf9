package collector

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/recording"
)

func TestStackNamerMajorityAndAmbiguity(t *testing.T) {
	n := newStackNamer()
	fp := []uint64{0x100, 0x999} // frame-pointer walk lost the middle
	a := []uint64{0x100, 0x200, 0x300}
	b := []uint64{0x100, 0x250, 0x300}
	for i := 0; i < 3; i++ {
		n.add(70, fp, a, true)
	}
	n.add(70, fp, b, true)
	// A window whose leaf disagrees with its id is not used.
	n.add(70, fp, []uint64{0x555, 0x200}, true)

	pcs, complete, ok := n.best(70)
	if !ok || !complete || !cmp.Equal(pcs, a) {
		t.Errorf("best(70) = %x, %v, %v; want %x (3 of 4 windows)", pcs, complete, ok, a)
	}
	if _, _, ok := n.best(80); ok {
		t.Error("best of an id without windows reported ok")
	}
	ids, outvoted := n.ambiguous()
	if ids != 1 || outvoted != 1 {
		t.Errorf("ambiguous = %d ids, %d windows; want 1, 1", ids, outvoted)
	}
	if n.mismatched != 1 || n.windows != 5 {
		t.Errorf("mismatched %d of %d windows, want 1 of 5", n.mismatched, n.windows)
	}
}

func TestStackNamerTieBreak(t *testing.T) {
	n := newStackNamer()
	short := []uint64{0x100, 0x200}
	long := []uint64{0x100, 0x200, 0x300}
	n.add(100, nil, short, false)
	n.add(100, nil, long, false)
	if pcs, _, _ := n.best(100); !cmp.Equal(pcs, long) {
		t.Errorf("tie between incomplete walks: got %x, want the deeper %x", pcs, long)
	}
	n.add(200, nil, long, false)
	n.add(200, nil, short, true)
	if pcs, complete, _ := n.best(200); !cmp.Equal(pcs, short) || !complete {
		t.Errorf("tie: got %x (complete %v), want the complete walk %x", pcs, complete, short)
	}
}

func TestStackNamerMarksOnce(t *testing.T) {
	n := newStackNamer()
	marks := 0
	for i := 0; i < 3*namedAfterWindows; i++ {
		if n.add(40, []uint64{1, 2}, []uint64{1, 2}, true) {
			marks++
			if i != namedAfterWindows-1 {
				t.Errorf("marked at window %d, want %d", i+1, namedAfterWindows)
			}
		}
	}
	if marks != 1 {
		t.Errorf("marked %d times, want once", marks)
	}
	if n.add(stackLost, nil, []uint64{1}, true) || n.add(50, nil, nil, true) {
		t.Error("a window without a stack id or without pcs named something")
	}
}

// TestStackNamerKeepsLeafOnlyIdsOpen: an id whose frame-pointer walk is
// its leaf alone (a wait inside code without frame pointers) hashes one
// pc that every caller shares, so agreeing windows never name it for
// good, nor do windows that come before the id's frames are known; a
// caller that shows up late still gets its own variant.
func TestStackNamerKeepsLeafOnlyIdsOpen(t *testing.T) {
	n := newStackNamer()
	leaf := []uint64{0x7000}
	sleep := []uint64{0x7000, 0x100, 0x200}
	lock := []uint64{0x7000, 0x300, 0x200}
	for i := 0; i < 3*namedAfterWindows; i++ {
		if n.add(60, leaf, sleep, true) || n.add(60, nil, sleep, true) {
			t.Fatalf("a leaf-only id was named for good after %d agreeing windows", i+1)
		}
	}
	n.add(60, leaf, lock, true)
	if got := len(n.ids[60].variants); got != 2 {
		t.Errorf("%d variants after a late caller, want 2", got)
	}
	deep := []uint64{0x7000, 0x200}
	marked := false
	for i := 0; i < namedAfterWindows; i++ {
		marked = n.add(61, deep, sleep, true) || marked
	}
	if !marked {
		t.Error("an id with frame-pointer frames above its leaf was not named after agreeing windows")
	}
}

func TestCutUnmapped(t *testing.T) {
	fr := func(fn, mod string) recording.Frame { return recording.Frame{Func: fn, Module: mod} }
	st := cutUnmapped(recording.Stack{Frames: []recording.Frame{
		fr("__lll_lock_wake", "libc.so.6"), fr("0x10973", ""), fr("main", "app"),
	}})
	if len(st.Frames) != 1 || !st.Truncated {
		t.Errorf("got %+v, want the leaf only, truncated: an unmapped return address ends the walk", st)
	}
	raw := recording.Stack{Frames: []recording.Frame{fr("0x1000", ""), fr("0x2000", "")}}
	if got := cutUnmapped(raw); len(got.Frames) != 2 || got.Truncated {
		t.Errorf("got %+v, want an unsymbolized stack kept whole", got)
	}
	ok := recording.Stack{Frames: []recording.Frame{fr("a", "app"), fr("b", "app")}}
	if got := cutUnmapped(ok); len(got.Frames) != 2 || got.Truncated {
		t.Errorf("got %+v, want a mapped stack kept whole", got)
	}
}
