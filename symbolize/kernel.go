package symbolize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/recording"
)

// ErrKallsymsHidden is returned (wrapped) by OpenKernel when kallsyms shows
// only zero addresses: the reader lacks CAP_SYSLOG or kptr_restrict is set.
var ErrKallsymsHidden = errors.New("kernel symbol addresses are hidden (kptr_restrict; run as root)")

// Kernel names kernel addresses through /proc/kallsyms. kallsyms gives no
// sizes, so a symbol is taken to extend to the next symbol's address;
// addresses past the last symbol stay unresolved. Safe for concurrent use
// (it is read-only after OpenKernel).
type Kernel struct {
	syms []ksym
	// names holds every symbol's name and the modules' names, end to
	// end; a ksym refers to its own by offset. The table then holds no
	// pointer per symbol (kallsyms has over a hundred thousand), so a
	// long-running recorder's garbage collector does not scan it at every
	// cycle, and it takes half the memory.
	names string
	// modules are the module names, as offsets into names; ksym.module
	// indexes it, 0 being the kernel image.
	modules []span
}

// span is a string of Kernel.names.
type span struct{ off, n uint32 }

type ksym struct {
	addr   uint64
	name   span
	module uint16 // index into Kernel.modules; 0 for the kernel image
	text   bool
}

// kernelModule is the Module of frames in the kernel image, as perf names
// it.
const kernelModule = "[kernel.kallsyms]"

// OpenKernel reads <procRoot>/kallsyms ("" means /proc).
func OpenKernel(procRoot string) (*Kernel, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	path := filepath.Join(procRoot, "kallsyms")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open kernel symbols: %w", err)
	}
	defer f.Close()
	k, nonzero, err := parseKallsyms(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(k.syms) == 0 {
		return nil, fmt.Errorf("read %s: no symbols", path)
	}
	if !nonzero {
		return nil, fmt.Errorf("read %s: %w", path, ErrKallsymsHidden)
	}
	k.sortSymbols()
	return k, nil
}

// parseKallsyms reads the symbols of r, in kallsyms' format, in file
// order; nonzero reports whether any has an address other than zero.
// Absolute and undefined entries and malformed lines are skipped.
func parseKallsyms(r io.Reader) (k *Kernel, nonzero bool, err error) {
	// The tables grow by doubling from about a kernel's size (this
	// machine's has 122,000 symbols, 3 MB of names): append's own growth
	// for large slices (a quarter at a time) allocated five times their
	// final size, 34 MB at every start of contend, the largest part of
	// its memory's high-water mark.
	k = &Kernel{modules: []span{{}}, syms: make([]ksym, 0, 1<<17)}
	names := make([]byte, 0, 4<<20)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	// Lines are split in place and names appended to one buffer: the
	// table holds no line of kallsyms and no string per symbol.
	modules := map[string]uint16{"": 0}
	var fields [4][]byte
	for sc.Scan() {
		nf := splitFields(sc.Bytes(), fields[:])
		if nf < 3 || len(fields[1]) != 1 {
			continue
		}
		addr, err := strconv.ParseUint(string(fields[0]), 16, 64)
		if err != nil {
			continue
		}
		typ := fields[1][0]
		if typ == 'a' || typ == 'A' || typ == 'U' || typ == 'u' {
			continue // absolute values and undefined entries are not places
		}
		s := ksym{addr: addr, name: span{uint32(len(names)), uint32(len(fields[2]))}}
		names = appendDoubling(names, fields[2]...)
		if nf >= 4 {
			m := bytes.Trim(fields[3], "[]")
			id, ok := modules[string(m)]
			if !ok && len(k.modules) <= math.MaxUint16 {
				id = uint16(len(k.modules))
				modules[string(m)] = id
				k.modules = append(k.modules, span{uint32(len(names)), uint32(len(m))})
				names = appendDoubling(names, m...)
			}
			s.module = id
		}
		switch typ {
		case 'T', 't', 'W', 'w':
			s.text = true
		}
		if addr != 0 {
			nonzero = true
		}
		k.syms = appendDoubling(k.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, false, err
	}
	k.names = string(names)
	return k, nonzero, nil
}

// sortSymbols orders k's symbols by address and keeps one per address,
// the one a frame is named by.
func (k *Kernel) sortSymbols() {
	sort.SliceStable(k.syms, func(i, j int) bool {
		a, b := &k.syms[i], &k.syms[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		// Of aliases, the first kept is the one shown: text symbols, then
		// fewer leading underscores (markers such as _stext lose).
		if a.text != b.text {
			return a.text
		}
		return underscores(k.str(a.name)) < underscores(k.str(b.name))
	})
	out := k.syms[:0]
	for _, s := range k.syms {
		if len(out) > 0 && out[len(out)-1].addr == s.addr {
			continue
		}
		out = append(out, s)
	}
	k.syms = slices.Clone(out) // at its size: the doubling left up to half unused
}

// appendDoubling is append that doubles a full slice's capacity.
func appendDoubling[T any](s []T, v ...T) []T {
	if len(s)+len(v) > cap(s) {
		s = slices.Grow(s, max(len(s), len(v)))
	}
	return append(s, v...)
}

// str returns the string sp of k.names.
func (k *Kernel) str(sp span) string { return k.names[sp.off : sp.off+sp.n] }

// splitFields splits line at runs of spaces and tabs into at most
// len(fields) fields (the last one, if more, is cut at its first blank),
// without copying, and returns how many it found.
func splitFields(line []byte, fields [][]byte) int {
	n := 0
	for n < len(fields) {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			break
		}
		end := bytes.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		fields[n] = line[:end]
		n++
		line = line[end:]
	}
	return n
}

func underscores(s string) int { return len(s) - len(strings.TrimLeft(s, "_")) }

// Frame names one kernel address. The symbol containing addr is the last
// one at or below it, bounded by the next symbol; other addresses give a
// frame named "0x…".
func (k *Kernel) Frame(addr uint64) recording.Frame {
	return k.frame(addr, addr)
}

// Stack names kernel addresses leaf first; like Process.Stack, every entry
// after the first is a return address and is looked up at addr-1.
func (k *Kernel) Stack(addrs []uint64) recording.Stack {
	var s recording.Stack
	for i, a := range addrs {
		lookup := a
		if i > 0 && a > 0 {
			lookup = a - 1
		}
		s.Frames = append(s.Frames, k.frame(a, lookup))
	}
	return s
}

func (k *Kernel) frame(addr, lookup uint64) recording.Frame {
	f := recording.Frame{Func: fmt.Sprintf("0x%x", addr), Module: kernelModule, Addr: addr, Kernel: true}
	if k == nil {
		return f
	}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > lookup }) - 1
	// The last symbol has no known end: nothing past it is named.
	if i < 0 || i == len(k.syms)-1 {
		return f
	}
	s := &k.syms[i]
	f.Func = k.str(s.name)
	if s.module != 0 {
		f.Module = "[" + k.str(k.modules[s.module]) + "]"
	}
	return f
}
