// Package symbolize turns addresses of a live process into frames: it reads
// /proc/PID/maps once (and again on Refresh), computes each mapping's load
// bias from its file offset and the object's ELF program headers, and names
// addresses through the object's own tables:
//
//   - ELF objects: .symtab and .dynsym, plus the .symtab and DWARF of a
//     separate debug file found by build id
//     (<debugdir>/.build-id/xx/rest.debug) or by .gnu_debuglink (next to the
//     object, in its .debug/ subdirectory, and under <debugdir>/<dir of the
//     object>);
//   - Go binaries: the pclntab (stripped `-ldflags=-s -w` binaries keep it);
//   - the kernel: /proc/kallsyms (see Kernel).
//
// An address is named after a symbol only when it falls inside that
// symbol's size (a function symbol without a size, as some hand-written
// assembly has, takes the extent of the unwind-table entry that starts at
// it). Otherwise its frame is "module+0xOFF" where OFF is the
// address in the object's ELF virtual address space (runtime address minus
// load bias): the value `addr2line -e module 0xOFF` and
// `objdump -d --start-address=0xOFF module` take. A frame is never dropped
// and never named after a nearby symbol that does not contain it.
//
// Inline expansion happens exactly when the object (or its debug file) has
// DWARF (.debug_info with line tables) covering the address: the frames
// inlined at that address come first, each with its file and line, then the
// physical function with the line of the call site it contains. Without
// DWARF (stripped C objects without a debug file, Go binaries built with
// -ldflags=-w or -s -w) a frame is the physical function only; for Go its
// file and line then come from the pclntab and are those of the innermost
// inlined code, as `go tool addr2line` and runtime.FuncForPC report them.
//
// Unwind walks a copied window of a user stack with DWARF call frame
// information (.eh_frame, and .debug_frame where present, in the object or
// its debug file), then the Go pclntab's stack-pointer table for Go code,
// and the frame-pointer rule as the last resort. It exists because Debian's
// glibc is built without frame pointers: a frame-pointer walk started in
// __lll_lock_wait loses pthread_mutex_lock and its caller.
//
// Only x86-64 (amd64) targets are supported.
package symbolize

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/contend-dev/contend/recording"
)

// ErrNoProcess is returned (wrapped) by Open and Refresh when the process
// does not exist or has exited.
var ErrNoProcess = errors.New("no such process")

// Options controls where Open looks for process information and debug files.
type Options struct {
	// ProcRoot is the proc file system to read; "" means /proc.
	ProcRoot string
	// DebugDirs are the roots searched for separate debug files, by build id
	// and by .gnu_debuglink; nil means /usr/lib/debug. An empty non-nil
	// slice disables the search.
	DebugDirs []string
	// Objects, when set, shares the objects (mapped files and the tables
	// parsed from them) of every Process opened with it: the processes of
	// one server map the same executable and libraries, and without it
	// each process maps and parses its own copy (128 PostgreSQL backends
	// held 128 copies of postgres's and libc's tables). Processes opened
	// with one ObjectCache also share one lock, so that the lazily parsed
	// tables are never parsed by two at once.
	Objects *ObjectCache
}

// ObjectCache shares objects between the Processes opened with it (see
// Options.Objects). The zero value is not usable; call NewObjectCache.
type ObjectCache struct {
	// mu serializes every Process opened with the cache.
	mu   sync.Mutex
	objs map[string]*sharedObject
}

// sharedObject is an object and how many open Processes map it.
type sharedObject struct {
	o    *object
	refs int
}

// NewObjectCache returns an empty cache. An object leaves it, and is
// unmapped, when the last Process that maps it is closed.
func NewObjectCache() *ObjectCache {
	return &ObjectCache{objs: map[string]*sharedObject{}}
}

// take returns the object cached under key and counts one more user, or
// nil. Caller holds c.mu.
func (c *ObjectCache) take(key string) *object {
	if so := c.objs[key]; so != nil {
		so.refs++
		return so.o
	}
	return nil
}

