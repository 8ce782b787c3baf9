package symbolize

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
}

type ksym struct {
	addr   uint64
	name   string
	module string // "" for the kernel image
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
	k := &Kernel{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	nonzero := false
	// Names are copied out of their lines and module names shared, so
	// that the table does not hold every line of kallsyms (hundreds of
	// thousands) in memory.
	modules := map[string]string{}
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || len(fields[1]) != 1 {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			continue
		}
		typ := fields[1][0]
		if typ == 'a' || typ == 'A' || typ == 'U' || typ == 'u' {
			continue // absolute values and undefined entries are not places
		}
		s := ksym{addr: addr, name: strings.Clone(fields[2])}
		if len(fields) >= 4 {
			m := strings.Trim(fields[3], "[]")
			if _, ok := modules[m]; !ok {
				modules[m] = strings.Clone(m)
			}
			s.module = modules[m]
		}
		switch typ {
		case 'T', 't', 'W', 'w':
			s.text = true
		}
		if addr != 0 {
			nonzero = true
		}
		k.syms = append(k.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(k.syms) == 0 {
		return nil, fmt.Errorf("read %s: no symbols", path)
	}
	if !nonzero {
		return nil, fmt.Errorf("read %s: %w", path, ErrKallsymsHidden)
	}
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
		return underscores(a.name) < underscores(b.name)
	})
	out := k.syms[:0]
	for _, s := range k.syms {
		if len(out) > 0 && out[len(out)-1].addr == s.addr {
			continue
		}
		out = append(out, s)
	}
	k.syms = append([]ksym(nil), out...)
	return k, nil
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
	f.Func = s.name
	if s.module != "" {
		f.Module = "[" + s.module + "]"
	}
	return f
}
