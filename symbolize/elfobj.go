package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// object is one mapped ELF file (or the vdso image) with its tables, which
// are parsed on first use. The file content is memory-mapped read-only, so
// the object survives the target's exit and large tables cost page cache,
// not heap.
type object struct {
	path string // as in /proc/PID/maps, without " (deleted)"
	name string // base name used in frames
	data []byte // whole file
	// mapped says data is an mmap to release on close.
	mapped bool
	ef     *elf.File
	loads  []elf.ProgHeader

	buildID   string // GNU build id, hex
	goBuildID string
	debugLink string
	debugCRC  uint32
	// dbg is the separate debug file, if one was found.
	dbg *debugFile
	// dev and ino identify the file the object was read from (0 for the
	// vdso image), so that no other path is taken for it.
	dev, ino uint64
	// budget bounds the memory of the tables derived from the object and
	// its debug file.
	budget *objBudget

	symsLoaded bool
	funcs      *symTable
	objs       *symTable

	goLoaded bool
	gotab    *pclntab // nil when the object is not Go

	dwLoaded bool
	dw       *dwarfInfo

	cfiLoaded bool
	cfis      []*cfiSection // .eh_frame first, then .debug_frame
	// rows are the unwind rows looked up so far, by pc (cfiAt).
	rows rowCache
}

// debugFile is a separate debug file matching an object.
type debugFile struct {
	path   string
	data   []byte
	mapped bool
	ef     *elf.File
}

// mmapFile maps f read-only in full.
func mmapFile(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size <= 0 {
		return nil, fmt.Errorf("%s: empty file", f.Name())
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: too large to map", f.Name())
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
}

// errNotRegular reports an object path that is not a regular file.
var errNotRegular = errors.New("not a regular file")

// openRegular opens path read-only with O_NONBLOCK (a FIFO planted there
// cannot block the open) and extra flags, and returns it only when the
// open file is a regular file: the check is made on the descriptor
// (fstat), so it is the file that will be read, whatever happens to the
// path meanwhile.
func openRegular(path string, flags int) (*os.File, *unix.Stat_t, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return os.NewFile(uintptr(fd), path), &st, nil
}

// openObjectFile opens the regular file at path (see openRegular) and
// reads it as an object; name is the path the target knows it by.
func openObjectFile(path, name string, pool *limits) (*object, error) {
	f, st, err := openRegular(path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mapObject(f, st, name, pool)
}

// mapObject maps the open regular file f (st is its fstat) and parses its
// ELF headers.
func mapObject(f *os.File, st *unix.Stat_t, name string, pool *limits) (*object, error) {
	data, err := mmapFile(f)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	o, err := newObject(data, name, pool)
	if err != nil {
		syscall.Munmap(data)
		return nil, err
	}
	o.mapped = true
	o.dev, o.ino = st.Dev, st.Ino
	return o, nil
}

// newObject parses the ELF headers of data; the tables derived from it
// are charged to pool.
func newObject(data []byte, name string, pool *limits) (o *object, err error) {
	var ef *elf.File
	// debug/elf can panic on crafted headers: a bad object is an error.
	if perr := guarded(func() {
		if err = CheckELF(bytes.NewReader(data), int64(len(data))); err == nil {
			ef, err = elf.NewFile(bytes.NewReader(data))
		}
	}); perr != nil {
		err = perr
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("parse %s: not a 64-bit little-endian ELF object", name)
	}
	o = &object{
		path: strings.TrimSuffix(name, " (deleted)"),
		data: data,
		ef:   ef,
	}
	o.name = filepath.Base(o.path)
	o.budget = pool.forObject(o.name)
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			o.loads = append(o.loads, p.ProgHeader)
		}
	}
	if perr := guarded(func() {
		o.readNotes()
		o.readDebugLink()
	}); perr != nil {
		return nil, fmt.Errorf("parse %s: %w", name, perr)
	}
	return o, nil
}

