package testbin

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"runtime"
	"testing"
	"time"
)

// GzipZeros returns a valid gzip stream of n MiB of zero bytes, a
// decompression bomb of about 1.3 KiB per MiB.
func GzipZeros(n int) []byte { return GzipFill(0, n) }

// GzipFill returns a valid gzip stream of n MiB of the byte fill (see
// DeflateFill).
func GzipFill(fill byte, n int) []byte {
	var out bytes.Buffer
	// The 10-byte gzip header gzip.Writer writes for an unnamed stream.
	var hdr bytes.Buffer
	gw := gzip.NewWriter(&hdr)
	gw.Flush()
	out.Write(hdr.Bytes()[:10])
	out.Write(DeflateFill(fill, n))
	mib := bytes.Repeat([]byte{fill}, 1<<20)
	crc := uint32(0)
	for i := 0; i < n; i++ {
		crc = crc32.Update(crc, crc32.IEEETable, mib)
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[0:], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(int64(n)<<20))
	out.Write(trailer[:])
	return out.Bytes()
}

// ZlibFill returns a valid zlib stream (as compressed ELF sections hold)
// of n MiB of the byte fill (see DeflateFill).
func ZlibFill(fill byte, n int) []byte {
	out := []byte{0x78, 0x01}
	out = append(out, DeflateFill(fill, n)...)
	h := adler32.New()
	mib := bytes.Repeat([]byte{fill}, 1<<20)
	for i := 0; i < n; i++ {
		h.Write(mib)
	}
	return h.Sum(out) // big-endian, as zlib stores it
}

// DeflateFill returns a raw deflate stream of n MiB (n >= 1) of the byte
// fill: a decompression bomb of about 1.3 KiB per MiB. It deflates one
// MiB twice and repeats the second block, which only refers back to
// earlier bytes, so building a stream of gigabytes costs milliseconds,
// not a compression of gigabytes.
func DeflateFill(fill byte, n int) []byte {
	mib := bytes.Repeat([]byte{fill}, 1<<20)
	var blk bytes.Buffer
	fw, _ := flate.NewWriter(&blk, flate.BestSpeed)
	fw.Write(mib)
	fw.Flush() // byte-aligned end of the first block
	first := append([]byte(nil), blk.Bytes()...)
	blk.Reset()
	fw.Write(mib)
	fw.Flush()
	repeat := append([]byte(nil), blk.Bytes()...)
	blk.Reset()
	fw.Close() // the final, empty block
	out := append([]byte(nil), first...)
	for i := 1; i < n; i++ {
		out = append(out, repeat...)
	}
	return append(out, blk.Bytes()...)
}

// Gzip compresses data.
func Gzip(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// Allocated returns how many bytes f allocates (the Go heap's running
// total, after a collection): how a test checks that refusing an input
// over a budget cost about the budget, not the input's claim.
func Allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// NoBlock runs f and returns its error, failing the test at once when f
// has not returned within five seconds: for opens that must not block on
// a FIFO planted in a file's place. A blocked f is left behind.
func NoBlock(t testing.TB, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked", what)
		return nil
	}
}
