package live

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// Stable identity: the keys that name a lock and a program point the same
// way in every recording of the same program, so that compare can match a
// lock before a fix with the same lock after it, metric labels do not
// churn across restarts, and expectations can name a lock. The rule, by
// kind of lock:
//
//   - A lock in a global object (a data symbol names it): the module, the
//     symbol and the offset of the lock structure's base inside it. The
//     base is computed from each futex word's role, not taken from
//     whichever word a recording happened to see first: a glibc mutex's
//     lock word is the mutex's first word; a condition variable is waited
//     on at __g_signals[0] or [1] (bytes 40 and 44 of pthread_cond_t) and
//     quiesced at __g_refs[0] or [1] (bytes 16 and 20), which its 8-byte
//     alignment and the side of the stack tell apart. A structure folded
//     from several locks is keyed by its lowest condition variable, which
//     every recording of the lock contended sees (its waiters sleep there),
//     while the mutex beside it may be taken without contention in one
//     recording and contended in the next; without a condition variable,
//     by its lowest mutex word.
//   - A lock without a symbol (heap, stack, anonymous mappings): the
//     program point that waits for it, module-relative.
//   - A lock in memory several processes share (a futex without
//     FUTEX_PRIVATE_FLAG): the mapping's path and the offset in it of its
//     lowest word ("shared /dev/shm/pool+0x40"), never the device and
//     inode, which a file re-created at every start changes.
//   - A Go lock: its flavor and the function that waits for it (else the
//     one that releases it).
//
// Raw addresses stay in LockID.Address and the evidence, never in a key.

// condFields maps the glibc functions that wait on a pthread_cond_t's
// futex words to the offset of the word they wait on (the first of a pair
// for __g_refs and __g_signals, whose second element lies 4 bytes on).
// The structure is the same 48 bytes of 4- and 8-byte fields on every
// 64-bit glibc target.
var condFields = map[string]int64{
	"condvar_quiesce_and_switch_g1": 16, // __g_refs[2], by a signaller
	"condvar_acquire_lock":          32, // __g1_orig_size, the condvar's internal lock
	"pthread_cond_destroy":          36, // __wrefs
	"pthread_cond_wait_common":      40, // __g_signals[2], the wait itself
}

// structBase is where a lock structure starts, named from the data
// symbol of one of its futex words: the word's offset less its place in
// the structure.
type structBase struct {
	sym, module string
	// off is the structure's offset from sym; addr its address in the
	// recorded process.
	off  int64
	addr uint64
}

// name is the structure's name as the words are named: "sym+0xOFF
// (module)", or "sym (module)" at the symbol itself.
func (b structBase) name() string {
	if b.off == 0 {
		return b.sym + " (" + b.module + ")"
	}
	return fmt.Sprintf("%s+0x%x (%s)", b.sym, b.off, b.module)
}

// key is the structure's lock key: "module:sym+0xOFF".
func (b structBase) key() string {
	if b.off == 0 {
		return b.module + ":" + b.sym
	}
	return fmt.Sprintf("%s:%s+0x%x", b.module, b.sym, b.off)
}

// lockBase returns the base of g's lock structure: a folded
// reader-writer lock's (rwBase), else the base from the words whose
// place in it is known, preferring a condition variable's (the structure
// that holds the others' meaning), then the lowest base, then the name.
func lockBase(g *LockGroup) (structBase, bool) {
	if g.rwBase != 0 {
		return rwBase(g)
	}
	var best structBase
	found, bestCond := false, false
	for _, w := range g.words {
		sym, off, module, ok := parseDataName(w.name)
		if !ok {
			continue
		}
		base, placed := wordBase(w, off)
		if !placed {
			continue
		}
		cond := w.role == roleCond
		c := structBase{sym: sym, module: module, off: base, addr: w.addr - uint64(off-base)}
		better := !found || cond && !bestCond ||
			cond == bestCond && (base < best.off || base == best.off && c.key() < best.key())
		if better {
			best, found, bestCond = c, true, cond
		}
	}
	return best, found
}

// liveLockKey returns the key of a live lock group.
func (ld *Data) liveLockKey(g *LockGroup) string {
	if k := sharedKey(g); k != "" {
		return k
	}
	if b, ok := lockBase(g); ok {
		return b.key()
	}
	lf := ld.factsOf(g)
	if len(lf.waitPoints) > 0 {
		return "waited at " + lf.waitPoints[0].point.Key
	}
	if len(lf.wakePoints) > 0 {
		return "released at " + lf.wakePoints[0].point.Key
	}
	return ""
}

// sharedKey returns the key of a lock in shared memory from its lowest
// word's mapping, "" when no word of g is shared.
func sharedKey(g *LockGroup) string {
	var low *recording.SharedLock
	for _, w := range g.words {
		if sh := w.stat.Shared; sh != nil && (low == nil || sh.Path < low.Path || sh.Path == low.Path && sh.Offset < low.Offset) {
			low = sh
		}
	}
	if low == nil {
		return ""
	}
	return "shared " + low.Name()
}

// wordBase returns the offset of the base of the lock structure a futex
// word at off belongs to, and whether the word's place in it is known: off
// itself for a mutex or a word of no known lock; for a condition
// variable's word, the pthread_cond_t's first byte, when a wait stack
// names the glibc function that waited on it (the leaf-most one of
// condFields). A word seen only without stacks (short waits, lost stacks)
// cannot be placed.
func wordBase(w *futexWord, off int64) (int64, bool) {
	if w.role != roleCond {
		return off, true
	}
	for _, s := range w.waitS {
		field, ok := condField(s.userFrames())
		if !ok {
			continue
		}
		if off%8 != 0 && field != 32 && field != 36 {
			field += 4 // the second element of the pair
		}
		if off < field {
			return off, false
		}
		return off - field, true
	}
	return off, false
}

// condField returns the offset in pthread_cond_t of the word a wait stack
// waits on, from its leaf-most condvar function.
func condField(frames []recording.Frame) (int64, bool) {
	for _, f := range frames {
		if f.Kernel {
			continue
		}
		if field, ok := condFields[core.NormNative(f.Func)]; ok {
			return field, true
		}
	}
	return 0, false
}

// parseDataName splits a data symbol name "sym+0x1b0 (module)" into the
// symbol, the offset and the module; ok is false for a name without a
// module (an address no symbol covers).
func parseDataName(name string) (sym string, off int64, module string, ok bool) {
	rest, module := core.SplitModule(name)
	if module == "" || rest == "" || strings.Contains(rest, " ") {
		return "", 0, "", false
	}
	sym, hexOff, found := strings.Cut(rest, "+0x")
	if found {
		v, err := strconv.ParseInt(hexOff, 16, 64)
		if err != nil {
			return "", 0, "", false
		}
		off = v
	}
	return sym, off, module, true
}
