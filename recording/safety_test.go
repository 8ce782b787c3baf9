package recording

import (
	"encoding/json"
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

// fullRecording writes a recording with every kind of part and returns
// its directory.
func fullRecording(t *testing.T) string {
	t.Helper()
	rec := &Recording{
		Meta:    Meta{Source: SourceLive, PID: 1, Probes: []string{"futex", "sched"}},
		Locks:   []LockStat{{Addr: 1, Waits: 3}},
		Threads: &Timeline{Interval: time.Second, Samples: 1},
		Stacks:  []Stack{{Frames: []Frame{{Func: "main"}}}},
		Events:  []Event{{Kind: EventWait, Stack: 0}},
	}
	for _, v := range []View{ViewFutexWait, ViewFutexWake, ViewOffCPU, ViewWakes} {
		rec.SetProfile(v, contention([]string{"f"}, 5))
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	return dir
}

// keepOnlyMeta removes every file of a recording but meta.json.
func keepOnlyMeta(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != MetaFile {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// TestReadRefusesDamaged: a recording missing a file it was written
// with, holding a truncated one, or holding only meta.json, is refused
// with an error naming the file, never read as a recording that found
// nothing.
func TestReadRefusesDamaged(t *testing.T) {
	if _, err := Read(fullRecording(t)); err != nil {
		t.Fatalf("an intact recording: %v", err)
	}
	dropManifest := func(t *testing.T, dir string) {
		var m map[string]any
		data, err := os.ReadFile(filepath.Join(dir, MetaFile))
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		delete(m, "files")
		data, _ = json.Marshal(m)
		writeTestFile(t, dir, MetaFile, string(data))
	}
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"futex-wait.pb.gz removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "futex-wait.pb.gz"))
		}, "futex-wait.pb.gz is missing"},
		{"offcpu.pb.gz truncated", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, "offcpu.pb.gz"), 20)
		}, "offcpu.pb.gz is truncated: 20 of the"},
		{"events.jsonl.gz grown", func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte("x"))
			f.Close()
		}, "events.jsonl.gz has"},
		{"only meta.json left", func(t *testing.T, dir string) {
			keepOnlyMeta(dir)
		}, "is missing"},
		{"no manifest, futex-wait.pb.gz removed", func(t *testing.T, dir string) {
			dropManifest(t, dir)
			os.Remove(filepath.Join(dir, "futex-wait.pb.gz"))
		}, "futex-wait.pb.gz is missing: meta.json says the futex probe was attached"},
		{"no manifest, only meta.json without probes", func(t *testing.T, dir string) {
			dropManifest(t, dir)
			writeTestFile(t, dir, MetaFile, `{"version":1,"source":"live","pid":1}`)
			keepOnlyMeta(dir)
		}, "holds meta.json and nothing else"},
		{"manifest naming a path outside", func(t *testing.T, dir string) {
			writeTestFile(t, dir, MetaFile, `{"version":1,"source":"live","files":{"../x":3}}`)
		}, `bad name "../x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fullRecording(t)
			c.damage(t, dir)
			_, err := Read(dir)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read: %v, want an invalid-recording error containing %q", err, c.want)
			}
			if _, err := Open(dir); !errors.Is(err, ErrInvalid) {
				t.Errorf("Open: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestReadCorruptEventLog: a corrupt deflate stream in the event log is
// bad input, like a corrupt profile.
func TestReadCorruptEventLog(t *testing.T) {
	dir := minimalDir(t)
	gz := testbin.Gzip([]byte(strings.Repeat(`{"k":"wait","t":1,"tid":1,"stack":-1}`+"\n", 100)))
	for i := 20; i < len(gz)-8; i++ {
		gz[i] ^= 0x55
	}
	if err := os.WriteFile(filepath.Join(dir, EventsFile), gz, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, goprof.ErrBadProfile) || !strings.Contains(err.Error(), EventsFile) {
		t.Errorf("corrupt event log: %v, want a bad-input error naming %s", err, EventsFile)
	}
}

// TestCheckCreate: the check before a recording leaves nothing behind
// where it succeeds and names the given path where it fails.
func TestCheckCreate(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b", "rec")
	if err := CheckCreate(dir); err != nil {
		t.Fatalf("a new path under a writable directory: %v", err)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("the check left %v behind", entries)
	}
	if err := CheckCreate(base); !errors.Is(err, ErrExists) {
		t.Errorf("an existing directory: %v, want ErrExists", err)
	}
	if err := CheckCreate("/proc/1/nope/rec"); err == nil || !strings.Contains(err.Error(), "cannot create /proc/1/nope/rec") {
		t.Errorf("a path under /proc: %v", err)
	}
}
