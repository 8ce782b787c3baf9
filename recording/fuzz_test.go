package recording

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/testbin"
)

// FuzzRead reads a recording directory whose JSON files and event log are
// any bytes: Read never panics, and what it accepts its readers can use
// without panicking (the timeline's series, the events' stacks).
func FuzzRead(f *testing.F) {
	// Small budgets: a fuzzed event log must not make a worker inflate
	// hundreds of MiB.
	old := goprof.SetMaxDecoded(1 << 20)
	f.Cleanup(func() { goprof.SetMaxDecoded(old) })
	f.Add([]byte(`{"version":1,"source":"live","pid":1,"start":"2024-01-01T00:00:00Z","duration_ns":1000000000}`),
		[]byte(`{"interval_ns":100000000,"clock_ticks":100,"samples":3,"threads":[{"tid":7,"comm":"w","first":1,"states":"RS","utime":[1,2],"stime":[0,0],"voluntary":[1,1],"involuntary":[0,0]}]}`),
		[]byte(`[{"addr":1,"waits":2,"blocked":1,"wait_ns":5,"max_ns":5,"hist":[0,1],"wakes":1,"woken":1,"waiters":[7]}]`),
		[]byte(`[{"frames":[{"func":"main"}]}]`),
		testbin.Gzip([]byte(`{"k":"wait","t":1,"d":5,"tid":7,"addr":1,"stack":0}`+"\n")))
	f.Add([]byte(`{}`), []byte(`{"samples":2,"threads":[{"first":-3,"states":"RRR"}]}`), []byte(`null`), []byte(`[]`), []byte{})
	f.Fuzz(func(t *testing.T, meta, threads, locks, stacks, events []byte) {
		dir := t.TempDir()
		for name, data := range map[string][]byte{MetaFile: meta, ThreadsFile: threads, LocksFile: locks, StacksFile: stacks, EventsFile: events} {
			if len(data) == 0 && name != MetaFile {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Read(dir)
		if err != nil {
			return
		}
		if tl := r.Threads; tl != nil {
			series := tl.RunnableSeries()
			if len(series) != tl.Samples {
				t.Fatalf("%d runnable counts for %d samples", len(series), tl.Samples)
			}
			last := tl.LastInstant()
			for _, i := range []int{0, last / 2, last} {
				tl.StatesAt(i)
			}
			tl.Usage(0, last)
			tl.CPUPercent(0, last)
			tl.Window(time.Second)
		}
		for _, e := range r.Events {
			if e.Stack >= 0 {
				_ = r.Stacks[e.Stack]
			}
		}
		r.Meta.CounterTotals()
	})
}

// gunzipSeed returns the uncompressed bytes of a gzipped test file, so
// the fuzzer mutates the protobuf rather than the deflate stream around
// it (mutations of which are mostly rejected as corrupt gzip).
func gunzipSeed(f *testing.F, path string) []byte {
	f.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	out, err := goprof.Decompress(data)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

// FuzzOpen opens any two input files, given one by one and as a
// directory of profiles: Open never panics, refuses bad input with an
// error that says so, and what it accepts is valid: every view a valid
// profile, a duration that is not negative, each file listed once.
func FuzzOpen(f *testing.F) {
	old := goprof.SetMaxDecoded(1 << 20)
	f.Cleanup(func() { goprof.SetMaxDecoded(old) })
	fix := filepath.Join("..", "analyzer", "testdata", "fixtures", "iolock-bad")
	dump, err := os.ReadFile(filepath.Join(fix, "goroutine-debug1.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gunzipSeed(f, filepath.Join(fix, "mutex.pb.gz")), gunzipSeed(f, filepath.Join(fix, "block.pb.gz")))
	f.Add(gunzipSeed(f, filepath.Join(fix, "cpu.pb.gz")), dump)
	f.Add([]byte("goroutine 1 [sync.Mutex.Lock]:\nsync.(*Mutex).Lock(...)\n\tsync/mutex.go:46\nmain.f()\n\t/a.go:1 +0x1\n"), []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		dir := t.TempDir()
		paths := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
		for i, data := range [][]byte{a, b} {
			if err := os.WriteFile(paths[i], data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range [][]string{paths, {dir}} {
			r, err := Open(in...)
			if err != nil {
				if !errors.Is(err, goprof.ErrBadProfile) && !errors.Is(err, ErrNotRecording) {
					t.Fatalf("Open %v: %v is neither bad input nor not a recording", in, err)
				}
				continue
			}
			if r.Meta.Duration < 0 || len(r.Meta.Inputs) != 2 {
				t.Fatalf("Open %v: duration %v, inputs %v", in, r.Meta.Duration, r.Meta.Inputs)
			}
			for v, p := range r.Profiles {
				if err := p.CheckValid(); err != nil {
					t.Fatalf("Open %v: view %s is not a valid profile: %v", in, v, err)
				}
			}
		}
	})
}
