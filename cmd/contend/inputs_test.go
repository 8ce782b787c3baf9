package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// These tests rebuild rows 6, 8, 9 and 13 of issue 33 ("safe as root,
// second round"): every input file goes through one bounded opener.

// inputDeadline bounds a run that must refuse its input at once: a run
// that blocks on a FIFO or reads /dev/zero never ends by itself.
const inputDeadline = 30 * time.Second

// runBounded runs contend with args and returns its exit code and
// stderr, failing the test when it has not ended within inputDeadline.
func runBounded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	probe, _, errb := contendCmd(t)
	ctx, cancel := context.WithTimeout(context.Background(), inputDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, probe.Path, args...)
	cmd.Stderr = errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("contend %s still running after %s (killed)", strings.Join(args, " "), inputDeadline)
	}
	return exitCodeOf(t, err), errb.String()
}

// TestAnalyzeRefusesNonRegular (row 6): `analyze /dev/zero` grew until it
// ran out of memory, `analyze FIFO` hung, and a 3 GiB sparse file was
// read whole before its size was refused, --max-profile-size 1MiB or
// not. Each is now refused at once with exit 2, naming the path, the
// sparse file from its size before a byte is read.
func TestAnalyzeRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.pb.gz")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	contendCmd(t) // build the binary before timing its runs
	for _, c := range []struct{ name, path, want string }{
		{"/dev/zero", "/dev/zero", "a character device: not a regular file"},
		{"FIFO", fifo, "a FIFO: not a regular file"},
		{"3 GiB sparse file", sparse, "3072 MiB on disk (--max-profile-size is 1 MiB)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, stderr := runBounded(t, "analyze", "--max-profile-size", "1MiB", c.path)
			if code != exitUsage || !strings.Contains(stderr, c.path) || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q: want exit %d naming %s and %q", code, stderr, exitUsage, c.path, c.want)
			}
			// Reading 3 GiB of zeros takes seconds; a refusal from
			// fstat takes the time to start the program.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("refusing took %s", d)
			}
		})
	}
	m := runMeasured(t, nil, "analyze", "--max-profile-size", "1MiB", "/dev/zero")
	if m.code != exitUsage || m.maxRSSBytes > 128<<20 {
		t.Errorf("/dev/zero: exit %d, peak memory %d MiB: want exit %d within 128 MiB", m.code, m.maxRSSBytes>>20, exitUsage)
	}
	t.Logf("/dev/zero refused at a peak of %d MiB", m.maxRSSBytes>>20)
}

