package goprof_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/goprof"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestLoadRecognisesKinds(t *testing.T) {
	tests := []struct {
		file string
		want goprof.Kind
	}{
		{"go126-mutex.pb.gz", goprof.KindMutex},
		{"go126-block.pb.gz", goprof.KindBlock},
		{"go126-cpu.pb.gz", goprof.KindCPU},
		{"go126-goroutine.pb.gz", goprof.KindGoroutine},
		{"go126-mutex-debug1.txt", goprof.KindMutex},
		{"go126-block-debug1.txt", goprof.KindBlock},
		{"go120-mutex-debug1.txt", goprof.KindMutex},
		{"go120-block-debug1.txt", goprof.KindBlock},
		{"go126-debug1.txt", goprof.KindGoroutineText},
		{"go126-debug2.txt", goprof.KindGoroutineDump},
		{"go126-labels-debug2.txt", goprof.KindGoroutineDump},
		{"go120-debug2.txt", goprof.KindGoroutineDump},
		{"go126-sigquit.txt", goprof.KindGoroutineDump},
		{"go126-panic.txt", goprof.KindGoroutineDump},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := goprof.Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind != tt.want {
				t.Errorf("kind = %s, want %s", f.Kind, tt.want)
			}
			if (f.Profile != nil) == (f.Dump != nil) {
				t.Errorf("want exactly one of Profile and Dump, got profile=%v dump=%v", f.Profile != nil, f.Dump != nil)
			}
			if f.Profile != nil {
				if err := f.Profile.CheckValid(); err != nil {
					t.Errorf("CheckValid: %v", err)
				}
			}
		})
	}
}

// TestParseIgnoresName checks that recognition is by content: the same
// bytes under a misleading name give the same kind.
func TestParseIgnoresName(t *testing.T) {
	for file, misleading := range map[string]string{
		"go126-mutex.pb.gz": "block.pb.gz",
		"go126-block.pb.gz": "mutex.txt",
		"go126-debug2.txt":  "cpu.pb.gz",
	} {
		data := readTestdata(t, file)
		want, err := goprof.Parse(file, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := goprof.Parse(misleading, data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != want.Kind {
			t.Errorf("%s named %s: kind %s, want %s", file, misleading, got.Kind, want.Kind)
		}
	}
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gunzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseCompressionIndependent(t *testing.T) {
	// Gzipped text and plain protobuf are recognised like their usual
	// forms.
	dump := readTestdata(t, "go126-debug2.txt")
	f, err := goprof.Parse("dump.gz", gzipBytes(t, dump))
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != goprof.KindGoroutineDump || !bytes.Equal(f.Dump.Raw, dump) {
		t.Errorf("gzipped dump: kind %s, raw kept %v", f.Kind, bytes.Equal(f.Dump.Raw, dump))
	}
	plain := gunzipBytes(t, readTestdata(t, "go126-mutex.pb.gz"))
	f, err = goprof.Parse("mutex.pb", plain)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != goprof.KindMutex {
		t.Errorf("plain protobuf: kind %s, want mutex", f.Kind)
	}
}

func TestLegacyTextIsSymbolized(t *testing.T) {
	// The debug=1 text and the protobuf form of one profile, written back
	// to back by the same process, must name the same leaves with the same
	// values.
	for _, kind := range []string{"mutex", "block"} {
		text, err := goprof.Load(filepath.Join("testdata", "go126-"+kind+"-debug1.txt"))
		if err != nil {
			t.Fatal(err)
		}
		pb, err := goprof.Load(filepath.Join("testdata", "go126-"+kind+".pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		got, want := leafValues(text.Profile), leafValues(pb.Profile)
		for leaf, v := range got {
			if want[leaf] != v {
				t.Errorf("%s: leaf %s delay %d in text, %d in protobuf", kind, leaf, v, want[leaf])
			}
		}
		if len(got) == 0 {
			t.Errorf("%s: no named leaf in the legacy text profile", kind)
		}
	}
}

// leafValues sums the delay of each sample by "leaf function / caller".
func leafValues(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				names = append(names, ln.Function.Name)
			}
		}
		if len(names) < 2 {
			continue
		}
		out[goprof.CanonicalFunc(names[0])+" / "+goprof.CanonicalFunc(names[1])] += s.Value[1]
	}
	return out
}

func TestLegacyGo120Mutex(t *testing.T) {
	f, err := goprof.Load(filepath.Join("testdata", "go120-mutex-debug1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Profile.Sample[0]
	if got := s.Location[1].Line[0].Function.Name; got != "example.com/relayd/pool.(*Subscription).onIncomingMessage" {
		t.Errorf("caller of the first sample = %q", got)
	}
	if got := s.Location[1].Line[0].Line; got != 151 {
		t.Errorf("line = %d, want 151", got)
	}
	// "sampling period=5" scales the count: 412 contentions seen as 5×.
	if s.Value[0] != 412*5 {
		t.Errorf("contentions = %d, want %d", s.Value[0], 412*5)
	}
}

// contentionProfile builds a contentions/delay profile whose samples have
// the given leaf functions.
func contentionProfile(leaves ...string) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:     1,
	}
	goexit := &profile.Function{ID: 1, Name: "runtime.goexit"}
	p.Function = append(p.Function, goexit)
	root := &profile.Location{ID: 1, Line: []profile.Line{{Function: goexit}}}
	p.Location = append(p.Location, root)
	for i, name := range leaves {
		fn := &profile.Function{ID: uint64(i + 2), Name: name}
		loc := &profile.Location{ID: uint64(i + 2), Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc, root}, Value: []int64{1, 1000}})
	}
	return p
}

