package collector

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

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

// maxEventWindows bounds the per-event unwound stacks kept (a few hundred
// bytes each): the most recent ones are kept, for the events of the event
// log that are recent enough to matter; older events use their stack's
// name.
const maxEventWindows = 20000

// maxStacks bounds the stacks the collector keeps (about 200 bytes each):
// far more distinct stacks than a program has call paths to its locks,
// since the probes end frame-pointer walks at the first word that is not
// a frame. A stack past it is counted (drop_stack_table_full) and its
// samples fall under "[stack lost]".
const maxStacks = 100000

// maxSymbolized bounds the cache of symbolized stacks; past it the cache
// starts afresh.
const maxSymbolized = 20000

// maxProcesses bounds the processes whose symbol tables are kept open: a
// --comm or --cgroup target that starts processes by the thousand must
// not open each one's objects. Processes past it are symbolized as raw
// addresses, and a warning says so.
const maxProcesses = 256

// stackEntry is one stack the probes stored: its process (0 for a kernel
// stack) and frames.
type stackEntry struct {
	pid uint32
	pcs []uint64
}

// resolver turns stack hashes, windows and lock addresses into symbolized
// frames, caching everything: a stack hash never changes meaning, and
// names are resolved while the target is alive.
type resolver struct {
	mu   sync.Mutex
	root string // proc root
	// procs holds each target process's symbols; rawSymbols for one
	// that could not be opened.
	procs map[uint32]procSymbols
	ksym  kernelSymbols
	// mark tells the kernel a stack is named (ct_named).
	mark func(hash uint64) error

	stacks    map[uint64]stackEntry
	namer     *stackNamer
	eventPCs  map[evKey]unwound
	eventFIFO []evKey
	// openPCs holds the unwound stacks of calls in progress (nil pcs when
	// the unwind failed), by thread and start.
	openPCs map[evKey]unwound
	// symCache holds symbolized stacks by symKey; keyBuf is the buffer
	// the key of a lookup is built in.
	symCache map[string]recording.Stack
	keyBuf   []byte
	kCache   map[uint64]recording.Stack
	locks    map[lockKey]lockInfo
	maps     map[uint32][]*procfs.ProcMap

	lastRefresh map[uint32]time.Time
	counters    map[string]uint64
}

// symWarnings returns the warnings of every process's symbolizer so far,
// each prefixed with its process.
func (r *resolver) symWarnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	pids := make([]uint32, 0, len(r.procs))
	for pid := range r.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var out []string
	for _, pid := range pids {
		for _, w := range r.procs[pid].Warnings() {
			out = append(out, fmt.Sprintf("pid %d: %s", pid, w))
		}
	}
	return out
}

// symKey names a symbolized stack, frames pcs of process pid, in r.keyBuf:
// a map looked up with string(key) copies nothing, and symbolizing an
// event log looks up one stack per event.
func (r *resolver) symKey(pid uint32, pcs []uint64) []byte {
	b := binary.LittleEndian.AppendUint32(r.keyBuf[:0], pid)
	for _, pc := range pcs {
		b = binary.LittleEndian.AppendUint64(b, pc)
	}
	r.keyBuf = b
	return b
}

// lockInfo is what the resolver knows of one futex word.
type lockInfo struct {
	// name is the data symbol containing it ("" on heap and stack, and
	// in shared memory without symbols).
	name string
	// shared is the mapping identity of a word in shared memory, nil
	// for a process-private word.
	shared *recording.SharedLock
}

type unwound struct {
	pcs      []uint64
	complete bool
}

func newResolver(root string, ksym kernelSymbols, mark func(uint64) error) *resolver {
	return &resolver{
		root:        root,
		procs:       map[uint32]procSymbols{},
		ksym:        ksym,
		mark:        mark,
		stacks:      map[uint64]stackEntry{},
		namer:       newStackNamer(),
		eventPCs:    map[evKey]unwound{},
		openPCs:     map[evKey]unwound{},
		symCache:    map[string]recording.Stack{},
		kCache:      map[uint64]recording.Stack{},
		locks:       map[lockKey]lockInfo{},
		maps:        map[uint32][]*procfs.ProcMap{},
		lastRefresh: map[uint32]time.Time{},
		counters:    map[string]uint64{},
	}
}

// addProcess registers the symbols of process pid; false when the
// resolver keeps maxProcesses already (the process's frames stay raw).
func (r *resolver) addProcess(pid uint32, sym procSymbols) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.procs[pid]; ok {
		return true
	}
	if len(r.procs) >= maxProcesses {
		return false
	}
	r.procs[pid] = sym
	return true
}

// hasProcess reports whether process pid's symbols are registered.
func (r *resolver) hasProcess(pid uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.procs[pid]
	return ok
}

// close closes every process's symbols; frames are raw afterwards.
func (r *resolver) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid, sym := range r.procs {
		sym.Close()
		r.procs[pid] = rawSymbols{}
	}
}

