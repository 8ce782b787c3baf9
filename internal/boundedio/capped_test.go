package boundedio

import (
	"io"
	"testing"
)

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestCappedBufferUnderIOCopy: io.Copy, as os/exec uses it, goes through
// Write and its limit, and Stop is called once at the first byte over.
func TestCappedBufferUnderIOCopy(t *testing.T) {
	const limit = 1 << 20
	stops := 0
	b := CappedBuffer{Limit: limit, Stop: func() { stops++ }}
	if _, err := io.Copy(&b, io.LimitReader(zeroReader{}, 4*limit)); err != nil {
		t.Fatal(err)
	}
	if len(b.Bytes()) != limit || !b.Over() || stops != 1 {
		t.Errorf("io.Copy into the buffer kept %d bytes (over %v, %d stops), want %d, over and one stop", len(b.Bytes()), b.Over(), stops, limit)
	}
	small := CappedBuffer{Limit: limit}
	small.Write([]byte("ok"))
	if small.String() != "ok" || small.Over() {
		t.Errorf("a write under the limit: %q, over %v", small.String(), small.Over())
	}
}
