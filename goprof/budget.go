package goprof

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"

	"github.com/google/pprof/profile"
)

// DefaultMaxDecoded is the default budget of one profile, goroutine dump
// or event log: what it may decompress to, and (times modelFactor) the
// memory its parsed form may take. The Go runtime writes mutex, block
// and CPU profiles of large services in a few MiB once decompressed and
// debug=2 dumps of 60k goroutines in about 64 MiB, so 256 MiB reads every
// real input while a decompression bomb (a 2 MB gzip stream inflates to
// gigabytes) stops at a known cost.
const DefaultMaxDecoded = 256 << 20

// modelFactor bounds the estimated memory of a parsed profile or dump at
// modelFactor times the budget: 1 GiB by default. pprof's parser
// allocates 7 to 42 times a profile's uncompressed size (each sample,
// label map and location is a separate allocation; measured on the
// fixtures' recordings), and the estimate (profileCost, an upper bound
// checked by TestModelEstimateBoundsAllocation) says up to 65 times, so
// real profiles up to about 16 MiB uncompressed (a few MiB gzipped, more
// than the runtime writes for large services) are read at the default
// budget. An encoding crafted to expand (millions of empty samples, each
// two bytes on the wire and hundreds once parsed) is refused before it is
// parsed.
const modelFactor = 4

var maxDecoded atomic.Int64

func init() { maxDecoded.Store(DefaultMaxDecoded) }

// SetMaxDecoded sets the budget of every later read (see
// DefaultMaxDecoded) and returns the previous one; n <= 0 restores the
// default. The CLI sets it once from --max-profile-size before reading
// anything.
func SetMaxDecoded(n int64) (previous int64) {
	if n <= 0 {
		n = DefaultMaxDecoded
	}
	return maxDecoded.Swap(n)
}

// MaxDecoded returns the current budget in bytes.
func MaxDecoded() int64 { return maxDecoded.Load() }

// MaxModel returns the memory the parsed form of one input may take:
// modelFactor times the budget.
func MaxModel() int64 { return modelFactor * MaxDecoded() }

// ErrTooLarge is wrapped (with ErrBadProfile) by the error about an input
// over the budget: compressed or decompressed size, or the estimated
// memory of its parsed form.
var ErrTooLarge = errors.New("over the size budget")

// tooLarge returns a bad-input error wrapping ErrTooLarge.
func tooLarge(format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" (--max-profile-size is %s)", sizeText(MaxDecoded())), err: ErrTooLarge}
}

// sizeText formats a byte count for a message: MiB when whole.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// isGzip reports whether data starts with the gzip magic number.
func isGzip(data []byte) bool {
	return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
}

// ReadFile reads the file at path for parsing: it opens it without
// following the caller into a FIFO or device (O_NONBLOCK, then fstat on
// the open file: only a regular file is read) and refuses one larger than
// the budget before reading it.
func ReadFile(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxDecoded() {
		return nil, tooLarge("%s: %s on disk", path, sizeText(st.Size()))
	}
	data, err := readAtMost(f, MaxDecoded(), st.Size())
	if errors.Is(err, ErrTooLarge) {
		return nil, tooLarge("%s: grew past the budget while read", path)
	}
	return data, err
}

// readAtMost reads r to its end into one buffer, sized from hint when it
// is known and grown by doubling otherwise, never beyond limit+1 bytes:
// reading more than limit fails with ErrTooLarge. Growing a buffer by
// copying holds the old and the new one at once, so the peak is at most
// one and a half times the limit; io.ReadAll or bytes.Buffer could double
// past it.
func readAtMost(r io.Reader, limit, hint int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(hint+1, 512), limit+1))
	for {
		if len(buf) == cap(buf) {
			if int64(cap(buf)) > limit {
				return nil, ErrTooLarge
			}
			nb := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > limit {
				return nil, ErrTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ErrNotRegular is wrapped by OpenRegular's error for a path that is not a
// regular file (a directory, FIFO, socket or device).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading and returns it only when the open
// file is a regular file. The file is opened with O_NONBLOCK, so a FIFO
// planted in its place cannot block the open, and checked with fstat on
// the descriptor, so what is checked is what is read (a stat before the
// open could be raced by swapping the path).
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return f, nil
}

// decodeSlot lets one input at a time be inflated and parsed in this
// process: the budget bounds one input, and readers that run at once (a
// live recording fetches four or five profiles together) would otherwise
// add their budgets up. Decoding is CPU-bound, so waiting for the slot
// costs little.
var decodeSlot = make(chan struct{}, 1)

// withSlot runs f holding the decode slot.
func withSlot[T any](f func() (T, error)) (T, error) {
	decodeSlot <- struct{}{}
	defer func() { <-decodeSlot }()
	return f()
}

// Decompress returns data inflated when it is gzip-compressed, data itself
// otherwise. Inflation stops at the budget; data that inflates to gzip
// again (a nested stream, a way around any limit on the outer one) is
// refused, as is anything over the budget.
func Decompress(data []byte) ([]byte, error) {
	return withSlot(func() ([]byte, error) { return decompress(data) })
}

func decompress(data []byte) ([]byte, error) {
	if int64(len(data)) > MaxDecoded() {
		return nil, tooLarge("%s compressed", sizeText(int64(len(data))))
	}
	if !isGzip(data) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, badWrap(err, "corrupt gzip")
	}
	limit := MaxDecoded()
	// The trailer's ISIZE gives the size of the last member (mod 2^32):
	// an honest stream is inflated into a buffer of the right size at
	// once. It is only a hint (a truncated stream has none), so the
	// limit is what stops inflation.
	hint := int64(0)
	if len(data) >= 18 {
		hint = int64(uint32(data[len(data)-4]) | uint32(data[len(data)-3])<<8 | uint32(data[len(data)-2])<<16 | uint32(data[len(data)-1])<<24)
	}
	// Deflate cannot expand more than 1032 times, so a stated size past
	// that is a lie not worth allocating for.
	const maxDeflateRatio = 1032
	out, err := readAtMost(zr, limit, min(hint, int64(len(data))*maxDeflateRatio))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, badf("truncated gzip stream")
		}
		if errors.Is(err, ErrTooLarge) {
			// A budget's worth of garbage: give it back now rather than
			// let the next input's buffer be allocated beside it (the
			// collector only runs once the heap has doubled).
			debug.FreeOSMemory()
			return nil, tooLarge("decompresses to more than %s", sizeText(limit))
		}
		return nil, badWrap(err, "corrupt gzip")
	}
	if isGzip(out) {
		return nil, badf("gzip stream inside a gzip stream: nested compression is refused")
	}
	return out, nil
}