// sym returns process pid's symbols. Caller holds r.mu.
func (r *resolver) sym(pid uint32) procSymbols {
	if s, ok := r.procs[pid]; ok {
		return s
	}
	return rawSymbols{}
}

// addStacks keeps the stacks the probes stored.
func (r *resolver) addStacks(st []storedStack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range st {
		if _, ok := r.stacks[s.hash]; ok {
			continue
		}
		if len(r.stacks) >= maxStacks {
			r.counters["table_full"]++
			continue
		}
		r.stacks[s.hash] = stackEntry{pid: s.pid, pcs: s.pcs}
	}
}

// userCounters returns the resolver's own counters: windows received,
// unwound, incomplete, whose leaf disagreed with their stack, stacks whose
// windows disagreed among themselves, and stacks not kept.
func (r *resolver) userCounters() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, outvoted := r.namer.ambiguous()
	return map[string]uint64{
		"info_window_received":      r.counters["windows"],
		"info_window_unwound":       r.counters["unwound"],
		"info_window_incomplete":    r.counters["incomplete"],
		"info_window_unusable":      r.counters["unusable"],
		"info_window_leaf_mismatch": r.namer.mismatched,
		"info_stack_ambiguous":      ids,
		"info_window_outvoted":      outvoted,
		"info_event_window_evicted": r.counters["event_evicted"],
		"info_stacks_kept":          uint64(len(r.stacks)),
		"drop_stack_table_full":     r.counters["table_full"],
	}
}

// rawStack returns the frame-pointer frames the probes stored for a stack.
// Caller holds r.mu.
func (r *resolver) rawStack(hash uint64) (stackEntry, bool) {
	e, ok := r.stacks[hash]
	return e, ok
}

