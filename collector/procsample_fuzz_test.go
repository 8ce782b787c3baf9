package collector

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzParseStat: any text a /proc stat file could hold (a thread names
// itself, so comm is anything up to 15 bytes, parentheses and spaces
// included) parses without panicking, and what parses agrees with the
// fields counted from the last ')'.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (a b) S 0 1 1 0 -1 0 0 0 0 0 7 8 0 0 20 0 1 0 99 0 0\n"))
	f.Add([]byte("1 ((x) ) R 0 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("42 (\x1b]0;x\x07) D 0 1 1 0 -1 0 0 0 0 0 18446744073709551615 2 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("1 (a) S 0 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ps procSample
		if err := parseStat(b, &ps); err != nil {
			return
		}
		r := bytes.LastIndexByte(b, ')')
		fields := bytes.Split(b[r+2:], []byte(" "))
		if len(fields) < 20 {
			t.Fatalf("parsed %q with %d fields after comm", b, len(fields))
		}
		if ps.state != fields[0][0] || len(fields[0]) != 1 {
			t.Fatalf("state %c from %q", ps.state, fields[0])
		}
		for _, c := range []struct {
			got uint64
			i   int
		}{{ps.utime, 11}, {ps.stime, 12}, {ps.start, 19}} {
			want, err := strconv.ParseUint(string(fields[c.i]), 10, 64)
			if err != nil || want != c.got {
				t.Fatalf("field %d = %d from %q (%v)", c.i+3, c.got, fields[c.i], err)
			}
		}
	})
}

// FuzzParseStatus: any status text parses without panicking, and the
// counts it finds are the decimal numbers on their lines.
func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("Name:\tx\nTgid:\t12\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\n"))
	f.Add([]byte("voluntary_ctxt_switches:\t99999999999999999999\nnonvoluntary_ctxt_switches:\t6\n"))
	f.Add([]byte("Tgid:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ps procSample
		if err := parseStatus(b, &ps); err != nil {
			return
		}
		// The last line of a key is the one that counts.
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if key, val, ok := bytes.Cut(line, []byte(":")); ok && string(key) == "voluntary_ctxt_switches" {
				last = bytes.TrimSpace(val)
			}
		}
		if want, err := strconv.ParseUint(string(last), 10, 64); err != nil || want != ps.voluntary {
			t.Fatalf("voluntary %d from %q (%v)", ps.voluntary, last, err)
		}
	})
}
