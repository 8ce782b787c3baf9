package collector

import (
	"encoding/binary"
	"slices"
)

// namedAfterWindows is how many agreeing windows name a stack for good:
// after that the kernel stops sending windows for it (ct_named), so the
// window budget goes to stacks not yet named. 16 windows tell a dominant
// caller from a split between two with little doubt.
const namedAfterWindows = 16

// stackNamer joins stack windows unwound in user space to the kernel's
// frame-pointer stacks. The kernel aggregates by the hash of a
// frame-pointer walk (cheap, and exact for code with frame pointers); a
// frame-pointer walk through code without them (Debian's glibc) loses
// frames, and several call sites can then share one stack. Each window
// names its stack with the stack the .eh_frame unwinder found; a stack
// keeps the unwound stack most of its windows agree on, and stacks whose
// windows disagree are counted as ambiguous.
type stackNamer struct {
	ids map[uint64]*idWindows
	// windows counts windows added; mismatched counts windows whose leaf
	// differs from their stack's frame-pointer leaf (not used for naming).
	windows, mismatched uint64
}

// maxNamedStacks bounds the stacks the namer keeps windows for: each holds
// a few unwound variants of a few hundred bytes. Past it, new stacks keep
// their frame-pointer frames.
const maxNamedStacks = 50000

// idWindows is what the windows of one stack said.
type idWindows struct {
	total    int
	variants map[string]*variant
	// marked is set once the id is named in the kernel.
	marked bool
}

// variant is one distinct unwound stack seen for an id.
type variant struct {
	pcs      []uint64
	n        int
	complete bool
}

func newStackNamer() *stackNamer {
	return &stackNamer{ids: map[uint64]*idWindows{}}
}

// pcsKey encodes pcs as a map key.
func pcsKey(pcs []uint64) string {
	b := make([]byte, 8*len(pcs))
	for i, pc := range pcs {
		binary.LittleEndian.PutUint64(b[8*i:], pc)
	}
	return string(b)
}

// add records that a window of stack id unwound to pcs. fp is the stack's
// frame-pointer frames (nil when unknown); a window whose leaf disagrees
// with it is counted and ignored, and an id is named for good only once
// its frame-pointer walk is known to reach past the leaf. It reports
// whether the stack just reached namedAfterWindows windows and should be
// marked named in the kernel.
func (n *stackNamer) add(id uint64, fp, pcs []uint64, complete bool) (markNow bool) {
	n.windows++
	if id < stackFirst || len(pcs) == 0 {
		return false
	}
	if len(fp) > 0 && fp[0] != pcs[0] {
		n.mismatched++
		return false
	}
	w := n.ids[id]
	if w == nil {
		if len(n.ids) >= maxNamedStacks {
			return false
		}
		w = &idWindows{variants: map[string]*variant{}}
		n.ids[id] = w
	}
	w.total++
	k := pcsKey(pcs)
	v := w.variants[k]
	if v == nil {
		v = &variant{pcs: append([]uint64(nil), pcs...), complete: complete}
		w.variants[k] = v
	}
	v.n++
	// An id whose windows disagree is never named for good: its waits
	// are named per thread and word (wordstacks.go), which needs windows
	// to keep coming for it. Nor is one whose frame-pointer walk is its
	// leaf alone, or not known yet (a window can come before the drain
	// that brings its stack): the hash of one pc is shared by every
	// caller of the function the thread sleeps in, and windows that agree
	// so far only say which callers came first. A JVM shows it: its
	// threads park and sleep through one glibc wait, and in a recording
	// whose first 16 windows of that id were all sleeps, every lock wait
	// after them was named a sleep.
	if !w.marked && w.total >= namedAfterWindows && len(w.variants) == 1 && len(fp) > 1 {
		w.marked = true
		return true
	}
	return false
}

// best returns the stack most windows of id unwound to (ties go to a
// complete walk, then the deeper one), whether that walk was complete, and
// false when no window named id.
func (n *stackNamer) best(id uint64) (pcs []uint64, complete, ok bool) {
	w := n.ids[id]
	if w == nil || len(w.variants) == 0 {
		return nil, false, false
	}
	// One pass for the best, no sort: converting events asks this for
	// each event with a hashed stack (a sort per call, with its slice,
	// would cost a tenth of contend top's CPU).
	var best *variant
	for _, v := range w.variants {
		if best == nil || beats(v, best) {
			best = v
		}
	}
	return best.pcs, best.complete, true
}

// beats orders the variants of a stack: more windows, then a complete
// walk, then the deeper one, then by the addresses (so that the choice
// does not depend on map order).
func beats(a, b *variant) bool {
	if a.n != b.n {
		return a.n > b.n
	}
	if a.complete != b.complete {
		return a.complete
	}
	if len(a.pcs) != len(b.pcs) {
		return len(a.pcs) > len(b.pcs)
	}
	return slices.Compare(a.pcs, b.pcs) < 0
}

// ambiguous returns how many stacks had windows that unwound to different
// stacks (their aggregates are attributed to the most common one) and how
// many windows disagreed with the stack their stack was given.
func (n *stackNamer) ambiguous() (ids, outvoted uint64) {
	for id, w := range n.ids {
		if len(w.variants) < 2 {
			continue
		}
		ids++
		best, _, _ := n.best(id)
		outvoted += uint64(w.total - w.variants[pcsKey(best)].n)
	}
	return ids, outvoted
}
