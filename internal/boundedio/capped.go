package boundedio

import "bytes"

// CappedBuffer keeps at most Limit bytes written to it and notes more;
// Stop, when set, is called at the first byte over the limit (to end a
// writer that would otherwise go on). The buffer is a field, not
// embedded: an embedded bytes.Buffer's ReadFrom would be what io.Copy
// (and so os/exec) calls, past Write and its limit.
type CappedBuffer struct {
	Limit int64
	Stop  func()
	buf   bytes.Buffer
	over  bool
}

// Write keeps what fits under the limit and reports all of p written, so
// that a writer is never failed half-way; Over says whether any was cut.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	if room := b.Limit - int64(b.buf.Len()); int64(len(p)) > room {
		if !b.over && b.Stop != nil {
			b.Stop()
		}
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Over says whether more than Limit bytes were written.
func (b *CappedBuffer) Over() bool { return b.over }

// Bytes returns what was kept.
func (b *CappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// String returns what was kept.
func (b *CappedBuffer) String() string { return b.buf.String() }