// TestAnalyzeBoundsEventLogAndTotal (row 8): an event log of N empty
// events, 29 KB compressed, took 4.3 GB to analyse (117 KB ran out of
// memory); eight goroutine dumps each within the budget added up past
// it. The log is refused from its count of lines before an event is
// built, and the dumps once their total passes the budget of all inputs,
// each refusal giving the figure.
func TestAnalyzeBoundsEventLogAndTotal(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec")
	if err := recording.Write(rec, &recording.Recording{Meta: recording.Meta{Source: recording.SourceLive, PID: 1}}); err != nil {
		t.Fatal(err)
	}
	// 1.5 million events of 13 bytes, 38 KB gzipped.
	events := testbin.Gzip(bytes.Repeat([]byte(`{"stack":-1}`+"\n"), 3<<19))
	if err := os.WriteFile(filepath.Join(rec, recording.EventsFile), events, 0o600); err != nil {
		t.Fatal(err)
	}
	m := runMeasured(t, nil, "analyze", rec)
	checkNoCrash(t, "event log", m)
	if m.code != exitUsage || !strings.Contains(m.stderr, "1572864 lines, more than the 1048576 events") {
		t.Errorf("event log: exit %d, stderr %q: want exit %d and the count", m.code, m.stderr, exitUsage)
	}
	if m.maxRSSBytes > 128<<20 {
		t.Errorf("event log: refusing it peaked at %d MiB", m.maxRSSBytes>>20)
	}
	t.Logf("event log of %d KB refused at a peak of %d MiB", len(events)>>10, m.maxRSSBytes>>20)

	// Eight dumps of 1 MiB of text, each about 16 MiB once parsed, at
	// an 8 MiB budget: 32 MiB per input, and over all inputs.
	var dump bytes.Buffer
	for dump.Len() < 1<<20-200 {
		dump.WriteString("goroutine 1 [sync.Mutex.Lock]:\nmain.worker(0xc000010000)\n\t/src/app/main.go:12 +0x1d\n\n")
	}
	dir := t.TempDir()
	args := []string{"analyze", "--max-profile-size", "8MiB"}
	for i := range 8 {
		p := filepath.Join(dir, "g"+string(rune('0'+i))+".txt.gz")
		if err := os.WriteFile(p, testbin.Gzip(dump.Bytes()), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	code, stderr := runBounded(t, args...)
	if code != exitUsage || !strings.Contains(stderr, "all inputs may take") || !strings.Contains(stderr, "the inputs before it") {
		t.Errorf("eight dumps: exit %d, stderr %q: want exit %d refusing the one past the total", code, stderr, exitUsage)
	}
	// One of them alone is read.
	if code, stderr := runBounded(t, args[:4]...); code != exitOK {
		t.Errorf("one dump: exit %d, %s", code, stderr)
	}
}

// secretLine stands for the first line of /etc/shadow.
const secretLine = "root:$6$saltsalt$SECRETHASH:19000:0:99999:7:::"

// TestAnalyzeRecordingSymlinkNotFollowed (row 9): as plain root, analyze
// of a recording whose goroutines-0.txt was a symbolic link to
// /etc/shadow printed shadow's first line in its error. Links inside a
// recording are not followed, and a part that is not what it claims
// (the same text as a regular file) is refused by line number, without
// its content.
func TestAnalyzeRecordingSymlinkNotFollowed(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte(secretLine+"\ndaemon:*:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"goroutines-0.txt", "java-threads-0.txt", recording.ThreadsFile, recording.EventsFile, "go-mutex.pb.gz"} {
		t.Run(name, func(t *testing.T) {
			rec := liveRecording(t)
			os.Remove(filepath.Join(rec, name))
			if err := os.Symlink(secret, filepath.Join(rec, name)); err != nil {
				t.Fatal(err)
			}
			code, stderr := runBounded(t, "analyze", rec)
			if code != exitUsage || !strings.Contains(stderr, "not a regular file") || strings.Contains(stderr, "SECRET") || strings.Contains(stderr, "root:") {
				t.Errorf("link: exit %d, stderr %q: want exit %d refusing the link, no content", code, stderr, exitUsage)
			}
			// The same bytes as a regular file: bad input, named by
			// line or byte, never quoted.
			os.Remove(filepath.Join(rec, name))
			data, _ := os.ReadFile(secret)
			if err := os.WriteFile(filepath.Join(rec, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
			code, stderr = runBounded(t, "analyze", rec)
			if code != exitUsage || strings.Contains(stderr, "SECRET") || strings.Contains(stderr, "root") || strings.Contains(stderr, "daemon") {
				t.Errorf("copy: exit %d, stderr %q: want exit %d without the content", code, stderr, exitUsage)
			}
		})
	}
	// A profile file given on the command line: the error does not
	// quote it either.
	code, stderr := runBounded(t, "analyze", secret)
	if code != exitUsage || strings.Contains(stderr, "SECRET") || strings.Contains(stderr, "root:") {
		t.Errorf("file argument: exit %d, stderr %q", code, stderr)
	}
}

// TestAnalyzeUnreadableExits2 (row 13): an input the user may not read
// exited 6 (an internal failure); it is bad input, exit 2.
func TestAnalyzeUnreadableExits2(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mutex.pb.gz")
	data, err := os.ReadFile(filepath.Join("..", "..", "goprof", "testdata", "go126-mutex.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o000); err != nil {
		t.Fatal(err)
	}
	args := []string{"analyze", path}
	if os.Geteuid() == 0 {
		// Root reads any file: run as nobody, who may not enter the
		// test's 0700 directory.
		args = []string{"--user", "nobody", "analyze", path}
	}
	code, stderr := runBounded(t, args...)
	if code != exitUsage || !strings.Contains(stderr, "permission denied") {
		t.Errorf("exit %d, stderr %q: want exit %d, permission denied", code, stderr, exitUsage)
	}
}