// put caches o under key for its first user. Caller holds c.mu.
func (c *ObjectCache) put(key string, o *object) {
	c.objs[key] = &sharedObject{o: o, refs: 1}
}

// release counts one user fewer of the object under key and unmaps it
// when none is left. It reports whether the cache held the key. Caller
// holds c.mu.
func (c *ObjectCache) release(key string) bool {
	so := c.objs[key]
	if so == nil {
		return false
	}
	if so.refs--; so.refs == 0 {
		so.o.close()
		delete(c.objs, key)
	}
	return true
}

// TrimDebugInfo drops the DWARF sections of the cached objects that have
// not been needed for a while (see dwarfIdleFirst), giving their memory
// back; the units already loaded stay, and the sections are read again
// when an address falls in a unit not loaded yet. It returns how many
// objects' DWARF it dropped. A long-running symbolizer (contend top, the agent)
// calls it now and then.
func (c *ObjectCache) TrimDebugInfo() int { return c.trim(false) }

// DropDebugInfo is TrimDebugInfo for a caller about to need much memory
// for a moment: it drops the DWARF sections however recently they were
// used, for objects read at most dwarfQuickParses times, and gives back the
// resident pages of every cached object's mapped files (see
// releasePages).
func (c *ObjectCache) DropDebugInfo() int { return c.trim(true) }

func (c *ObjectCache) trim(quick bool) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now, n := time.Now(), 0
	for _, so := range c.objs {
		if so.o.dw.trimData(now, quick) {
			n++
		}
		if quick {
			so.o.releasePages()
		}
	}
	return n
}

// Regs is the user register state a stack walk starts from: instruction
// pointer, stack pointer and frame pointer (rip, rsp, rbp on x86-64).
type Regs struct{ IP, SP, BP uint64 }

// Function describes the function containing an address, with runtime
// addresses.
type Function struct {
	// Name is the symbol or Go function name.
	Name string
	// Start and End bound the function: Start <= pc < End.
	Start, End uint64
	// Module is the base name of the object the function lives in.
	Module string
	// Path is the object's path as seen in /proc/PID/maps.
	Path string
	// Bias is the runtime address minus the ELF virtual address (0 for
	// a File), and BuildID the object's build id (File.BuildID).
	Bias    uint64
	BuildID string
}

// Process is a snapshot of one process's mappings with lazily loaded symbol
// and unwind tables for each mapped object. Every object is opened and
// mapped into memory when its mapping is first seen, so a Process stays
// usable after the target exits. A Process is safe for concurrent use.
type Process struct {
	impl *process
}

// Open snapshots /proc/PID/maps of pid and opens every executable object it
// maps, through /proc/PID/map_files (which works even when the file was
// deleted or replaced) or /proc/PID/root/<path>. Parsing of symbol, line
// and unwind tables is deferred until an address in the object is looked
// up. A missing process gives an error wrapping ErrNoProcess.
func Open(pid int, o Options) (*Process, error) {
	p, err := openProcess(pid, o)
	if err != nil {
		return nil, err
	}
	pp := &Process{impl: p}
	// Unmap the objects of a Process dropped without Close.
	runtime.AddCleanup(pp, func(impl *process) { impl.close() }, p)
	return pp, nil
}

// Close releases the memory mappings of every object (a Process that is
// dropped without Close releases them when garbage-collected). The Process
// must not be used afterwards.
func (p *Process) Close() error { return p.impl.close() }

// Refresh re-reads /proc/PID/maps, picking up objects mapped since Open
// (dlopen) while keeping the tables already loaded. Mappings that went away
// are kept, so addresses recorded earlier still resolve.
func (p *Process) Refresh() error { return p.impl.refresh() }

// Loading reports whether the maps read last are those of a process its
// dynamic loader has not finished: the loader is mapped and no shared
// object besides the executable yet (right after exec). Refresh once it
// has: addresses in the libraries are unknown until then.
func (p *Process) Loading() bool { return p.impl.loading() }

