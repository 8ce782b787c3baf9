package collector

import (
	"fmt"
	"sync"
	"time"

	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// procSymbols is what the collector needs from a symbolize.Process (an
// interface so that unit tests can stand in for a live process).
type procSymbols interface {
	Stack(pcs []uint64) recording.Stack
	Unwind(r symbolize.Regs, window []byte) ([]uint64, bool)
	DataSymbol(addr uint64) (string, bool)
	Refresh() error
	Close() error
	// Warnings says what lookups could not do (symbolize.Process).
	Warnings() []string
}

// kernelSymbols names kernel addresses (symbolize.Kernel).
type kernelSymbols interface {
	Frame(addr uint64) recording.Frame
}

// rawSymbols stands in when the target's objects cannot be read: every
// address becomes a "0x…" frame and windows cannot be unwound.
type rawSymbols struct{}

func (rawSymbols) Stack(pcs []uint64) recording.Stack {
	st := recording.Stack{Frames: make([]recording.Frame, len(pcs))}
	for i, pc := range pcs {
		st.Frames[i] = recording.Frame{Func: fmt.Sprintf("0x%x", pc), Addr: pc}
	}
	return st
}
func (rawSymbols) Unwind(symbolize.Regs, []byte) ([]uint64, bool) { return nil, false }
func (rawSymbols) DataSymbol(uint64) (string, bool)               { return "", false }
func (rawSymbols) Refresh() error                                 { return nil }
func (rawSymbols) Close() error                                   { return nil }
func (rawSymbols) Warnings() []string                             { return nil }

// rawKernel names kernel addresses "0x…" when kallsyms is unreadable.
type rawKernel struct{}

func (rawKernel) Frame(addr uint64) recording.Frame {
	return recording.Frame{Func: fmt.Sprintf("0x%x", addr), Addr: addr, Kernel: true}
}

// refreshEvery bounds how often an unknown address makes the resolver
// re-read /proc/PID/maps: a program that keeps mapping code (a JIT) must
// not turn every stack into a maps read.
const refreshEvery = 500 * time.Millisecond

// evKey identifies an event by thread and start time, to find the window
// taken for that very event.
type evKey struct {
	tid uint32
	ts  uint64
}

// maxEventWindows bounds the per-event unwound stacks kept (about 1 KB
// each at most): past it, events use their stack id's name.
const maxEventWindows = 200000

// resolver turns stack ids, windows and lock addresses into symbolized
// frames, caching everything: stack ids never change meaning (no
// BPF_F_REUSE_STACKID), and names are resolved while the target is alive.
// symWarnings returns the symbolizer's warnings so far.
func (r *resolver) symWarnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sym.Warnings()
}

type resolver struct {
	mu   sync.Mutex
	sym  procSymbols
	ksym kernelSymbols
	// fetch reads a stack id from the kernel's stack map.
	fetch func(id int32) ([]uint64, error)
	// mark tells the kernel an id is named (ct_named).
	mark func(id int32) error

	raw      map[int32][]uint64
	namer    *stackNamer
	eventPCs map[evKey]unwound
	// openPCs holds the unwound stacks of calls in progress (nil pcs when
	// the unwind failed), by thread and start.
	openPCs  map[evKey]unwound
	symCache map[string]recording.Stack
	kCache   map[int32]recording.Stack
	locks    map[uint64]string

	lastRefresh time.Time
	counters    map[string]uint64
}

type unwound struct {
	pcs      []uint64
	complete bool
}

func newResolver(sym procSymbols, ksym kernelSymbols, fetch func(int32) ([]uint64, error), mark func(int32) error) *resolver {
	return &resolver{
		sym:      sym,
		ksym:     ksym,
		fetch:    fetch,
		mark:     mark,
		raw:      map[int32][]uint64{},
		namer:    newStackNamer(),
		eventPCs: map[evKey]unwound{},
		openPCs:  map[evKey]unwound{},
		symCache: map[string]recording.Stack{},
		kCache:   map[int32]recording.Stack{},
		locks:    map[uint64]string{},
		counters: map[string]uint64{},
	}
}

// userCounters returns the resolver's own counters: windows received,
// unwound, incomplete, whose leaf disagreed with their id, and stack ids
// whose windows disagreed among themselves.
func (r *resolver) userCounters() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, outvoted := r.namer.collisions()
	return map[string]uint64{
		"info_window_received":      r.counters["windows"],
		"info_window_unwound":       r.counters["unwound"],
		"info_window_incomplete":    r.counters["incomplete"],
		"info_window_unusable":      r.counters["unusable"],
		"info_window_leaf_mismatch": r.namer.mismatched,
		"info_stack_id_collision":   ids,
		"info_window_outvoted":      outvoted,
		"drop_window_event_cap":     r.counters["event_cap"],
	}
}

// rawStack returns the kernel's frame-pointer stack of id (cached).
func (r *resolver) rawStack(id int32) []uint64 {
	if id < 0 {
		return nil
	}
	if pcs, ok := r.raw[id]; ok {
		return pcs
	}
	pcs, err := r.fetch(id)
	if err != nil {
		return nil
	}
	r.raw[id] = pcs
	return pcs
}

