package goprof_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/boundedio"
	"github.com/contend-dev/contend/internal/testbin"
)

func checkTooLarge(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, goprof.ErrTooLarge) || !errors.Is(err, goprof.ErrBadProfile) {
		t.Fatalf("%s: error %v, want one wrapping ErrTooLarge and ErrBadProfile", what, err)
	}
	if !strings.Contains(err.Error(), "--max-profile-size") {
		t.Errorf("%s: error %q does not say which setting to raise", what, err)
	}
}

// TestGzipBombStopsAtBudget inflates a 64 MiB bomb with an 8 MiB budget:
// it is refused, and what it cost is the budget, not the bomb.
func TestGzipBombStopsAtBudget(t *testing.T) {
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(8 << 20))
	bomb := testbin.GzipZeros(64)
	var err error
	alloc := testbin.Allocated(func() { _, err = goprof.Parse("bomb.pb.gz", bomb) })
	checkTooLarge(t, "Parse", err)
	if alloc > 24<<20 {
		t.Errorf("refusing the bomb allocated %d MiB, want at most 3 times the 8 MiB budget", alloc>>20)
	}
	alloc = testbin.Allocated(func() { _, err = goprof.ParseProfile(bomb) })
	checkTooLarge(t, "ParseProfile", err)
	if alloc > 24<<20 {
		t.Errorf("ParseProfile allocated %d MiB for the bomb", alloc>>20)
	}
	r, err := goprof.NewReader(bytes.NewReader(bomb))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	checkTooLarge(t, "NewReader", err)
	if n > 8<<20+1 {
		t.Errorf("NewReader gave %d bytes, more than the budget", n)
	}
}

// TestNestedGzipRefused: a gzip stream inside a gzip stream is refused
// whatever it holds, so no second inflation escapes the budget. Even a
// valid profile compressed twice is refused.
func TestNestedGzipRefused(t *testing.T) {
	twice := testbin.Gzip(readTestdata(t, "go126-mutex.pb.gz")) // already gzip inside
	bombInside := testbin.Gzip(testbin.GzipZeros(2048))         // 2 GiB of zeros, 2.6 MB, compressed again
	for name, data := range map[string][]byte{"valid profile": twice, "bomb": bombInside} {
		var err error
		alloc := testbin.Allocated(func() { _, err = goprof.Parse(name, data) })
		if !errors.Is(err, goprof.ErrBadProfile) || !strings.Contains(err.Error(), "nested") {
			t.Errorf("%s gzipped twice: error %v, want nested compression refused", name, err)
		}
		if alloc > 64<<20 {
			t.Errorf("%s gzipped twice: refusing it allocated %d MiB", name, alloc>>20)
		}
		if _, err := goprof.ParseProfile(data); err == nil || !strings.Contains(err.Error(), "nested") {
			t.Errorf("ParseProfile(%s gzipped twice): %v", name, err)
		}
		if _, err := goprof.NewReader(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "nested") {
			t.Errorf("NewReader(%s gzipped twice): %v", name, err)
		}
	}
}

// TestExpandingProfileRefused: a valid protobuf profile of empty samples,
// two bytes each on the wire and hundreds once parsed, is refused from
// its estimate before the parser runs.
func TestExpandingProfileRefused(t *testing.T) {
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(1 << 20))
	var b bytes.Buffer
	b.WriteString("\x0a\x04\x08\x01\x10\x02") // sample_type {type: 1, unit: 2}
	for b.Len() < 1<<20-16 {
		b.WriteString("\x12\x00") // an empty sample
	}
	b.WriteString("\x32\x00\x32\x01a\x32\x01b") // string table "", "a", "b"
	data := b.Bytes()
	var err error
	alloc := testbin.Allocated(func() { _, err = goprof.ParseProfile(data) })
	checkTooLarge(t, "ParseProfile", err)
	if alloc > 4<<20 {
		t.Errorf("refusing it allocated %d MiB: the parser ran", alloc>>20)
	}
	gz := testbin.Gzip(data)
	if _, err := goprof.Parse("samples.pb.gz", gz); !errors.Is(err, goprof.ErrTooLarge) {
		t.Errorf("Parse: %v, want ErrTooLarge", err)
	}
}