func TestClassifyContention(t *testing.T) {
	tests := []struct {
		name   string
		leaves []string
		want   goprof.Kind
	}{
		{"empty", nil, goprof.KindContention},
		{"unlock", []string{"sync.(*Mutex).Unlock", "sync.(*RWMutex).RUnlock"}, goprof.KindMutex},
		{"runtime lock", []string{"runtime._LostContendedRuntimeLock", "runtime.unlock"}, goprof.KindMutex},
		{"internal sync", []string{"internal/sync.(*Mutex).Unlock"}, goprof.KindMutex},
		{"waits", []string{"sync.(*Mutex).Lock", "runtime.chanrecv1", "runtime.selectgo", "sync.(*Cond).Wait", "sync.(*WaitGroup).Wait"}, goprof.KindBlock},
		{"rwmutex waits", []string{"sync.(*RWMutex).RLock", "sync.(*RWMutex).Lock", "runtime.chansend1"}, goprof.KindBlock},
		{"unknown leaves", []string{"runtime.mcall", "main.work"}, goprof.KindContention},
		{"tie", []string{"sync.(*Mutex).Unlock", "sync.(*Mutex).Lock"}, goprof.KindContention},
		{"majority", []string{"sync.(*Mutex).Unlock", "sync.(*Mutex).Unlock", "sync.(*Mutex).Lock"}, goprof.KindMutex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := goprof.ClassifyProfile(contentionProfile(tt.leaves...))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("kind = %s, want %s", got, tt.want)
			}
		})
	}
}

func writeProfile(t testing.TB, p *profile.Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseRejects(t *testing.T) {
	heap := readTestdata(t, "go126-heap.pb.gz")
	allocs, err := profile.ParseData(heap)
	if err != nil {
		t.Fatal(err)
	}
	allocs.DefaultSampleType = "alloc_space"
	nonGo := contentionProfile("pthread_mutex_lock", "do_work")
	nonGo.Function[0].Name = "start_thread"
	nonGoCPU := contentionProfile("memcpy")
	nonGoCPU.Function[0].Name = "_start"
	nonGoCPU.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	odd := contentionProfile("x")
	odd.SampleType = []*profile.ValueType{{Type: "bytes", Unit: "bytes"}, {Type: "latency", Unit: "seconds"}}
	mutex := readTestdata(t, "go126-mutex.pb.gz")
	dump := readTestdata(t, "go126-debug2.txt")

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"empty gzip", gzipBytes(t, nil), "empty file"},
		{"heap", heap, "heap profile: not a contention input"},
		{"heap text", readTestdata(t, "go126-heap.txt"), "heap profile: not a contention input"},
		{"allocs", writeProfile(t, allocs), "allocs profile: not a contention input"},
		{"threadcreate", readTestdata(t, "go126-threadcreate.txt"), "threadcreate profile: not a contention input"},
		{"non-Go contention", writeProfile(t, nonGo), "non-Go program"},
		{"non-Go cpu", writeProfile(t, nonGoCPU), "non-Go program"},
		{"other sample types", writeProfile(t, odd), "sample types bytes/bytes, latency/seconds"},
		{"text", []byte("hello, world\nthis is not a profile\n"), `text, first line 12 bytes long`},
		{"binary", []byte{0xff, 0xfe, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05}, "not a Go profile"},
		{"truncated gzip", mutex[:len(mutex)/2], "truncated gzip"},
		{"corrupt gzip header", append([]byte{0x1f, 0x8b, 0x01}, mutex[3:]...), "corrupt gzip"},
		{"truncated dump", dump[:bytes.Index(dump, []byte("runtime/pprof/pprof.go:819"))], "expected frame file:line"},
		{"truncated debug1", firstParagraph(readTestdata(t, "go126-debug1.txt")), "truncated dump"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := goprof.Parse("in.prof", tt.data)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, goprof.ErrBadProfile) {
				t.Errorf("error %q does not wrap ErrBadProfile", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "in.prof: ") {
				t.Errorf("error %q does not start with the file name", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error %q spans lines", msg)
			}
		})
	}
}

