package symbolize

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/internal/boundedio"
	"github.com/contend-dev/contend/recording"
)

// Code a JIT compiler generates has no symbols on disk. A runtime that
// wants it named writes a perf map, /tmp/perf-PID.map: one line per piece
// of code, "START SIZE NAME", START and SIZE in hex. The HotSpot JVM
// writes one on `jcmd PID Compiler.perfmap` (JDK 17 and later) and at
// exit with -XX:+DumpPerfMapAtExit; its names are compiled methods
// ("void pkg.Class.method(int, long)"), the interpreter ("Interpreter")
// and stubs ("StubRoutines (1)", "_complete_monitor_locking_Java").

// maxPerfMapBytes bounds the perf map read: a large service's code cache
// (240 MB at most by default) holds some hundred thousand blobs, 10 to 20
// MB of map text; past 64 MB the file is not a JVM's map.
const maxPerfMapBytes = 64 << 20

// perfEntry is one named range of generated code.
type perfEntry struct {
	start, end uint64
	name       string
}

// perfMap is a perf map sorted by start address, with no two entries
// overlapping.
type perfMap struct {
	entries []perfEntry
}

// lookup returns the entry containing addr.
func (m *perfMap) lookup(addr uint64) (perfEntry, bool) {
	if m == nil {
		return perfEntry{}, false
	}
	i := sort.Search(len(m.entries), func(i int) bool { return m.entries[i].end > addr })
	if i < len(m.entries) && m.entries[i].start <= addr {
		return m.entries[i], true
	}
	return perfEntry{}, false
}

// PerfMapPath returns the path, as seen from this process, of the perf
// map that process pid writes: /tmp/perf-N.map inside its mount namespace
// (reached through <procRoot>/PID/root), N being its pid in its own pid
// namespace (the last NSpid field of its status).
func PerfMapPath(procRoot string, pid int) string {
	if procRoot == "" {
		procRoot = "/proc"
	}
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	nspid := pid
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
						nspid = n
					}
				}
			}
		}
	}
	return filepath.Join(dir, "root", "tmp", fmt.Sprintf("perf-%d.map", nspid))
}

// LoadPerfMap reads the perf map at path and names from it every address
// that lies in no mapped file: frames in a named range become
// "pkg.Class.method" (compiled Java methods, their argument list and
// return type dropped), "Interpreter" or the stub's name, with module
// recording.ModuleJava. A map loaded later replaces the ranges it covers
// and keeps the others: code the JVM freed since keeps its old name, and
// code at an address reused for another method takes the newer one. It
// returns how many entries the file held.
//
// The map is a file the target names, in a directory any local user may
// write (/tmp), so it is opened through boundedio's opener without
// following a symbolic link and without blocking, and read only when
// fstat shows a regular file owned by the target's effective uid (from
// its status under the proc root) or root, no larger than
// maxPerfMapBytes: a FIFO planted there would otherwise hang a root
// contend, and a link would make it read a file of root's choosing.
func (p *Process) LoadPerfMap(path string) (int, error) {
	uid, err := p.impl.effectiveUID()
	if err != nil {
		return 0, fmt.Errorf("perf map: %w", err)
	}
	data, err := boundedio.ReadFile(path, boundedio.Options{NoFollow: true, CheckOwner: true, Owner: uid}, maxPerfMapBytes)
	if err != nil {
		return 0, fmt.Errorf("perf map: %w", err)
	}
	m, err := parsePerfMap(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("perf map %s: %w", path, err)
	}
	p.impl.mu.Lock()
	defer p.impl.mu.Unlock()
	p.impl.perf = mergePerfMaps(m, p.impl.perf)
	p.impl.cache = map[uint64][]recording.Frame{}
	return len(m.entries), nil
}

