package symbolize

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end uint64
	perms      string // "r-xp"
	offset     uint64
	dev        string // "fd:01"
	inode      uint64
	path       string // "" for anonymous mappings, "[vdso]", "/usr/lib/…"
}

func (m *mapping) exec() bool     { return len(m.perms) > 2 && m.perms[2] == 'x' }
func (m *mapping) writable() bool { return len(m.perms) > 1 && m.perms[1] == 'w' }

// isFile reports whether the mapping is backed by a file on disk.
func (m *mapping) isFile() bool {
	return m.inode != 0 && strings.HasPrefix(m.path, "/")
}

// filePath is the mapped path without the " (deleted)" marker the kernel
// appends when the file was unlinked.
func (m *mapping) filePath() string {
	return strings.TrimSuffix(m.path, " (deleted)")
}

// parseMaps parses the text of /proc/PID/maps. procfs's Proc.ProcMaps is
// not used: it rebuilds a path from the line's whitespace-separated
// fields, so a file whose name holds a run of spaces is named wrong (the
// kernel prints the name as it is), it drops the scanner's error, so a
// line past its 64 KiB buffer ends the listing as if the process had no
// more mappings, and it parses only what it reads itself, where the
// symbolizer parses text it has read once (and /proc/self/maps for the
// vDSO).
func parseMaps(r io.Reader) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := parseMapsLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", n, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	return out, nil
}

// parseMapsLine parses "start-end perms offset dev inode   path".
func parseMapsLine(line string) (mapping, error) {
	var m mapping
	rest := line
	field := func() string {
		rest = strings.TrimLeft(rest, " ")
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			f := rest
			rest = ""
			return f
		}
		f := rest[:i]
		rest = rest[i:]
		return f
	}
	rng, perms, off, dev, ino := field(), field(), field(), field(), field()
	lo, hi, ok := strings.Cut(rng, "-")
	if !ok || len(perms) != 4 || dev == "" {
		return m, fmt.Errorf("malformed %q", line)
	}
	var err error
	if m.start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return m, fmt.Errorf("malformed start in %q", line)
	}
	if m.end, err = strconv.ParseUint(hi, 16, 64); err != nil || m.end < m.start {
		return m, fmt.Errorf("malformed end in %q", line)
	}
	if m.offset, err = strconv.ParseUint(off, 16, 64); err != nil {
		return m, fmt.Errorf("malformed offset in %q", line)
	}
	if m.inode, err = strconv.ParseUint(ino, 10, 64); err != nil {
		return m, fmt.Errorf("malformed inode in %q", line)
	}
	m.perms = perms
	m.dev = dev
	m.path = strings.TrimLeft(rest, " ")
	return m, nil
}