// firstParagraph returns data up to its first blank line.
func firstParagraph(data []byte) []byte {
	if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
		return data[:i+2]
	}
	return data
}

func TestCanonicalFunc(t *testing.T) {
	for in, want := range map[string]string{
		"main.(*box[go.shape.int]).hold":                "main.(*box[...]).hold",
		"main.(*box[...]).hold":                         "main.(*box[...]).hold",
		"pkg.Map[go.shape.string,go.shape.[]uint8].Get": "pkg.Map[...].Get",
		"pkg.f[go.shape.struct { a [2]int }]":           "pkg.f[...]",
		"sync.(*Mutex).Unlock":                          "sync.(*Mutex).Unlock",
		"main.main.func1":                               "main.main.func1",
		"example.com/x.(*T).m[...].func2":               "example.com/x.(*T).m[...].func2",
		"gopkg.in/yaml%2ev3.(*decoder).unmarshal":       "gopkg.in/yaml%2ev3.(*decoder).unmarshal",
	} {
		if got := goprof.CanonicalFunc(in); got != want {
			t.Errorf("CanonicalFunc(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := goprof.Load(filepath.Join(t.TempDir(), "nope.pb.gz"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want a not-exist error", err)
	}
	if errors.Is(err, goprof.ErrBadProfile) {
		t.Errorf("a missing file is not a bad profile: %v", err)
	}
}

// testInput is one file of testdata, or the plain form of a gzipped one.
type testInput struct {
	name string
	data []byte
	gz   bool // data is gzip-compressed
}

// testInputs returns every file of testdata and, for gzipped ones, their
// decompressed form too.
func testInputs(t testing.TB) []testInput {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var out []testInput
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data := readTestdata(t, e.Name())
		gz := bytes.HasPrefix(data, []byte{0x1f, 0x8b})
		out = append(out, testInput{e.Name(), data, gz})
		if gz {
			out = append(out, testInput{e.Name() + " (plain)", gunzipBytes(t, data), false})
		}
	}
	return out
}

// TestTruncatedInputsNeverPanic cuts every test input at many points; each
// cut must parse or fail with ErrBadProfile.
func TestTruncatedInputsNeverPanic(t *testing.T) {
	for _, in := range testInputs(t) {
		step := max(1, len(in.data)/97)
		for n := 0; n < len(in.data); n += step {
			_, err := goprof.Parse(in.name, in.data[:n])
			if err != nil && !errors.Is(err, goprof.ErrBadProfile) {
				t.Errorf("%s cut at %d: error %v does not wrap ErrBadProfile", in.name, n, err)
			}
		}
	}
}

func TestProfileRoundTrip(t *testing.T) {
	// A profile recognised, written and read again keeps its kind and
	// stays valid (legacy text gains function names on the way).
	for _, file := range []string{"go126-mutex-debug1.txt", "go120-block-debug1.txt", "go126-cpu.pb.gz"} {
		f, err := goprof.Load(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		again, err := goprof.Parse(file, writeProfile(t, f.Profile))
		if err != nil {
			t.Fatalf("%s: reparse: %v", file, err)
		}
		if again.Kind != f.Kind {
			t.Errorf("%s: kind %s after round trip, want %s", file, again.Kind, f.Kind)
		}
		if err := again.Profile.CheckValid(); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}

// A short CPU profile of a Go program may hold samples in user code only:
// CPU stacks stop above runtime.goexit. Its .go source files still mark it
// as Go.
func TestShortGoCPUProfileWithoutRuntimeFrames(t *testing.T) {
	p := contentionProfile("main.work")
	p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	p.Function[0].Filename = "/src/app/main.go"
	f, err := goprof.Parse("cpu.pb.gz", writeProfile(t, p))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Kind != goprof.KindCPU {
		t.Errorf("kind %s, want %s", f.Kind, goprof.KindCPU)
	}
}
