package live

import (
	"fmt"
	"sort"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
)

// Reader-writer locks. A glibc pthread_rwlock_t has three futex words,
// each waited on by one side: __readers (byte 0; readers, when writers
// are preferred), __wrphase_futex (byte 8; readers waiting for a write
// phase to end, writers for a read phase to end) and __writers_futex
// (byte 12; writers waiting for the writer before them). Judged one word
// at a time they read as two or three locks, each with half the story
// and a point inside glibc; folded they are one lock at the structure's
// base, whose readers and writers are counted apart (core.RWFacts).

// rwSide is which side of a reader-writer lock a stack waits for.
type rwSide uint8

const (
	rwNone rwSide = iota
	rwReader
	rwWriter
)

// rwSideOf returns the side the leaf-most pthread_rwlock function of a
// stack takes.
func rwSideOf(s *liveSample) rwSide {
	for _, f := range s.userFrames() {
		n := core.NormNative(f.Func)
		if !strings.HasPrefix(n, "pthread_rwlock_") {
			continue
		}
		switch {
		case strings.Contains(n, "rdlock"):
			return rwReader
		case strings.Contains(n, "wrlock"):
			return rwWriter
		}
	}
	return rwNone
}

// rwWord is what the wait stacks of a futex word say of it: whether it is
// a word of a pthread_rwlock_t, and which sides wait on it.
type rwWord struct {
	w               *futexWord
	readers, writer bool
}

// rwWordOf judges a word: a reader-writer lock's word when some wait
// stack waits inside pthread_rwlock_rdlock or _wrlock and every other one
// tells nothing (a stack cut at glibc's futex call, which the collector's
// walk leaves when glibc's frame records break off).
func rwWordOf(w *futexWord) (rwWord, bool) {
	rw := rwWord{w: w}
	for _, s := range w.waitS {
		if s.synthetic() {
			continue
		}
		switch rwSideOf(s) {
		case rwReader:
			rw.readers = true
		case rwWriter:
			rw.writer = true
		default:
			if !cutAtFutex(s) {
				return rw, false
			}
		}
	}
	return rw, rw.readers || rw.writer
}

// cutAtFutex reports whether a stack holds nothing but lock machinery and
// glibc's futex wrappers: where it was waited from is unknown.
func cutAtFutex(s *liveSample) bool {
	for _, f := range s.userFrames() {
		if !liveMachinery(f) && !strings.HasPrefix(core.NormNative(f.Func), "futex") {
			return false
		}
	}
	return true
}

// rwBases places the reader-writer words of a recording in their
// structures and returns each word's structure base. A word writers wait
// on is __writers_futex when it is not 8-byte aligned and __wrphase_futex
// when it is (the structure is 8-byte aligned; writers never wait on
// __readers). A word only readers wait on is __readers or __wrphase_futex:
// it joins a structure already placed when it lies at its base or 8 bytes
// in, is __readers when another reader word lies 8 bytes on, and is
// otherwise taken as __wrphase_futex, where the readers of glibc's default
// (reader-preferring) lock wait.
func rwBases(words []rwWord) map[*futexWord]uint64 {
	sort.Slice(words, func(i, j int) bool { return words[i].w.addr < words[j].w.addr })
	base := map[*futexWord]uint64{}
	placed := map[uint64]bool{}
	for _, rw := range words {
		if !rw.writer {
			continue
		}
		b := rw.w.addr - 8
		if rw.w.addr%8 != 0 {
			b = rw.w.addr - 12
		}
		base[rw.w], placed[b] = b, true
	}
	at := map[uint64]bool{}
	for _, rw := range words {
		at[rw.w.addr] = true
	}
	for _, rw := range words {
		if rw.writer {
			continue
		}
		a := rw.w.addr
		switch {
		case a%8 != 0:
			base[rw.w] = a - 12 // only __writers_futex is not 8-byte aligned
		case placed[a]:
			base[rw.w] = a
		case placed[a-8]:
			base[rw.w] = a - 8
		case at[a+8] && a%8 == 0:
			base[rw.w] = a
		default:
			base[rw.w] = a - 8
		}
	}
	return base
}