// NewReader returns a reader of r's content, inflated when it is gzip,
// that fails with an error wrapping ErrTooLarge once more than the budget
// has been read, and refuses nested compression. It is for inputs read as
// a stream (the event log of a recording).
func NewReader(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(2)
	if !isGzip(head) {
		return &budgetReader{r: br, left: MaxDecoded()}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, badWrap(err, "corrupt gzip")
	}
	inner := bufio.NewReader(&budgetReader{r: zr, left: MaxDecoded()})
	if head, _ := inner.Peek(2); isGzip(head) {
		return nil, badf("gzip stream inside a gzip stream: nested compression is refused")
	}
	return inner, nil
}

// budgetReader fails once more than left bytes were read through it.
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, tooLarge("decompresses to more than %s", sizeText(MaxDecoded()))
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, tooLarge("decompresses to more than %s", sizeText(MaxDecoded()))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = badf("truncated gzip stream")
	}
	return n, err
}

// ParseProfile parses a protobuf profile (gzipped or not) or one of the
// legacy text forms pprof reads, within the budget: decompressed through
// Decompress, and refused when its parsed form would take more memory
// than the budget allows (see checkProfileCost). It is the one way
// contend reads a profile it did not build itself: files, recordings and
// a live endpoint's answers all come through here. Errors wrap
// ErrBadProfile.
func ParseProfile(data []byte) (*profile.Profile, error) {
	return withSlot(func() (*profile.Profile, error) { return parseCompressed(data) })
}

func parseCompressed(data []byte) (*profile.Profile, error) {
	data, err := decompress(data)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, badf("empty profile")
	}
	return parseProfile(data)
}

// parseProfile runs the pprof parser on decompressed data after checking
// the memory its result would take, turning a panic on hostile input into
// an error: the parser is third-party code and this package promises an
// error, never a crash, on any input.
func parseProfile(data []byte) (p *profile.Profile, err error) {
	if isGzip(data) {
		return nil, badf("gzip stream inside a gzip stream: nested compression is refused")
	}
	// Text (legacy profiles) costs per line; data that is a valid
	// protobuf encoding costs what its messages would take. Data that
	// could be read as either is charged the larger.
	cost := textCost(data)
	if pc, err := profileCost(data); err == nil {
		cost = max(cost, pc)
	}
	if limit := MaxModel(); cost > limit {
		return nil, tooLarge("parsing would take about %s of memory, more than %s", sizeText(cost), sizeText(limit))
	}
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, badf("malformed profile (parser panic: %v)", r)
		}
	}()
	p, err = profile.ParseData(data)
	if err != nil {
		return nil, badWrap(err, "not a Go profile")
	}
	return p, nil
}