// readDebugLink reads the .gnu_debuglink section: the debug file's name
// and the CRC of its content.
func (o *object) readDebugLink() {
	s := o.ef.Section(".gnu_debuglink")
	if s == nil {
		return
	}
	b, err := o.sectionBytes(s)
	if err != nil {
		return
	}
	if i := bytes.IndexByte(b, 0); i > 0 {
		o.debugLink = string(b[:i])
		crcOff := (i + 4) &^ 3
		if crcOff+4 <= len(b) {
			o.debugCRC = binary.LittleEndian.Uint32(b[crcOff:])
		}
	}
}

func (o *object) close() {
	if o.mapped {
		syscall.Munmap(o.data)
		o.mapped = false
	}
	if o.dbg != nil && o.dbg.mapped {
		syscall.Munmap(o.dbg.data)
		o.dbg.mapped = false
	}
	o.data = nil
}

// releasePages gives back the resident pages of the object's mapped file
// and debug file (MADV_DONTNEED). The mappings are private and never
// written, so nothing is lost: a page read again comes back from the page
// cache. What a symbolizer reads of them is mostly read once, into its
// tables (compressed DWARF inflated, symbol tables indexed), yet the pages
// would stay in contend's resident memory for as long as the object is
// cached: glibc's debug file 3.5 MB and the target's executable, in every
// one of top's analyses.
func (o *object) releasePages() {
	if o.mapped {
		unix.Madvise(o.data, unix.MADV_DONTNEED)
	}
	if o.dbg != nil && o.dbg.mapped {
		unix.Madvise(o.dbg.data, unix.MADV_DONTNEED)
	}
}

// maxBuildIDLen bounds a build id read from a note: GNU ids are 16 to 32
// bytes (md5, uuid, sha1, sha256), Go's about 85 ("actionID/contentID").
// An id goes into debug file paths and the recording; a longer one is a
// crafted note and is not used.
const maxBuildIDLen = 256

// readNotes finds the GNU and Go build ids in the note sections (or note
// segments when section headers are gone).
func (o *object) readNotes() {
	scan := func(b []byte) {
		for len(b) >= 12 {
			// Sizes are the file's: computed in 64 bits, so that no
			// 32-bit size wraps around.
			namesz := uint64(binary.LittleEndian.Uint32(b[0:]))
			descsz := uint64(binary.LittleEndian.Uint32(b[4:]))
			typ := binary.LittleEndian.Uint32(b[8:])
			nameEnd := 12 + (namesz+3)&^3
			descEnd := nameEnd + (descsz+3)&^3
			if nameEnd > uint64(len(b)) || nameEnd+descsz > uint64(len(b)) {
				return
			}
			name := string(bytes.TrimRight(b[12:12+namesz], "\x00"))
			desc := b[nameEnd : nameEnd+uint64(descsz)]
			switch {
			case name == "GNU" && typ == 3 && o.buildID == "" && len(desc) <= maxBuildIDLen: // NT_GNU_BUILD_ID
				o.buildID = hex.EncodeToString(desc)
			case name == "Go" && typ == 4 && o.goBuildID == "" && len(desc) <= maxBuildIDLen: // Go build id note
				o.goBuildID = string(desc)
			}
			if descEnd > uint64(len(b)) {
				return
			}
			b = b[descEnd:]
		}
	}
	found := false
	for _, s := range o.ef.Sections {
		if s.Type == elf.SHT_NOTE {
			if b, err := o.sectionBytes(s); err == nil {
				scan(b)
				found = true
			}
		}
	}
	if found {
		return
	}
	for _, p := range o.ef.Progs {
		if p.Type == elf.PT_NOTE && p.Off+p.Filesz <= uint64(len(o.data)) {
			scan(o.data[p.Off : p.Off+p.Filesz])
		}
	}
}