// parsePerfMap reads a perf map. Lines that do not parse are skipped: a
// map being written while it is read ends in a partial line. It fails
// only when not one line parses from a non-empty input.
func parsePerfMap(r io.Reader) (*perfMap, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	m := &perfMap{}
	lines := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		lines++
		e, ok := parsePerfLine(string(line))
		if !ok {
			continue
		}
		m.entries = append(m.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if lines > 0 && len(m.entries) == 0 {
		return nil, fmt.Errorf("no line of %d reads START SIZE NAME", lines)
	}
	sort.SliceStable(m.entries, func(i, j int) bool { return m.entries[i].start < m.entries[j].start })
	// An entry overlapping the previous one is left out: the map lists
	// live code, whose ranges never overlap, so a clash is a stale line.
	out := m.entries[:0]
	for _, e := range m.entries {
		if n := len(out); n > 0 && e.start < out[n-1].end {
			continue
		}
		out = append(out, e)
	}
	m.entries = out
	return m, nil
}

// parsePerfLine reads "START SIZE NAME" (hex numbers, with or without 0x).
func parsePerfLine(line string) (perfEntry, bool) {
	a, rest, ok := strings.Cut(line, " ")
	if !ok {
		return perfEntry{}, false
	}
	b, name, ok := strings.Cut(strings.TrimLeft(rest, " "), " ")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return perfEntry{}, false
	}
	start, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	size, err2 := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
	if err1 != nil || err2 != nil || size == 0 || start+size < start {
		return perfEntry{}, false
	}
	return perfEntry{start: start, end: start + size, name: javaName(name)}, true
}

// javaName turns a perf map name into the name Java users know:
// "void pkg.Class.method(int, long)" → "pkg.Class.method",
// "pkg.Class$Inner.<init>(int)" → "pkg.Class$Inner.<init>". Stubs and the
// interpreter ("StubRoutines (1)", "Interpreter") keep their names.
func javaName(name string) string {
	open := strings.IndexByte(name, '(')
	if open <= 0 || !strings.HasSuffix(name, ")") || name[open-1] == ' ' {
		return name // not "…method(args)": a stub
	}
	head := name[:open]
	if sp := strings.LastIndexByte(head, ' '); sp >= 0 {
		head = head[sp+1:] // the return type
	}
	if !strings.Contains(head, ".") {
		return name
	}
	return head
}

// mergePerfMaps returns cur plus every entry of old that overlaps none of
// cur.
func mergePerfMaps(cur, old *perfMap) *perfMap {
	if old == nil {
		return cur
	}
	out := &perfMap{entries: append([]perfEntry(nil), cur.entries...)}
	for _, e := range old.entries {
		i := sort.Search(len(cur.entries), func(i int) bool { return cur.entries[i].end > e.start })
		if i < len(cur.entries) && cur.entries[i].start < e.end {
			continue
		}
		out.entries = append(out.entries, e)
	}
	sort.Slice(out.entries, func(i, j int) bool { return out.entries[i].start < out.entries[j].start })
	return out
}

// perfFrame names pc from the perf map, false when no entry holds it.
// Caller holds p.mu.
func (p *process) perfFrame(lookup, pc uint64) (recording.Frame, bool) {
	e, ok := p.perf.lookup(lookup)
	if !ok {
		return recording.Frame{}, false
	}
	return recording.Frame{Func: e.name, Module: recording.ModuleJava, Addr: pc}, true
}

// CodeRange is a named range of generated code from a perf map.
type CodeRange struct {
	Name       string
	Start, End uint64
}

// PerfMapRange returns the perf map's range containing pc, false when no
// loaded perf map names it.
func (p *Process) PerfMapRange(pc uint64) (CodeRange, bool) {
	p.impl.mu.Lock()
	defer p.impl.mu.Unlock()
	e, ok := p.impl.perf.lookup(pc)
	if !ok {
		return CodeRange{}, false
	}
	return CodeRange{Name: e.name, Start: e.start, End: e.end}, true
}

// effectiveUID returns the effective uid of the process, read from the
// Uid line of its status under the proc root: the owner the files it
// writes have.
func (p *process) effectiveUID() (int, error) {
	b, err := os.ReadFile(filepath.Join(p.procDir, "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return strconv.Atoi(f[1])
			}
		}
	}
	return 0, fmt.Errorf("%s: no Uid line", filepath.Join(p.procDir, "status"))
}
