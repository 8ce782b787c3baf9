package recording

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/testbin"
)

// minimalDir writes a recording directory with meta.json only and returns
// its path.
func minimalDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(dir, &Recording{Meta: Meta{Source: SourceLive, PID: 1}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadRejectsMalformedTimeline: a threads.json whose series lie
// outside their samples, or that claims an absurd number of samples, is
// refused by Read with an error naming the file, instead of reaching the
// readers of the timeline (a negative first instant indexed a slice at -3;
// samples: 1e11 allocated 800 GB).
func TestReadRejectsMalformedTimeline(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"negative first", `{"interval_ns":100000000,"samples":5,"threads":[{"tid":7,"first":-3,"states":"RRR","utime":[1,2,3]}]}`, "first -3"},
		{"samples 1e11", `{"interval_ns":100000000,"samples":100000000000,"threads":[]}`, "samples 100000000000"},
		{"negative samples", `{"interval_ns":100000000,"samples":-1,"threads":[]}`, "samples -1"},
		{"states past the samples", `{"interval_ns":100000000,"samples":2,"threads":[{"tid":7,"first":1,"states":"RRR"}]}`, "run past"},
		{"first past the samples", `{"interval_ns":100000000,"samples":2,"threads":[{"tid":7,"first":9223372036854775807,"states":"R"}]}`, "run past"},
		{"counters past the states", `{"interval_ns":100000000,"samples":3,"threads":[{"tid":7,"first":0,"states":"R","utime":[1,2]}]}`, "2 utime values"},
		{"negative interval", `{"interval_ns":-5,"samples":3,"threads":[]}`, "interval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := minimalDir(t)
			writeTestFile(t, dir, ThreadsFile, c.json)
			_, err := Read(dir)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), ThreadsFile) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read: %v, want an invalid-recording error naming %s and %q", err, ThreadsFile, c.want)
			}
			if _, err := Open(dir); !errors.Is(err, ErrInvalid) {
				t.Errorf("Open: %v, want ErrInvalid", err)
			}
		})
	}
	// A valid timeline still reads.
	dir := minimalDir(t)
	writeTestFile(t, dir, ThreadsFile, `{"interval_ns":100000000,"samples":3,"threads":[{"tid":7,"first":1,"states":"RS","utime":[1,2],"stime":[0,0],"voluntary":[1,1],"involuntary":[0,0]}]}`)
	r, err := Read(dir)
	if err != nil || r.Threads == nil || len(r.Threads.RunnableSeries()) != 3 {
		t.Fatalf("valid timeline: %v %+v", err, r)
	}
}

// TestReadRejectsBadReferences: an event naming a stack below -1, or a
// lock histogram longer than a uint64's bits, is refused.
func TestReadRejectsBadReferences(t *testing.T) {
	dir := minimalDir(t)
	writeTestFile(t, dir, LocksFile, `[{"addr":1,"hist":[`+strings.Repeat("1,", 64)+`1]}]`)
	if _, err := Read(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "histogram") {
		t.Errorf("65 histogram buckets: %v", err)
	}
	dir = minimalDir(t)
	if err := os.WriteFile(filepath.Join(dir, EventsFile), testbin.Gzip([]byte(`{"k":"wait","t":1,"tid":1,"stack":-2}`+"\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "stack -2") {
		t.Errorf("stack -2: %v", err)
	}
}

// TestReadBombsStopAtBudget: a view or an event log that inflates far
// past the budget is refused, having cost about the budget.
func TestReadBombsStopAtBudget(t *testing.T) {
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(8 << 20))
	for _, c := range []struct {
		file string
		data []byte
	}{
		{"futex-wait.pb.gz", testbin.GzipZeros(256)},
		// Blank lines, read and skipped until the budget is spent.
		{EventsFile, testbin.GzipFill('\n', 256)},
		{"go-mutex.pb.gz", testbin.Gzip(testbin.GzipZeros(256))},
	} {
		dir := minimalDir(t)
		if err := os.WriteFile(filepath.Join(dir, c.file), c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		alloc := testbin.Allocated(func() { _, err = Read(dir) })
		if !errors.Is(err, goprof.ErrBadProfile) || !strings.Contains(err.Error(), c.file) {
			t.Errorf("%s bomb: %v, want a bad-input error naming the file", c.file, err)
		}
		if alloc > 40<<20 {
			t.Errorf("%s bomb: reading allocated %d MiB with an 8 MiB budget", c.file, alloc>>20)
		}
	}
	// A line without end: refused at the longest line an event takes
	// (a JSON decoder buffered a stream of spaces whole, looking for a
	// value).
	dir := minimalDir(t)
	if err := os.WriteFile(filepath.Join(dir, EventsFile), testbin.GzipFill(' ', 256), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if alloc := testbin.Allocated(func() { _, err = Read(dir) }); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "longer than") || alloc > 1<<20 {
		t.Errorf("events of spaces: %v, %d KiB allocated", err, alloc>>10)
	}
	// JSON files are refused by size before they are decoded.
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(1 << 20))
	dir = minimalDir(t)
	writeTestFile(t, dir, StacksFile, "["+strings.Repeat(`{"frames":[]},`, 1<<17)+`{"frames":[]}]`)
	if _, err := Read(dir); !errors.Is(err, goprof.ErrTooLarge) || !strings.Contains(err.Error(), StacksFile) {
		t.Errorf("large stacks.json: %v", err)
	}
}

// TestReadRefusesFIFO: a FIFO in place of a recording file is refused at
// once; reading it would block forever.
func TestReadRefusesFIFO(t *testing.T) {
	for _, name := range []string{ThreadsFile, EventsFile, "oncpu.pb.gz", "goroutines-0.txt"} {
		dir := minimalDir(t)
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
		err := testbin.NoBlock(t, "Read with "+name+" a FIFO", func() error {
			_, err := Read(dir)
			return err
		})
		if !errors.Is(err, goprof.ErrNotRegular) {
			t.Errorf("%s as a FIFO: %v, want ErrNotRegular", name, err)
		}
	}
}

// TestWritePrivate: a recording is a 0700 directory of 0600 files, and
// WriteAs gives every part to the owner asked for.
func TestWritePrivate(t *testing.T) {
	rec := &Recording{
		Meta:    Meta{Source: SourceLive, PID: 1, Cmdline: []string{"app", "--password=x"}},
		Threads: &Timeline{Interval: time.Second, Samples: 1},
		Stacks:  []Stack{{Frames: []Frame{{Func: "main"}}}},
		Events:  []Event{{Kind: EventWait, Stack: 0}},
	}
	rec.SetProfile(ViewGoMutex, contention([]string{"sync.(*Mutex).Unlock"}, 5))
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	testbin.CheckPrivateDir(t, dir, os.Geteuid(), os.Getegid(), 5)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("WriteAs to another owner needs root, and CI runs as root")
		}
		t.Skip("WriteAs to another owner needs root")
	}
	dir = filepath.Join(t.TempDir(), "owned")
	if err := WriteAs(dir, rec, &Owner{UID: testbin.NobodyID, GID: testbin.NobodyID}); err != nil {
		t.Fatal(err)
	}
	testbin.CheckPrivateDir(t, dir, testbin.NobodyID, testbin.NobodyID, 5)
}
