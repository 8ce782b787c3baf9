package testbin

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
)

// GzipZeros returns a valid gzip stream of n MiB of zero bytes, a
// decompression bomb of about 1.3 KiB per MiB.
func GzipZeros(n int) []byte { return GzipFill(0, n) }

// GzipFill returns a valid gzip stream of n MiB of the byte fill. It
// deflates one MiB twice and repeats the second block, which only refers
// back to earlier bytes, so building a stream of gigabytes costs
// milliseconds, not a compression of gigabytes.
func GzipFill(fill byte, n int) []byte {
	const mib = 1 << 20
	zero := bytes.Repeat([]byte{fill}, mib)
	var blk bytes.Buffer
	fw, _ := flate.NewWriter(&blk, flate.BestSpeed)
	fw.Write(zero)
	fw.Flush() // byte-aligned end of the first block
	first := append([]byte(nil), blk.Bytes()...)
	blk.Reset()
	fw.Write(zero)
	fw.Flush()
	repeat := append([]byte(nil), blk.Bytes()...)
	blk.Reset()
	fw.Close() // the final, empty block
	final := blk.Bytes()

	var out bytes.Buffer
	// The 10-byte gzip header gzip.Writer writes for an unnamed stream.
	var hdr bytes.Buffer
	gw := gzip.NewWriter(&hdr)
	gw.Flush()
	out.Write(hdr.Bytes()[:10])
	out.Write(first)
	crc := crc32.Update(0, crc32.IEEETable, zero)
	for i := 1; i < n; i++ {
		out.Write(repeat)
		crc = crc32.Update(crc, crc32.IEEETable, zero)
	}
	out.Write(final)
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[0:], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(int64(n)*mib))
	out.Write(trailer[:])
	return out.Bytes()
}

// Gzip compresses data.
func Gzip(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}
