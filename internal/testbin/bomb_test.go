package testbin

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"testing"
)

// TestGzipZeros checks that the bomb generator makes a valid stream of the
// size asked.
func TestGzipZeros(t *testing.T) {
	b := GzipZeros(64)
	if len(b) > 100<<10 {
		t.Errorf("64 MiB of zeros take %d bytes, want a bomb of a few KiB a MiB", len(b))
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil || n != 64<<20 {
		t.Fatal(n, err)
	}
	zl, err := zlib.NewReader(bytes.NewReader(ZlibFill(' ', 3)))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, zl); err != nil || n != 3<<20 {
		t.Fatal("zlib:", n, err)
	}
}