// Estimated memory of parsed parts, in bytes, from pprof's structures on
// amd64 (unsafe.Sizeof plus the allocator's size class), and the
// references between them that decoding fills in. They are upper bounds
// checked by TestModelEstimateBoundsAllocation.
const (
	costSample    = 224  // Sample, its slices' headers, and its label maps once made
	costLocID     = 24   // a location id: the decoded index and the *Location
	costValue     = 16   // an int64 value, with slice growth
	costLabel     = 160  // a label: decoded triple, map entry, []string value
	costLabelMap  = 448  // a sample's Label or NumLabel map, made for its first label
	costLocation  = 192  // Location, and its entry in the id lookup
	costLine      = 80   // Line, with slice growth
	costFunction  = 160  // Function, and its entry in the id lookup
	costMapping   = 320  // Mapping, and its entry in the id lookup
	costString    = 32   // a string header and allocation rounding, plus its bytes
	costComment   = 40   // a comment index and its string header
	costValueType = 96   // ValueType
	costProfile   = 4096 // the Profile and the decoder's tables, whatever the content
	// costTextLine is what one line of text can turn into: a legacy
	// profile line becomes a sample with a location, a goroutine dump line
	// a frame or a goroutine group.
	costTextLine = 384
)

// textCost estimates the memory of parsing data as text: a cost per line.
func textCost(data []byte) int64 {
	return int64(len(data)) + int64(bytes.Count(data, []byte{'\n'})+1)*costTextLine
}

// checkTextBudget refuses text to be parsed as a goroutine dump when it is
// larger than the budget or its parsed form would take more memory than
// the budget allows.
func checkTextBudget(data []byte) error {
	if int64(len(data)) > MaxDecoded() {
		return tooLarge("%s of text", sizeText(int64(len(data))))
	}
	if cost, limit := textCost(data), MaxModel(); cost > limit {
		return tooLarge("parsing would take about %s of memory, more than %s", sizeText(cost), sizeText(limit))
	}
	return nil
}

// profileCost estimates the memory pprof's decoder takes for the
// uncompressed protobuf profile data, by walking its top-level fields and
// those of samples and locations without decoding them. A malformed
// encoding is an error (the parser would refuse it too).
func profileCost(data []byte) (int64, error) {
	// The input, the copy of every string, and the profile's own
	// structures and lookup tables.
	cost := int64(len(data))*2 + costProfile
	err := walkFields(data, func(field int, wire int, payload []byte) error {
		switch {
		case field == 1 && wire == 2, field == 11 && wire == 2:
			cost += costValueType
		case field == 2 && wire == 2:
			cost += costSample
			var strMap, numMap bool
			err := walkFields(payload, func(f, w int, p []byte) error {
				switch {
				case f == 1:
					cost += countVarints(w, p) * costLocID
				case f == 2:
					cost += countVarints(w, p) * costValue
				case f == 3 && w == 2:
					cost += costLabel
					// A label with a string value goes to the
					// sample's Label map, one with a number to
					// NumLabel: the first of each makes the map.
					return walkFields(p, func(lf, _ int, _ []byte) error {
						strMap = strMap || lf == 2
						numMap = numMap || lf == 3
						return nil
					})
				}
				return nil
			})
			if strMap {
				cost += costLabelMap
			}
			if numMap {
				cost += costLabelMap
			}
			return err
		case field == 3 && wire == 2:
			cost += costMapping
		case field == 4 && wire == 2:
			cost += costLocation
			return walkFields(payload, func(f, w int, p []byte) error {
				if f == 4 && w == 2 {
					cost += costLine
				}
				return nil
			})
		case field == 5 && wire == 2:
			cost += costFunction
		case field == 6 && wire == 2:
			cost += costString + int64(len(payload))
		case field == 13:
			cost += countVarints(wire, payload) * costComment
		}
		return nil
	})
	return cost, err
}

// countVarints returns how many varints a repeated field's entry holds:
// one when unpacked (wire type 0), else one per byte without the
// continuation bit.
func countVarints(wire int, payload []byte) int64 {
	if wire != 2 {
		return 1
	}
	var n int64
	for _, b := range payload {
		if b < 0x80 {
			n++
		}
	}
	return n
}

// errWire reports a malformed protobuf encoding.
var errWire = errors.New("malformed protobuf encoding")

// walkFields calls fn for each field of the protobuf message data, with
// the field number, the wire type and, for length-delimited fields, the
// payload (nil for others).
func walkFields(data []byte, fn func(field, wire int, payload []byte) error) error {
	for len(data) > 0 {
		key, n := uvarint(data)
		if n <= 0 {
			return errWire
		}
		data = data[n:]
		field, wire := int(key>>3), int(key&7)
		var payload []byte
		switch wire {
		case 0:
			_, n = uvarint(data)
			if n <= 0 {
				return errWire
			}
			data = data[n:]
		case 1:
			if len(data) < 8 {
				return errWire
			}
			data = data[8:]
		case 2:
			l, n := uvarint(data)
			if n <= 0 || l > uint64(len(data)-n) {
				return errWire
			}
			payload = data[n : n+int(l)]
			data = data[n+int(l):]
		case 5:
			if len(data) < 4 {
				return errWire
			}
			data = data[4:]
		default:
			return errWire
		}
		if err := fn(field, wire, payload); err != nil {
			return err
		}
	}
	return nil
}

// uvarint decodes a varint, returning the value and the bytes used (0 or
// less when data ends first or the value overflows).
func uvarint(data []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(data) && i < 10; i++ {
		b := data[i]
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
