package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// sectionNamesELF returns a 64-bit ELF file of n sections whose names all
// point into one name of nameLen bytes, 16 bytes apart (modulo nameLen): the layout that
// makes debug/elf copy about nameLen bytes per section, a byte at a time.
// The last section is the name table, flagged compressed when compressed
// is set.
func sectionNamesELF(n int, nameLen int, compressed bool) []byte {
	le := binary.LittleEndian
	strtab := append(bytes.Repeat([]byte("a"), nameLen), 0)
	hdr := make([]byte, 64)
	copy(hdr, "\x7fELF\x02\x01\x01")
	le.PutUint16(hdr[16:], uint16(elf.ET_EXEC))
	le.PutUint16(hdr[18:], uint16(elf.EM_X86_64))
	le.PutUint32(hdr[20:], 1)
	le.PutUint64(hdr[40:], uint64(64+len(strtab)))
	le.PutUint16(hdr[52:], 64)
	le.PutUint16(hdr[58:], 64)
	le.PutUint16(hdr[60:], uint16(n))
	le.PutUint16(hdr[62:], uint16(n-1))
	b := append(hdr, strtab...)
	for i := range n {
		sh := make([]byte, 64)
		le.PutUint32(sh, uint32(i*16%nameLen))
		le.PutUint32(sh[4:], uint32(elf.SHT_PROGBITS))
		if i == n-1 {
			le.PutUint32(sh[4:], uint32(elf.SHT_STRTAB))
			if compressed {
				le.PutUint64(sh[8:], uint64(elf.SHF_COMPRESSED))
			}
			le.PutUint64(sh[24:], 64)
			le.PutUint64(sh[32:], uint64(len(strtab)))
		}
		b = append(b, sh...)
	}
	return b
}

// TestCheckELFSectionNames: 4,096 sections named into one 1 MiB name (a
// 1.3 MB file that debug/elf did not open in a minute) are refused at
// once, by CheckELF and so by newObject; so is a compressed name table.
// Real files pass: this test's executable, a C program, and small
// sections files.
func TestCheckELFSectionNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		bad  bool
	}{
		{"long names", sectionNamesELF(4096, 1<<20, false), true},
		{"many names", sectionNamesELF(65535, 8<<10, false), true},
		{"compressed", sectionNamesELF(4, 64, true), true},
		{"short names", sectionNamesELF(64, 8, false), false},
	} {
		start := time.Now()
		err := CheckELF(bytes.NewReader(tc.data), int64(len(tc.data)))
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: checked in %s", tc.name, d)
		}
		if tc.bad != errors.Is(err, errELFNames) {
			t.Errorf("%s: err %v, want refused %v", tc.name, err, tc.bad)
		}
		if tc.bad {
			if _, err := newObject(tc.data, tc.name, newLimits()); !errors.Is(err, errELFNames) {
				t.Errorf("%s: newObject err %v, want the headers refused", tc.name, err)
			}
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{self, testbin.C(t, "testdata/ledger.c", "-O2", "-g"), "/lib/x86_64-linux-gnu/libc.so.6"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		if err := CheckELF(f, st.Size()); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		f.Close()
	}
}

// FuzzCheckELF feeds CheckELF any file: it must not panic, and a file it
// accepts that debug/elf opens has section names within its bounds.
func FuzzCheckELF(f *testing.F) {
	f.Add(sectionNamesELF(8, 64, false))
	f.Add(sectionNamesELF(3, 1, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckELF(bytes.NewReader(data), int64(len(data))) != nil {
			return
		}
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		total := 0
		for _, s := range ef.Sections {
			total += len(s.Name)
			if len(s.Name) > maxNameLen {
				t.Fatalf("section name of %d bytes accepted", len(s.Name))
			}
		}
		if total > maxSectionNameBytes {
			t.Fatalf("section names of %d bytes accepted", total)
		}
	})
}