// addWindow unwinds one stack window and records what it says about its
// stack id and about its event.
func (r *resolver) addWindow(h windowHdr, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counters["windows"]++
	pcs, complete := r.sym.Unwind(symbolize.Regs{IP: h.IP, SP: h.SP, BP: h.BP}, data)
	if len(pcs) == 0 {
		r.counters["unusable"]++
		return
	}
	r.counters["unwound"]++
	if !complete {
		r.counters["incomplete"]++
	}
	if len(r.eventPCs) < maxEventWindows {
		r.eventPCs[evKey{h.TID, h.TS}] = unwound{pcs, complete}
	} else {
		r.counters["event_cap"]++
	}
	if h.StackID < 0 {
		return
	}
	if r.namer.add(h.StackID, r.rawStack(h.StackID), pcs, complete) && r.mark != nil {
		r.mark(h.StackID)
	}
}

// hasOpen reports whether the stack of the call k in progress was
// unwound already (or failed to).
func (r *resolver) hasOpen(k evKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.openPCs[k]
	return ok
}

// addOpen unwinds a copy of the stack of the call k in progress.
func (r *resolver) addOpen(k evKey, regs symbolize.Regs, window []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pcs, complete := r.sym.Unwind(regs, window)
	r.openPCs[k] = unwound{pcs, complete}
}

// keepOpen forgets the stacks of calls no longer in progress.
func (r *resolver) keepOpen(open map[evKey]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.openPCs {
		if !open[k] {
			delete(r.openPCs, k)
		}
	}
}

// openStack returns the symbolized stack of the call of tid started at ts
// and still in progress, false when none was unwound.
func (r *resolver) openStack(tid uint32, ts uint64) (recording.Stack, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.openPCs[evKey{tid, ts}]
	if !ok || len(u.pcs) == 0 {
		return recording.Stack{}, false
	}
	st := r.symbolize(u.pcs)
	st.Truncated = !u.complete
	return st, true
}

// userStack returns the symbolized user stack named by id.
func (r *resolver) userStack(id int32) recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.userStackLocked(id)
}

func (r *resolver) userStackLocked(id int32) recording.Stack {
	if pcs, complete, ok := r.namer.best(id); ok {
		st := r.symbolize(pcs)
		st.Truncated = !complete
		return st
	}
	pcs := r.rawStack(id)
	if len(pcs) == 0 {
		return recording.Stack{}
	}
	st := r.symbolize(pcs)
	st.Truncated = len(pcs) >= stackDepth
	return cutUnmapped(st)
}

// cutUnmapped ends a frame-pointer stack at its first return address that
// lies in no mapping of the target. Code built without frame pointers
// (Debian's glibc) leaves rbp holding data, and the kernel's walk then
// reads "return addresses" out of it: an address outside every mapping
// cannot be one, and nothing above it can be trusted. A stack whose leaf is
// unmapped too (no symbolizer) is left as it is.
func cutUnmapped(st recording.Stack) recording.Stack {
	if len(st.Frames) == 0 || st.Frames[0].Module == "" {
		return st
	}
	for i := 1; i < len(st.Frames); i++ {
		if f := st.Frames[i]; f.Module == "" && !f.Kernel {
			st.Frames = st.Frames[:i]
			st.Truncated = true
			break
		}
	}
	return st
}

// eventStack returns the stack of one event: its own window when one was
// taken, else the name of its stack id.
func (r *resolver) eventStack(tid uint32, ts uint64, id int32) recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.eventPCs[evKey{tid, ts}]; ok && (id < 0 || len(r.rawStack(id)) == 0 || r.rawStack(id)[0] == u.pcs[0]) {
		st := r.symbolize(u.pcs)
		st.Truncated = !u.complete
		return st
	}
	if id < 0 {
		return recording.Stack{}
	}
	return r.userStackLocked(id)
}

// symbolize names pcs, re-reading the target's mappings (at most every
// refreshEvery) when an address lies in no known mapping.
func (r *resolver) symbolize(pcs []uint64) recording.Stack {
	k := pcsKey(pcs)
	if st, ok := r.symCache[k]; ok {
		return copyStack(st)
	}
	st := r.sym.Stack(pcs)
	if hasUnmapped(st) && time.Since(r.lastRefresh) >= refreshEvery {
		r.lastRefresh = time.Now()
		if r.sym.Refresh() == nil {
			st = r.sym.Stack(pcs)
		}
	}
	r.symCache[k] = st
	return copyStack(st)
}

// hasUnmapped reports whether a frame lies outside every known mapping.
func hasUnmapped(st recording.Stack) bool {
	for _, f := range st.Frames {
		if f.Module == "" && !f.Kernel {
			return true
		}
	}
	return false
}

func copyStack(st recording.Stack) recording.Stack {
	return recording.Stack{Frames: append([]recording.Frame(nil), st.Frames...), Truncated: st.Truncated}
}

// kernelStack returns the symbolized kernel stack id.
func (r *resolver) kernelStack(id int32) recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.kCache[id]; ok {
		return copyStack(st)
	}
	pcs := r.rawStack(id)
	var st recording.Stack
	for _, pc := range pcs {
		f := r.ksym.Frame(pc)
		f.Kernel = true
		st.Frames = append(st.Frames, f)
	}
	r.kCache[id] = st
	return copyStack(st)
}

// lockName names a futex address by the data symbol containing it ("" on
// heap and stack), resolved once.
func (r *resolver) lockName(addr uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.locks[addr]; ok {
		return n
	}
	// A name without a symbol ("module+0x…", ok false) still says where
	// the word lives; heap and stack addresses get "".
	n, _ := r.sym.DataSymbol(addr)
	r.locks[addr] = n
	return n
}
