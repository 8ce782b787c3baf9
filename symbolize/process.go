package symbolize

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/recording"
)

// region is one address range with the object that backs it. Anonymous
// mappings that hold an object's .bss carry that object and its bias.
type region struct {
	start, end uint64
	obj        *object // nil for anonymous memory and files that are not ELF
	bias       uint64  // runtime address - ELF virtual address
	exec       bool
	path       string // mapping path ("" for anonymous memory)
	offset     uint64 // file offset of start (for files without an object)
}

// process is the implementation behind Process.
type process struct {
	// mu serializes the process's methods: its own lock, or the lock of
	// the ObjectCache it shares objects through.
	mu        *sync.Mutex
	shared    *ObjectCache
	pid       int
	procDir   string // <proc root>/<pid>
	debugDirs []string
	regions   []region
	objects   map[string]*object // by "dev:inode" (or "[vdso]"); nil when unreadable
	exePath   string
	exeObj    *object
	// lim bounds the memory of the objects' tables and records the
	// lookups that failed on malformed data.
	lim *limits
	// cache holds symbolized frames by address; bit 63 of the key marks
	// return addresses. User addresses stay below 2^57 on x86-64, so the
	// bit is free.
	cache map[uint64][]recording.Frame
	// perf names generated code (a JVM's perf map), nil when none.
	perf *perfMap
}

// maxCachedAddrs bounds the frame cache: a long recording of a large
// program touches tens of thousands of distinct addresses; past this the
// cache starts afresh rather than growing without limit.
const maxCachedAddrs = 1 << 17

func openProcess(pid int, o Options) (*process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("open process %d: invalid pid", pid)
	}
	root := o.ProcRoot
	if root == "" {
		root = "/proc"
	}
	dirs := o.DebugDirs
	if dirs == nil {
		dirs = []string{defaultDebugDir}
	}
	p := &process{
		mu:        &sync.Mutex{},
		shared:    o.Objects,
		pid:       pid,
		procDir:   filepath.Join(root, strconv.Itoa(pid)),
		debugDirs: dirs,
		objects:   map[string]*object{},
		cache:     map[uint64][]recording.Frame{},
		lim:       newLimits(),
	}
	if o.Objects != nil {
		p.mu = &o.Objects.mu
	}
	if exe, err := os.Readlink(filepath.Join(p.procDir, "exe")); err == nil {
		p.exePath = strings.TrimSuffix(exe, " (deleted)")
	}
	if err := p.refresh(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *process) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, o := range p.objects {
		if o != nil && (p.shared == nil || !p.shared.release(key)) {
			o.close()
		}
	}
	p.objects = map[string]*object{}
	p.regions = nil
	p.cache = map[uint64][]recording.Frame{}
	return nil
}

