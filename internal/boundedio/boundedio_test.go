package boundedio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestOpenRefusesNonRegular: a FIFO (with no writer, which would block
// a plain open forever), a device, a socket and a directory are refused
// at once with an error naming the path; a regular file opens.
func TestOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct{ path, kind string }{
		{fifo, "a FIFO"},
		{"/dev/zero", "a character device"},
		{dir, "a directory"},
	} {
		_, _, err := Open(c.path, Options{})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.kind) {
			t.Errorf("Open(%s): %v, want ErrNotRegular naming the path and %q", c.path, err, c.kind)
		}
	}
	// A socket cannot be opened at all (ENXIO): refused either way.
	if _, _, err := Open(sock, Options{}); err == nil {
		t.Error("a socket opened")
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, st, err := Open(file, Options{NoFollow: true})
	if err != nil || st.Size() != 4 {
		t.Fatalf("regular file: %v %v", st, err)
	}
	f.Close()
}

// TestOpenNoFollow: with NoFollow a symbolic link is refused, whatever it
// points to; without, it is followed.
func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte("root:x:0:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(link, Options{NoFollow: true}, 1<<20); !errors.Is(err, ErrNotRegular) || strings.Contains(err.Error(), "root:") {
		t.Errorf("link with NoFollow: %v, want ErrNotRegular without the content", err)
	}
	if data, err := ReadFile(link, Options{}, 1<<20); err != nil || string(data) != "root:x:0:0\n" {
		t.Errorf("link followed: %q %v", data, err)
	}
}

// TestOpenOwner: with CheckOwner, a file of another uid is refused, one
// of the given uid or of root is read.
func TestOpenOwner(t *testing.T) {
	file := filepath.Join(t.TempDir(), "perf-1.map")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	if _, err := ReadFile(file, Options{CheckOwner: true, Owner: me}, 10); err != nil {
		t.Errorf("own file: %v", err)
	}
	if me != 0 {
		if _, err := ReadFile(file, Options{CheckOwner: true, Owner: me + 1}, 10); !errors.Is(err, ErrOwner) {
			t.Errorf("file of uid %d for owner %d: %v, want ErrOwner", me, me+1, err)
		}
		return
	}
	// Root's file is accepted for any owner; another user's is not.
	if _, err := ReadFile(file, Options{CheckOwner: true, Owner: 1000}, 10); err != nil {
		t.Errorf("root's file for owner 1000: %v", err)
	}
	if err := os.Chown(file, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(file, Options{CheckOwner: true, Owner: 1000}, 10); !errors.Is(err, ErrOwner) || !strings.Contains(err.Error(), "uid 12345") {
		t.Errorf("file of uid 12345 for owner 1000: %v, want ErrOwner", err)
	}
}

// TestReadFileSizeBeforeRead: a 3 GiB sparse file is refused from its
// size, before a byte is read (the test would take seconds and gigabytes
// otherwise), with the size and the limit in the error.
func TestReadFileSizeBeforeRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadFile(path, Options{}, 1<<20)
	var se *SizeError
	if !errors.As(err, &se) || !errors.Is(err, ErrTooLarge) || se.Size != 3<<30 || !strings.Contains(err.Error(), "3072 MiB on disk, more than 1 MiB") {
		t.Fatalf("3 GiB file: %v, want a SizeError", err)
	}
	// A file that grows past the limit after its size was checked is
	// stopped at the limit: here, one whose size is unknown to fstat.
	if _, err := ReadAtMost(bytes.NewReader(make([]byte, 2<<20)), 1<<20, 0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("reading past the limit: %v", err)
	}
}

// TestInflateAndReaderLimits: a gzip stream that inflates past the limit
// is refused, as is one nested in another; NewReader stops at the limit.
func TestInflateAndReaderLimits(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(make([]byte, 4<<20))
	zw.Close()
	bomb := b.Bytes()
	if _, err := Inflate(bomb, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Inflate past the limit: %v", err)
	}
	if out, err := Inflate(bomb, 8<<20); err != nil || len(out) != 4<<20 {
		t.Errorf("Inflate within the limit: %d bytes, %v", len(out), err)
	}
	var nb bytes.Buffer
	zw = gzip.NewWriter(&nb)
	zw.Write(bomb)
	zw.Close()
	if _, err := Inflate(nb.Bytes(), 8<<20); !errors.Is(err, ErrNested) {
		t.Errorf("nested: %v", err)
	}
	if _, err := Inflate(bomb[:len(bomb)/2], 8<<20); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
	r, err := NewReader(bytes.NewReader(bomb), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	n, err := ReadAtMost(r, 8<<20, 0)
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("NewReader past the limit: %d bytes, %v", len(n), err)
	}
}

// TestBudget: charges add up over inputs; the one that would pass the
// limit is refused with the figures and not kept; concurrent charges
// never pass the limit together.
func TestBudget(t *testing.T) {
	b := NewBudget(10 << 20)
	if err := b.Charge("first", 6<<20); err != nil {
		t.Fatal(err)
	}
	err := b.Charge("second", 6<<20)
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrTooLarge) || be.Asked != 6<<20 || be.Used != 6<<20 || be.Limit != 10<<20 {
		t.Fatalf("second charge: %v, want a BudgetError with the figures", err)
	}
	if !strings.Contains(err.Error(), "6 MiB") || !strings.Contains(err.Error(), "10 MiB") {
		t.Errorf("message without the figures: %v", err)
	}
	if b.Used() != 6<<20 {
		t.Errorf("a refused charge was kept: used %d", b.Used())
	}
	if err := b.Charge("third", 4<<20); err != nil {
		t.Errorf("a charge that fits: %v", err)
	}
	var nilBudget *Budget
	if err := nilBudget.Charge("any", 1<<40); err != nil {
		t.Errorf("nil budget: %v", err)
	}

	c := NewBudget(100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Charge("x", 7) == nil {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 14 || c.Used() != 98 {
		t.Errorf("concurrent charges: %d granted, %d used; want 14 and 98", granted, c.Used())
	}
}