// foldRWLocks folds the groups of one pthread_rwlock_t into one lock. A
// group folds only when every word of it is a reader-writer lock's word.
func (ld *Data) foldRWLocks(groups []*LockGroup) []*LockGroup {
	var words []rwWord
	of := map[*futexWord]*LockGroup{}
	for _, g := range groups {
		var gw []rwWord
		for _, w := range g.words {
			rw, ok := rwWordOf(w)
			if !ok {
				gw = nil
				break
			}
			gw = append(gw, rw)
		}
		for _, rw := range gw {
			of[rw.w] = g
		}
		words = append(words, gw...)
	}
	if len(words) == 0 {
		return groups
	}
	base := rwBases(words)
	byBase := map[uint64][]*LockGroup{}
	var bases []uint64
	for _, rw := range words {
		b := base[rw.w]
		g := of[rw.w]
		if len(byBase[b]) == 0 {
			bases = append(bases, b)
		}
		if !containsGroup(byBase[b], g) {
			byBase[b] = append(byBase[b], g)
		}
	}
	folded := map[*LockGroup]*LockGroup{}
	for _, b := range bases {
		gs := byBase[b]
		rw := &LockGroup{waiters: map[int]bool{}, wakers: map[int]bool{}, owners: map[int]uint64{}, rwBase: b}
		for _, g := range gs {
			if folded[g] != nil {
				continue // a group whose words span two bases stays with the first
			}
			rw.words = append(rw.words, g.words...)
			folded[g] = rw
		}
		if len(rw.words) == 0 {
			continue
		}
		sort.Slice(rw.words, func(i, j int) bool { return rw.words[i].addr < rw.words[j].addr })
		ld.sumGroup(rw)
	}
	var out []*LockGroup
	done := map[*LockGroup]bool{}
	for _, g := range groups {
		rw := folded[g]
		if rw == nil {
			out = append(out, g)
			continue
		}
		if !done[rw] {
			done[rw] = true
			out = append(out, rw)
		}
	}
	return out
}

func containsGroup(gs []*LockGroup, g *LockGroup) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// rwBase returns the base of a folded pthread_rwlock_t named from the
// data symbol of one of its words, false when no word has one (the key
// then falls back to the program point).
func rwBase(g *LockGroup) (structBase, bool) {
	for _, w := range g.words {
		sym, off, module, ok := parseDataName(w.name)
		if !ok {
			continue
		}
		if b := off - int64(w.addr-g.rwBase); b >= 0 {
			return structBase{sym: sym, module: module, off: b, addr: g.rwBase}, true
		}
	}
	return structBase{}, false
}

// rwCase fills the reader-writer facts of a folded pthread_rwlock_t:
// its name and address at the base, and its readers and writers apart.
func (ld *Data) rwCase(g *LockGroup, c *core.LockCase) {
	if g.rwBase == 0 {
		return
	}
	c.ID.Address = fmt.Sprintf("0x%x", g.rwBase)
	if b, ok := rwBase(g); ok {
		c.ID.Name = b.name()
	}
	c.What = lockWords(&c.ID)
	if c.Point.Function != "" {
		c.What += " in " + core.PointString(c.Point)
	}
	// A thread is a writer when any of its waits on the lock is inside
	// pthread_rwlock_wrlock or on __writers_futex, which only writers wait
	// on (whatever the stack says: the collector may give a thread's wait
	// the stack of another that collided with it), a reader otherwise: its waits that show a
	// side show rdlock, and those cut at the futex call are a reader's
	// too (a writer's would be told by its other waits). Folded samples of
	// exited threads (no thread id) are left out.
	writers := map[int]bool{}
	for _, s := range g.waitSamples() {
		if s.tid != 0 && (rwSideOf(s) == rwWriter || s.addr == g.rwBase+12) {
			writers[s.tid] = true
		}
	}
	f := &core.RWFacts{}
	readers := map[int]bool{}
	for _, s := range g.waitSamples() {
		if s.tid == 0 {
			continue
		}
		n, ns := value(s, 0), value(s, 1)
		if writers[s.tid] {
			f.WriterWaits += n
			f.WriterWaitNS += ns
			if s.addr == g.rwBase+8 {
				f.ReadPhaseWaits += n
				f.ReadPhaseWaitNS += ns
			}
			continue
		}
		f.ReaderWaits += n
		f.ReaderWaitNS += ns
		readers[s.tid] = true
	}
	f.Readers, f.Writers = len(readers), len(writers)
	c.RW = f
}