func (p *process) refresh() error {
	b, err := os.ReadFile(filepath.Join(p.procDir, "maps"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("read maps of process %d: %w", p.pid, ErrNoProcess)
		}
		return fmt.Errorf("read maps of process %d: %w", p.pid, err)
	}
	if len(b) == 0 {
		// A zombie or a kernel thread has no mappings.
		return fmt.Errorf("read maps of process %d: no user mappings: %w", p.pid, ErrNoProcess)
	}
	maps, err := parseMaps(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("process %d: %w", p.pid, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	regions := p.buildRegions(maps)
	p.regions = mergeRegions(regions, p.regions)
	p.cache = map[uint64][]recording.Frame{}
	return nil
}

// mergeRegions returns cur plus every old region that overlaps none of
// cur, sorted by address.
func mergeRegions(cur, old []region) []region {
	out := append([]region(nil), cur...)
	for _, r := range old {
		i := sort.Search(len(cur), func(i int) bool { return cur[i].end > r.start })
		if i < len(cur) && cur[i].start < r.end {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

func mappingKey(m *mapping) string {
	if m.path == "[vdso]" {
		return "[vdso]"
	}
	return m.dev + ":" + strconv.FormatUint(m.inode, 10)
}

// buildRegions turns a maps snapshot into regions, opening every object
// that has an executable mapping. Caller holds p.mu.
func (p *process) buildRegions(maps []mapping) []region {
	// Objects with an executable mapping are the ones opened; the bias of
	// that mapping is unambiguous and settles the others'.
	wanted := map[string]bool{}
	execBias := map[string][]uint64{}
	for i := range maps {
		m := &maps[i]
		if m.exec() && (m.isFile() || m.path == "[vdso]") {
			key := mappingKey(m)
			wanted[key] = true
			if o := p.object(key, m); o != nil {
				if c := o.biasCandidates(m); len(c) > 0 {
					execBias[key] = append(execBias[key], c[0])
				}
			}
		}
	}
	var out []region
	// prevObj and prevBias describe the previous mapping when it belongs
	// to an object; prevEnd is where the previous mapping ended.
	var prevObj *object
	var prevBias, prevEnd uint64
	for i := range maps {
		m := &maps[i]
		r := region{start: m.start, end: m.end, exec: m.exec(), path: m.path, offset: m.offset}
		key := mappingKey(m)
		switch {
		case wanted[key]:
			if o := p.object(key, m); o != nil {
				if bias, ok := pickBias(o.biasCandidates(m), execBias[key]); ok {
					r.obj, r.bias = o, bias
				}
			}
		case m.path == "" && prevObj != nil && prevEnd == m.start:
			// The zero-filled tail of .bss lives in an anonymous mapping
			// right after the object's last file mapping.
			lo, hi := prevObj.extent()
			if m.start >= prevBias+lo && m.start < prevBias+hi {
				bss := r
				bss.obj, bss.bias = prevObj, prevBias
				bss.end = min(m.end, prevBias+hi)
				out = append(out, bss)
				r.start = bss.end
			}
		}
		if r.start < r.end {
			out = append(out, r)
		}
		prevObj, prevBias, prevEnd = r.obj, r.bias, m.end
	}
	return out
}

// pickBias chooses among a mapping's candidate biases the one an
// executable mapping of the same object has, else the best match.
func pickBias(cands, known []uint64) (uint64, bool) {
	for _, c := range cands {
		if slices.Contains(known, c) {
			return c, true
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	return cands[0], true
}

// object returns the object for a mapping, opening it on first sight.
// Caller holds p.mu.
func (p *process) object(key string, m *mapping) *object {
	if o, ok := p.objects[key]; ok {
		return o
	}
	var o *object
	switch {
	case key == "[vdso]":
		o = p.openVDSO(m)
	case p.shared != nil:
		// The same device and inode is the same file in every process
		// (whatever its path there), so its tables are the same.
		if o = p.shared.take(key); o == nil {
			if o = p.openMapped(m); o != nil {
				p.shared.put(key, o)
			}
		}
	default:
		o = p.openMapped(m)
	}
	p.objects[key] = o
	if o != nil && p.exeObj == nil && p.exePath != "" && o.path == p.exePath {
		p.exeObj = o
	}
	return o
}

// openMapped opens a file mapping through map_files: the very file the
// process maps, even if the path was replaced or deleted. When that is
// not allowed (map_files needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE),
// it opens the path through the process's root, which the target can
// redirect: without following a symbolic link (O_NOFOLLOW), without
// blocking on a FIFO (O_NONBLOCK), and only a regular file whose device
// and inode are the mapping's. A file that does not match is not opened:
// its frames stay "module+0xOFF".
func (p *process) openMapped(m *mapping) *object {
	if f, st, err := openRegular(filepath.Join(p.procDir, "map_files", fmt.Sprintf("%x-%x", m.start, m.end)), 0); err == nil {
		return p.objectFrom(f, st, m)
	}
	if strings.HasSuffix(m.path, " (deleted)") {
		return nil
	}
	f, st, err := openRegular(filepath.Join(p.procDir, "root", m.filePath()), unix.O_NOFOLLOW)
	if err != nil {
		return nil
	}
	if st.Ino != m.inode || !sameDevice(st.Dev, m.dev) {
		f.Close()
		return nil
	}
	return p.objectFrom(f, st, m)
}

// objectFrom reads the open file f as the object of mapping m, with its
// debug file, and closes f.
func (p *process) objectFrom(f *os.File, st *unix.Stat_t, m *mapping) *object {
	defer f.Close()
	o, err := mapObject(f, st, m.filePath(), p.lim)
	if err != nil {
		return nil
	}
	o.dbg = findDebugFile(o, filepath.Join(p.procDir, "root"), p.debugDirs)
	return o
}

// sameDevice reports whether the device number dev is the "major:minor"
// (hex) of a maps line.
func sameDevice(dev uint64, maps string) bool {
	maj, min, ok := strings.Cut(maps, ":")
	if !ok {
		return false
	}
	a, err1 := strconv.ParseUint(maj, 16, 32)
	b, err2 := strconv.ParseUint(min, 16, 32)
	return err1 == nil && err2 == nil && unix.Major(dev) == uint32(a) && unix.Minor(dev) == uint32(b)
}

// openVDSO copies the vdso image out of the target's memory, or out of
// this process's own (the kernel maps the same image into every process).
func (p *process) openVDSO(m *mapping) *object {
	if img, err := readMem(filepath.Join(p.procDir, "mem"), m.start, m.end-m.start); err == nil {
		if o, err := newObject(img, "[vdso]", p.lim); err == nil {
			return o
		}
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	maps, err := parseMaps(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	for _, sm := range maps {
		if sm.path == "[vdso]" {
			img, err := readMem("/proc/self/mem", sm.start, sm.end-sm.start)
			if err != nil {
				return nil
			}
			o, err := newObject(img, "[vdso]", p.lim)
			if err != nil {
				return nil
			}
			return o
		}
	}
	return nil
}

// maxVDSOSize bounds the memory copied for the vdso image (a few pages on
// every kernel so far).
const maxVDSOSize = 1 << 20

func readMem(path string, addr, n uint64) ([]byte, error) {
	if n == 0 || n > maxVDSOSize {
		return nil, fmt.Errorf("read %s: bad size %d", path, n)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(addr)); err != nil {
		return nil, fmt.Errorf("read %s at 0x%x: %w", path, addr, err)
	}
	return buf, nil
}

// regionAt returns the region containing addr. Caller holds p.mu.
func (p *process) regionAt(addr uint64) *region {
	i := sort.Search(len(p.regions), func(i int) bool { return p.regions[i].end > addr })
	if i < len(p.regions) && p.regions[i].start <= addr {
		return &p.regions[i]
	}
	return nil
}

func (p *process) stack(pcs []uint64) recording.Stack {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := recording.Stack{Frames: make([]recording.Frame, 0, len(pcs))}
	for i, pc := range pcs {
		s.Frames = append(s.Frames, p.cachedFrames(pc, i == 0)...)
	}
	return s
}

func (p *process) frames(pc uint64, exact bool) []recording.Frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]recording.Frame(nil), p.cachedFrames(pc, exact)...)
}

// cachedFrames returns the frames of pc from the cache, symbolizing on a
// miss. The result is shared: callers copy it. Caller holds p.mu.
func (p *process) cachedFrames(pc uint64, exact bool) []recording.Frame {
	key := pc
	if !exact {
		key |= 1 << 63
	}
	if f, ok := p.cache[key]; ok && pc < 1<<63 {
		return f
	}
	var f []recording.Frame
	if err := guarded(func() { f = p.symbolize(pc, exact) }); err != nil {
		p.lim.fault(p.moduleAt(pc), err)
		return []recording.Frame{{Func: fmt.Sprintf("0x%x", pc), Addr: pc}}
	}
	if pc >= 1<<63 {
		return f
	}
	if len(p.cache) >= maxCachedAddrs {
		p.cache = map[uint64][]recording.Frame{}
	}
	p.cache[key] = f
	return f
}

// symbolize names pc. Caller holds p.mu.
func (p *process) symbolize(pc uint64, exact bool) []recording.Frame {
	lookup := pc
	if !exact && pc > 0 {
		lookup = pc - 1
	}
	r := p.regionAt(lookup)
	if r == nil || r.obj == nil && r.path == "" {
		if f, ok := p.perfFrame(lookup, pc); ok {
			return []recording.Frame{f}
		}
	}
	if r == nil {
		return []recording.Frame{{Func: fmt.Sprintf("0x%x", pc), Addr: pc}}
	}
	if r.obj == nil {
		if r.path == "" {
			return []recording.Frame{{Func: fmt.Sprintf("0x%x", pc), Addr: pc}}
		}
		mod := filepath.Base(strings.TrimSuffix(r.path, " (deleted)"))
		return []recording.Frame{{Func: fmt.Sprintf("%s+0x%x", mod, pc-r.start+r.offset), Module: mod, Addr: pc}}
	}
	mod := r.obj.name
	fr := r.obj.codeFrames(lookup - r.bias)
	if len(fr) == 0 && lookup != pc {
		// A signal trampoline is "returned" to at its first byte (glibc
		// puts a nop before __restore_rt so that pc-1 finds its CFI):
		// name it at pc when the CFI at pc-1 says signal frame.
		if _, sig, ok := r.obj.cfiAt(lookup - r.bias); ok && sig {
			fr = r.obj.codeFrames(pc - r.bias)
		}
	}
	return toFrames(fr, mod, pc, pc-r.bias)
}

// toFrames turns frames found in object mod into recording frames for the
// address pc, whose ELF virtual address is vaddr. No frames give one
// "mod+0xvaddr" frame.
func toFrames(fr []inlFrame, mod string, pc, vaddr uint64) []recording.Frame {
	if len(fr) == 0 {
		return []recording.Frame{{Func: fmt.Sprintf("%s+0x%x", mod, vaddr), Module: mod, Addr: pc}}
	}
	out := make([]recording.Frame, len(fr))
	for i, f := range fr {
		name := f.fn
		if name == "" {
			if i == len(fr)-1 {
				name = fmt.Sprintf("%s+0x%x", mod, vaddr)
			} else {
				name = "[inlined]"
			}
		}
		out[i] = recording.Frame{
			Func: name, File: f.file, Line: f.line, Module: mod, Addr: pc,
			Inlined: i < len(fr)-1,
		}
	}
	return out
}

// codeFrames names the ELF virtual address pc: inline frames from DWARF
// when present, and the physical function from the Go table, the ELF
// symbols or DWARF, in that order. The physical frame's name is "" when
// only a line is known.
func (o *object) codeFrames(pc uint64) []inlFrame {
	phys, gofn, isGo := o.physical(pc)
	if dw := o.dwarf(); dw != nil {
		if fr := dw.frames(pc); len(fr) > 0 {
			if phys != "" {
				fr[len(fr)-1].fn = phys
			}
			return fr
		}
	}
	if phys == "" {
		return nil
	}
	f := inlFrame{fn: phys}
	if isGo {
		f.file, f.line = o.gotab.fileLine(gofn, pc)
	}
	return []inlFrame{f}
}

// physical returns the name of the function containing pc from the Go
// table or the ELF symbols, and the Go function when it came from the Go
// table.
func (o *object) physical(pc uint64) (string, goFunc, bool) {
	if t := o.pcln(); t != nil {
		if f, ok := t.find(pc); ok {
			return t.name(f), f, true
		}
	}
	o.loadSymbols()
	if s := o.funcs.lookup(pc); s != nil {
		return o.funcs.name(s), goFunc{}, false
	}
	return "", goFunc{}, false
}

func (p *process) dataSymbol(addr uint64) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.regionAt(addr)
	if r == nil || r.obj == nil {
		return "", false
	}
	o := r.obj
	v := addr - r.bias
	name, off, ok := "", uint64(0), false
	if err := guarded(func() {
		o.loadSymbols()
		if s := o.objs.lookup(v); s != nil {
			name, off, ok = o.objs.name(s), v-s.addr, true
		}
	}); err != nil {
		p.lim.fault(o.name, err)
		ok = false
	}
	if !ok {
		return fmt.Sprintf("%s+0x%x", o.name, v), false
	}
	if off == 0 {
		return fmt.Sprintf("%s (%s)", name, o.name), true
	}
	return fmt.Sprintf("%s+0x%x (%s)", name, off, o.name), true
}

func (p *process) functionAt(pc uint64) (Function, []byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.regionAt(pc)
	if r == nil || r.obj == nil || !r.exec {
		return Function{}, nil, false
	}
	return objectFunction(r.obj, pc-r.bias, r.bias, p.lim)
}

// objectFunction returns the function of o containing the ELF virtual
// address v, with addresses shifted by bias, and a copy of its code. A
// lookup that hits malformed data is counted in lim and finds nothing.
func objectFunction(o *object, v, bias uint64, lim *limits) (Function, []byte, bool) {
	var fn Function
	var code []byte
	found := false
	if err := guarded(func() {
		name, start, end, ok := o.functionBounds(v)
		if !ok {
			return
		}
		found = true
		fn = Function{Name: name, Start: start + bias, End: end + bias, Module: o.name, Path: o.path, Bias: bias, BuildID: o.buildID}
		if fn.BuildID == "" {
			fn.BuildID = o.goBuildID
		}
		if b, ok := o.fileBytes(start, end); ok {
			code = append([]byte(nil), b...)
		}
	}); err != nil {
		lim.fault(o.name, err)
		return Function{}, nil, false
	}
	return fn, code, found
}

// functionBounds returns the function containing the ELF virtual address
// pc with its bounds.
func (o *object) functionBounds(pc uint64) (string, uint64, uint64, bool) {
	if t := o.pcln(); t != nil {
		if f, ok := t.find(pc); ok {
			return t.name(f), f.entry, f.end, true
		}
	}
	o.loadSymbols()
	if s := o.funcs.lookup(pc); s != nil {
		return o.funcs.name(s), s.addr, s.end, true
	}
	return "", 0, 0, false
}

// moduleAt names the object mapped at pc, for a warning. Caller holds
// p.mu.
func (p *process) moduleAt(pc uint64) string {
	if r := p.regionAt(pc); r != nil && r.obj != nil {
		return r.obj.name
	}
	return fmt.Sprintf("0x%x", pc)
}

func (p *process) exe() (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.exeObj
	if o == nil {
		return p.exePath, ""
	}
	if o.buildID != "" {
		return p.exePath, o.buildID
	}
	return p.exePath, o.goBuildID
}

// loading reports whether the process's dynamic loader is still at work:
// its maps hold the loader (ld.so) and no shared object besides the
// executable, as right after exec, before ld.so maps libc. A process
// joined then has stacks in objects its maps do not show yet.
func (p *process) loading() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	interp, others := false, false
	for _, r := range p.regions {
		if !r.exec || r.path == "" || strings.HasPrefix(r.path, "[") || r.path == p.exePath {
			continue
		}
		if isLoader(filepath.Base(r.path)) {
			interp = true
		} else {
			others = true
		}
	}
	return interp && !others
}

// isLoader reports whether base names glibc's dynamic loader,
// ld-linux-<arch>.so.N or ld.so. musl's loader is its libc, mapped by the
// kernel at exec with the executable: a musl program is never loading.
func isLoader(base string) bool {
	return base == "ld.so" || strings.HasPrefix(base, "ld-linux")
}