// addWindow unwinds one stack window and records what it says about its
// stack and about its event.
func (r *resolver) addWindow(h windowHdr, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counters["windows"]++
	pcs, complete := r.sym(h.PID).Unwind(symbolize.Regs{IP: h.IP, SP: h.SP, BP: h.BP}, data)
	if len(pcs) == 0 {
		r.counters["unusable"]++
		return
	}
	r.counters["unwound"]++
	if !complete {
		r.counters["incomplete"]++
	}
	k := evKey{h.TID, h.TS}
	if _, ok := r.eventPCs[k]; !ok {
		if len(r.eventFIFO) >= maxEventWindows {
			delete(r.eventPCs, r.eventFIFO[0])
			r.eventFIFO = r.eventFIFO[1:]
			r.counters["event_evicted"]++
		}
		r.eventFIFO = append(r.eventFIFO, k)
	}
	r.eventPCs[k] = unwound{pcs, complete}
	if h.Stack < stackFirst {
		return
	}
	e, _ := r.rawStack(h.Stack)
	if r.namer.add(h.Stack, e.pcs, pcs, complete) && r.mark != nil {
		r.mark(h.Stack)
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

// addOpen unwinds a copy of the stack of the call k of process pid in
// progress.
func (r *resolver) addOpen(pid uint32, k evKey, regs symbolize.Regs, window []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pcs, complete := r.sym(pid).Unwind(regs, window)
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

// openStack returns the symbolized stack of the call of thread tid of
// process pid started at ts and still in progress, false when none was
// unwound.
func (r *resolver) openStack(pid, tid uint32, ts uint64) (recording.Stack, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.openPCs[evKey{tid, ts}]
	if !ok || len(u.pcs) == 0 {
		return recording.Stack{}, false
	}
	st := r.symbolize(pid, u.pcs)
	st.Truncated = !u.complete
	return st, true
}

// userStack returns the symbolized user stack of hash.
func (r *resolver) userStack(hash uint64) recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return copyStack(r.userStackShared(hash))
}

// nameUserStack symbolizes the stack of hash into the cache, copying
// nothing: what a drain does for the stacks it brought.
func (r *resolver) nameUserStack(hash uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.userStackShared(hash)
}

// userStackShared is the stack of hash with the cache's frames, which
// the caller must not change. Caller holds r.mu.
func (r *resolver) userStackShared(hash uint64) recording.Stack {
	e, ok := r.rawStack(hash)
	if !ok {
		return recording.Stack{}
	}
	if pcs, complete, ok := r.namer.best(hash); ok {
		st := r.symbolizeShared(e.pid, pcs)
		st.Truncated = !complete
		return st
	}
	if len(e.pcs) == 0 {
		return recording.Stack{}
	}
	st := r.symbolizeShared(e.pid, e.pcs)
	st.Truncated = len(e.pcs) >= stackDepth
	return cutUnmapped(st)
}

// cutUnmapped ends a frame-pointer stack at its first return address that
// lies in no mapping of the target. Code built without frame pointers
// (Debian's glibc) leaves rbp holding data, and a frame-pointer walk can
// then read "return addresses" out of it: an address outside every
// mapping cannot be one, and nothing above it can be trusted. A stack
// whose leaf is unmapped too (no symbolizer) is left as it is.
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
// taken, else the name of its stack. Its frames are the symbolizer
// cache's, shared with every event of the same stack: the caller must not
// change them (a copy per event would be most of what converting the
// event log allocates).
func (r *resolver) eventStack(pid, tid uint32, ts uint64, hash uint64) recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.eventPCs[evKey{tid, ts}]; ok {
		e, known := r.rawStack(hash)
		if hash < stackFirst || !known || len(e.pcs) == 0 || e.pcs[0] == u.pcs[0] {
			st := r.symbolizeShared(pid, u.pcs)
			st.Truncated = !u.complete
			return st
		}
	}
	if hash < stackFirst {
		return recording.Stack{}
	}
	return r.userStackShared(hash)
}

// symbolize names pcs of process pid, re-reading the process's mappings
// (at most every refreshEvery) when an address lies in no known mapping.
// Caller holds r.mu.
func (r *resolver) symbolize(pid uint32, pcs []uint64) recording.Stack {
	return copyStack(r.symbolizeShared(pid, pcs))
}

// symbolizeShared is symbolize with the cache's frames, which the caller
// must not change. Caller holds r.mu.
func (r *resolver) symbolizeShared(pid uint32, pcs []uint64) recording.Stack {
	if st, ok := r.symCache[string(r.symKey(pid, pcs))]; ok {
		return st
	}
	sym := r.sym(pid)
	st := sym.Stack(pcs)
	if hasUnmapped(st) && time.Since(r.lastRefresh[pid]) >= refreshEvery {
		r.lastRefresh[pid] = time.Now()
		if sym.Refresh() == nil {
			st = sym.Stack(pcs)
		}
	}
	if len(r.symCache) >= maxSymbolized {
		r.symCache = map[string]recording.Stack{}
	}
	// Symbolizing may have used the buffer: the key is built again.
	r.symCache[string(r.symKey(pid, pcs))] = st
	return st
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

// kernelStack returns the symbolized kernel stack of hash: the cache's
// frames, which the caller must not change. A copy for each event that
// names one (a PostgreSQL backend's latch sleeps, tens of thousands a
// window) would be the largest allocation of a window's conversion.
func (r *resolver) kernelStack(hash uint64) recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.kCache[hash]; ok {
		return st
	}
	e, ok := r.rawStack(hash)
	if !ok {
		return recording.Stack{}
	}
	var st recording.Stack
	for _, pc := range e.pcs {
		f := r.ksym.Frame(pc)
		f.Kernel = true
		st.Frames = append(st.Frames, f)
	}
	r.kCache[hash] = st
	return st
}

// lock names a futex word, resolved once: by the data symbol containing it
// (a name without a symbol, "module+0x…", still says where the word
// lives; heap and stack words get ""), and for a word the process shares
// with others (a futex without FUTEX_PRIVATE_FLAG in a MAP_SHARED
// mapping), by the mapping's device, inode and offset, which are the same
// in every process that maps it.
func (r *resolver) lock(k lockKey) lockInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if li, ok := r.locks[k]; ok {
		return li
	}
	var li lockInfo
	li.name, _ = r.sym(k.PID).DataSymbol(k.Addr)
	if k.Shared != 0 {
		li.shared = r.sharedIdentity(k.PID, k.Addr)
	}
	r.locks[k] = li
	return li
}

// display names the word: by its data symbol, else by its shared mapping.
func (li lockInfo) display() string {
	if li.name == "" && li.shared != nil {
		return li.shared.Name()
	}
	return li.name
}

// sharedIdentity returns the identity of a word at addr of process pid in
// a shared mapping, nil when the mapping is private or unknown. Caller
// holds r.mu.
func (r *resolver) sharedIdentity(pid uint32, addr uint64) *recording.SharedLock {
	find := func() *procfs.ProcMap {
		for _, m := range r.maps[pid] {
			if uint64(m.StartAddr) <= addr && addr < uint64(m.EndAddr) {
				return m
			}
		}
		return nil
	}
	m := find()
	if m == nil {
		if maps, err := readMaps(r.root, pid); err == nil {
			r.maps[pid] = maps
			m = find()
		}
	}
	if m == nil || m.Perms == nil || !m.Perms.Shared {
		return nil
	}
	return &recording.SharedLock{
		Dev:    fmt.Sprintf("%02x:%02x", unix.Major(m.Dev), unix.Minor(m.Dev)),
		Inode:  m.Inode,
		Offset: uint64(m.Offset) + addr - uint64(m.StartAddr),
		Path:   m.Pathname,
	}
}

// readMaps reads /proc/PID/maps under the proc root ("" is /proc).
func readMaps(root string, pid uint32) ([]*procfs.ProcMap, error) {
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, err
	}
	p, err := fs.Proc(int(pid))
	if err != nil {
		return nil, err
	}
	return p.ProcMaps()
}