// TestTextBudget: a goroutine dump or legacy text profile larger than the
// budget, or with more lines than the budget allows, is refused.
func TestTextBudget(t *testing.T) {
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(1 << 20))
	dump := readTestdata(t, "go126-debug2.txt")
	if _, err := goprof.ParseDump(dump); err != nil {
		t.Fatalf("a real dump under the budget: %v", err)
	}
	lines := bytes.Repeat([]byte("goroutine 1 [running]:\n"), (1<<20)/23)
	_, err := goprof.ParseDump(lines)
	checkTooLarge(t, "ParseDump of many lines", err)
	_, err = goprof.Parse("big.txt", append([]byte("goroutine 1 [running]:\n"), bytes.Repeat([]byte("x"), 2<<20)...))
	checkTooLarge(t, "Parse of a large dump", err)
}

// TestLoadOpensRegularFilesOnly: a FIFO given as a profile is refused at
// once instead of blocking the open, and a file larger than the budget is
// refused before it is read.
func TestLoadOpensRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "mutex.pb.gz")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	err := testbin.NoBlock(t, "Load(FIFO)", func() error {
		_, err := goprof.Load(fifo)
		return err
	})
	if !errors.Is(err, goprof.ErrNotRegular) {
		t.Errorf("Load(FIFO): %v, want ErrNotRegular", err)
	}
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(1 << 20))
	big := filepath.Join(dir, "big.pb.gz")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = goprof.Load(big)
	checkTooLarge(t, "Load of a large file", err)
}

// TestInputBudgetOverFiles (issue 33, row 8): eight goroutine dumps, each
// within the budget of one input, added up to gigabytes. With an input
// budget set, each Load charges its parsed cost, and the one that would
// take the total past the budget is refused with the figures.
func TestInputBudgetOverFiles(t *testing.T) {
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(8 << 20))
	defer goprof.SetInputBudget(goprof.SetInputBudget(boundedio.NewBudget(goprof.MaxModel())))
	var dump bytes.Buffer
	for dump.Len() < 1<<20 {
		dump.WriteString("goroutine 1 [sync.Mutex.Lock]:\nmain.worker(0xc000010000)\n\t/src/app/main.go:12 +0x1d\n\n")
	}
	path := filepath.Join(t.TempDir(), "g.txt.gz")
	if err := os.WriteFile(path, testbin.Gzip(dump.Bytes()), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	loaded := 0
	for ; loaded < 8; loaded++ {
		if _, err = goprof.Load(path); err != nil {
			break
		}
	}
	if loaded == 0 || loaded == 8 || !errors.Is(err, goprof.ErrTooLarge) || !errors.Is(err, goprof.ErrBadProfile) || !strings.Contains(err.Error(), "the inputs before it") {
		t.Fatalf("%d dumps loaded, then %v: want some loaded and the next refused with the figures", loaded, err)
	}
	// Without a budget (a live fetch) nothing is charged.
	goprof.SetInputBudget(nil)
	if _, err := goprof.Load(path); err != nil {
		t.Errorf("no input budget: %v", err)
	}
}

// TestErrorsNeverQuoteInput (issue 33, row 9): a goroutine dump whose
// first line was /etc/shadow's printed it in the error. No error of the
// parsers repeats the input; they give line numbers and sizes.
func TestErrorsNeverQuoteInput(t *testing.T) {
	const secret = "root:$6$salt$SECRETHASH:19000:0:99999:7:::"
	for name, text := range map[string]string{
		"first line":        secret + "\n",
		"after a header":    "goroutine 1 [running]:\n" + secret + "\n",
		"debug=1 frame":     "goroutine profile: total 1\n1 @ 0x1\n#\t" + secret + "\n",
		"debug=1 header":    "goroutine profile: total 1\n" + secret + "\n",
		"labels":            "goroutine profile: total 1\n1 @ 0x1\n# labels: {" + secret + "}\n",
		"file line":         "goroutine 1 [running]:\nmain.f()\n" + secret + "\n",
		"legacy text start": "--- mutex:\n" + secret + "\n",
	} {
		for _, err := range []error{parseErr(goprof.Parse("in.txt", []byte(text))), dumpErr(goprof.ParseDump([]byte(text)))} {
			if err == nil {
				t.Errorf("%s: parsed", name)
				continue
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "root:") {
				t.Errorf("%s: error quotes the input: %v", name, err)
			}
		}
	}
}

func parseErr(_ *goprof.File, err error) error { return err }
func dumpErr(_ *goprof.Dump, err error) error  { return err }