// sectionBytes returns the content of s: a slice of the mapped file data,
// or for a compressed section (SHF_COMPRESSED, or a .zdebug section with
// its "ZLIB" header) a copy inflated to exactly the size its header
// states, charged to budget before anything is inflated. NOBITS sections
// are empty.
func sectionBytes(data []byte, s *elf.Section, budget *objBudget) ([]byte, error) {
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	size, compressed, err := inflatedSize(data, s)
	if err != nil {
		return nil, err
	}
	if !compressed {
		end := s.Offset + s.FileSize
		if end < s.Offset || end > uint64(len(data)) {
			return nil, fmt.Errorf("section %s: outside the file", s.Name)
		}
		return data[s.Offset:end:end], nil
	}
	if !budget.take(int64(size), "inflating "+s.Name) {
		return nil, fmt.Errorf("section %s: %d bytes inflated: %w", s.Name, size, errOverBudget)
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(s.Open(), out); err != nil {
		return nil, fmt.Errorf("section %s: inflate: %w", s.Name, err)
	}
	return out, nil
}

// errOverBudget reports a table that would take more memory than its
// object or process may use.
var errOverBudget = errors.New("over the memory budget")

// inflatedSize returns the size s takes once inflated, and whether it is
// compressed at all, from its headers alone: the ELF compression header
// (which debug/elf has read into Size) or the 12-byte "ZLIB" + big-endian
// size header of a .zdebug section.
func inflatedSize(data []byte, s *elf.Section) (uint64, bool, error) {
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		if s.Flags&elf.SHF_ALLOC != 0 {
			return 0, false, fmt.Errorf("section %s: compressed and allocated", s.Name)
		}
		return s.Size, true, nil
	}
	if !strings.HasPrefix(s.Name, ".zdebug") || s.FileSize < 12 || s.Offset > uint64(len(data)) || uint64(len(data))-s.Offset < 12 {
		return s.FileSize, false, nil
	}
	h := data[s.Offset : s.Offset+12]
	if string(h[:4]) != "ZLIB" {
		return s.FileSize, false, nil
	}
	return binary.BigEndian.Uint64(h[4:]), true, nil
}

func (o *object) sectionBytes(s *elf.Section) ([]byte, error) {
	return sectionBytes(o.data, s, o.budget)
}

// biasCandidates returns the load biases (runtime address = bias + ELF
// virtual address) that a mapping of this object may have: one per PT_LOAD
// segment holding the mapping's file offset, best permission match first.
// Several segments can hold one page (RELRO turns the first page of the
// data segment into a read-only mapping whose offset is also inside the
// read-only data segment), so the caller prefers the bias already known
// from the object's executable mapping.
func (o *object) biasCandidates(m *mapping) []uint64 {
	type cand struct {
		bias  uint64
		score int
	}
	var cs []cand
	for _, p := range o.loads {
		pageOff := p.Off &^ 0xfff
		if m.offset < pageOff || m.offset >= p.Off+max(p.Filesz, 1) {
			continue
		}
		score := 0
		if (p.Flags&elf.PF_X != 0) == m.exec() {
			score += 2
		}
		if (p.Flags&elf.PF_W != 0) == m.writable() {
			score++
		}
		cs = append(cs, cand{m.start - p.Vaddr - m.offset + p.Off, score})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	out := make([]uint64, len(cs))
	for i, c := range cs {
		out[i] = c.bias
	}
	if len(out) == 0 && len(o.loads) == 0 && m.offset == 0 {
		// An image without load segments mapped whole (never seen for
		// real objects, but keeps addresses resolvable).
		out = append(out, m.start)
	}
	return out
}

// extent returns the ELF virtual address range covered by the object's load
// segments in memory, including .bss beyond the file content.
func (o *object) extent() (lo, hi uint64) {
	lo = ^uint64(0)
	for _, p := range o.loads {
		lo = min(lo, p.Vaddr)
		hi = max(hi, p.Vaddr+p.Memsz)
	}
	if lo > hi {
		return 0, 0
	}
	return lo, hi
}

// fileBytes returns the file content of the ELF virtual address range
// [start, end), when it lies within one load segment's file content.
func (o *object) fileBytes(start, end uint64) ([]byte, bool) {
	for _, p := range o.loads {
		if start < p.Vaddr || end > p.Vaddr+p.Filesz || end < start {
			continue
		}
		off := start - p.Vaddr + p.Off
		n := end - start
		if off+n > uint64(len(o.data)) {
			return nil, false
		}
		return o.data[off : off+n], true
	}
	return nil, false
}