// Stack symbolizes user addresses, leaf first. pcs[0] is an exact
// instruction pointer; every later entry is a return address, looked up at
// pc-1 so that a call at the end of a function is attributed to its caller.
// Inline frames are expanded (see the package comment); every address
// yields at least one frame.
func (p *Process) Stack(pcs []uint64) recording.Stack {
	return p.impl.stack(pcs)
}

// Frames symbolizes one user address, innermost inlined frame first and the
// physical function last. exact says pc is an instruction pointer rather
// than a return address (return addresses are looked up at pc-1). Each
// frame's Addr is pc as given. An address outside every mapping gives one
// frame named "0x…" with no module.
func (p *Process) Frames(pc uint64, exact bool) []recording.Frame {
	return p.impl.frames(pc, exact)
}

// Unwind walks a copied window of a thread's user stack. window[0] is the
// byte at address r.SP; the window is the only memory read. The result
// starts with r.IP followed by return addresses, ready for Stack.
//
// Each frame's rules come, in this order, from the Go pclntab's
// stack-pointer table (Go functions), the DWARF CFI of the object
// (.eh_frame, then .debug_frame of the object or its debug file; this
// covers PLT entries and glibc's hand-written assembly), and, only where
// the object has no rule for the pc at all, the frame-pointer rule (CFA =
// rbp+16, return address at rbp+8, saved rbp at rbp) when rbp points into
// the window. Signal frames (CFI marked 'S', such as glibc's __restore_rt)
// are crossed; the pc after a trampoline is the interrupted instruction,
// which Stack looks up at pc-1 like any return address (right unless the
// signal hit the first instruction of a function).
//
// complete is true when the walk reached the outermost frame: the unwind
// tables mark the return address undefined (glibc's thread entry clone3 and
// _start do), the return address is 0, or a Go stack reached its top frame
// (runtime.goexit, runtime.mstart). It is false when the walk stopped
// early: the window ended or the CFA left it, a pc was unmapped, a rule
// could not be followed, the frame-pointer rule did not apply, a Go stack
// switch was reached (runtime.mcall, runtime.systemstack: the frames beyond
// are on another stack), or MaxDepth frames were collected.
func (p *Process) Unwind(r Regs, window []byte) (pcs []uint64, complete bool) {
	return p.impl.unwind(r, window)
}

// MaxDepth bounds Unwind. 127 is the depth perf and bpf_get_stack use by
// default (PERF_MAX_STACK_DEPTH), so walks done here are no deeper than
// kernel-taken stacks; real lock-holding stacks are far shallower.
const MaxDepth = 127

// DataSymbol names an address inside a global object of a mapped ELF file
// (.data, .bss, including the part of .bss that lives in the anonymous
// mapping after the file mapping) as "sym+0x1b0 (libpython3.11.so.1.0)",
// or "sym (module)" at offset 0. ok is true only when the address falls
// inside the symbol's size. When it lies in a mapped object but in no
// symbol, the result is "module+0xOFF" (ELF virtual address) with ok false;
// for heap, stack and unmapped addresses it is "" and false. Thread-local
// (.tdata/.tbss) instances live in per-thread blocks, not in the object's
// mapping, and are not named.
func (p *Process) DataSymbol(addr uint64) (name string, ok bool) {
	return p.impl.dataSymbol(addr)
}

// FunctionAt returns the function containing pc, and its machine code read
// from the object file (for disassembly). ok is false when pc is in no
// function whose bounds are known (see the package comment: never the
// nearest symbol).
func (p *Process) FunctionAt(pc uint64) (fn Function, code []byte, ok bool) {
	return p.impl.functionAt(pc)
}

// Warnings says what lookups could not do so far, as one-line notes for a
// recording's warnings: lookups that hit malformed data in the target's
// objects (counted; each gave a raw-address frame), and objects whose
// tables went over their memory budget.
func (p *Process) Warnings() []string { return p.impl.lim.warnings() }

// Exe returns the path of the main executable as /proc/PID/exe names it and
// its build id: the GNU build id in hex, or for a Go binary without one,
// the Go build id string. Either is "" when unknown.
func (p *Process) Exe() (path, buildID string) { return p.impl.exe() }
