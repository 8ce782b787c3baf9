package goprof_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/contend-dev/contend/goprof"
)

// addSeeds adds every test input to the fuzz corpus (only the text ones
// when textOnly is set).
func addSeeds(f *testing.F, textOnly bool) {
	for _, in := range testInputs(f) {
		if !textOnly || !in.gz {
			f.Add(in.data)
		}
	}
}

func checkError(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, goprof.ErrBadProfile) {
		t.Fatalf("error %q does not wrap ErrBadProfile", err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("error %q spans lines", err)
	}
}

func checkDump(t *testing.T, d *goprof.Dump) {
	t.Helper()
	sum := 0
	for _, g := range d.Groups {
		if g.Count < 1 {
			t.Fatalf("group with count %d", g.Count)
		}
		if d.Kind == goprof.KindGoroutineDump && len(g.IDs) != g.Count {
			t.Fatalf("debug=2 group of %d goroutines lists %d ids", g.Count, len(g.IDs))
		}
		sum += g.Count
	}
	if sum != d.Total {
		t.Fatalf("groups hold %d goroutines, total says %d", sum, d.Total)
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := goprof.Parse("fuzz", data)
		if err != nil {
			checkError(t, err)
			return
		}
		switch file.Kind {
		case goprof.KindMutex, goprof.KindBlock, goprof.KindContention, goprof.KindCPU, goprof.KindGoroutine:
			if file.Profile == nil || file.Dump != nil {
				t.Fatalf("%s input without exactly a profile", file.Kind)
			}
			if err := file.Profile.CheckValid(); err != nil {
				t.Fatalf("invalid %s profile accepted: %v", file.Kind, err)
			}
		case goprof.KindGoroutineText, goprof.KindGoroutineDump:
			if file.Dump == nil || file.Profile != nil {
				t.Fatalf("%s input without exactly a dump", file.Kind)
			}
			checkDump(t, file.Dump)
		default:
			t.Fatalf("unknown kind %q", file.Kind)
		}
	})
}

func FuzzParseDump(f *testing.F) {
	addSeeds(f, true)
	f.Add([]byte("goroutine 1 [running]:\nmain.f(...)\n\t/a.go:1\n"))
	f.Add([]byte("goroutine profile: total 1\n1 @ 0x1\n# labels: {\"a\":\"b\"}\n#\t0x1\tmain.f+0x1\t/a.go:1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := goprof.ParseDump(data)
		if err != nil {
			checkError(t, err)
			return
		}
		if !bytes.Equal(d.Raw, data) {
			t.Fatal("Raw differs from the input")
		}
		checkDump(t, d)
	})
}
