package goprof

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"sync/atomic"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/internal/boundedio"
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
// over the budget: compressed or decompressed size, the estimated memory
// of its parsed form, or the total over all inputs (SetInputBudget). It is
// boundedio's sentinel, so a refusal from the opener matches it too.
var ErrTooLarge = boundedio.ErrTooLarge

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

// inputs is the budget over all inputs of one command (see
// SetInputBudget); nil charges nothing.
var inputs atomic.Pointer[boundedio.Budget]

// SetInputBudget sets the budget that every input read from a file (Load,
// and a recording's parts through ParseProfileWithin and
// ParseDumpWithin) charges with the memory its parsed form takes, and
// returns the previous one; nil turns the total off. A command that reads
// files sets it once, before reading, so that many inputs each within the
// budget of one cannot add up past it. Profiles fetched live (ParseProfile)
// are not charged: a long-running agent reads one window after another.
func SetInputBudget(b *boundedio.Budget) (previous *boundedio.Budget) {
	return inputs.Swap(b)
}

// InputBudget returns the budget set by SetInputBudget, nil when none.
func InputBudget() *boundedio.Budget { return inputs.Load() }

// charge charges cost to b, refusing with a bad-input error that gives
// the figures when the total would pass b's limit.
func charge(b *boundedio.Budget, cost int64) error {
	if err := b.Charge("parsing it", cost); err != nil {
		return &badInput{msg: err.Error() + fmt.Sprintf(" (%d times --max-profile-size, %s)", modelFactor, sizeText(MaxDecoded())), err: quiet{err}}
	}
	return nil
}

// isGzip reports whether data starts with the gzip magic number.
func isGzip(data []byte) bool { return boundedio.IsGzip(data) }

// ReadFile reads the file at path for parsing through boundedio's opener:
// a regular file only (a FIFO or device in its place is refused at once,
// never read), refused from its size before reading when larger than the
// budget, and read within it.
func ReadFile(path string) ([]byte, error) {
	return ReadFileWith(path, boundedio.Options{})
}

// ReadFileWith is ReadFile with the opener's options: NoFollow for a file
// inside a directory someone else may write (a recording's parts).
func ReadFileWith(path string, o boundedio.Options) ([]byte, error) {
	data, err := boundedio.ReadFile(path, o, MaxDecoded())
	var se *boundedio.SizeError
	switch {
	case errors.As(err, &se):
		return nil, tooLarge("%s: %s on disk", path, sizeText(se.Size))
	case errors.Is(err, ErrTooLarge):
		return nil, tooLarge("%s: grew past the budget while read", path)
	}
	return data, err
}

// ErrNotRegular is wrapped by OpenRegular's error for a path that is not a
// regular file (a directory, FIFO, socket or device); it is boundedio's
// sentinel.
var ErrNotRegular = boundedio.ErrNotRegular

// OpenRegular opens path for reading through boundedio.Open and returns it
// only when the open file is a regular file.
func OpenRegular(path string) (*os.File, error) {
	f, _, err := boundedio.Open(path, boundedio.Options{})
	return f, err
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
	limit := MaxDecoded()
	out, err := boundedio.Inflate(data, limit)
	if errors.Is(err, ErrTooLarge) {
		// A budget's worth of garbage: give it back now rather than
		// let the next input's buffer be allocated beside it (the
		// collector only runs once the heap has doubled).
		debug.FreeOSMemory()
	}
	if err != nil {
		return nil, inflateError(err)
	}
	return out, nil
}

// inflateError turns an error of boundedio's inflation into a bad-input
// error; an error reading a file stays what it is.
func inflateError(err error) error {
	var perr *fs.PathError
	switch {
	case err == nil, err == io.EOF, errors.As(err, &perr):
		return err
	case errors.Is(err, ErrTooLarge):
		return tooLarge("decompresses to more than %s", sizeText(MaxDecoded()))
	case errors.Is(err, boundedio.ErrNested), errors.Is(err, boundedio.ErrTruncated), errors.Is(err, boundedio.ErrCorrupt):
		return &badInput{err: err}
	}
	return err
}

// NewReader returns a reader of r's content, inflated when it is gzip,
// that fails with an error wrapping ErrTooLarge once more than the budget
// has been read, and refuses nested compression. It is for inputs read as
// a stream (the event log of a recording).
func NewReader(r io.Reader) (io.Reader, error) {
	br, err := boundedio.NewReader(r, MaxDecoded())
	if err != nil {
		return nil, inflateError(err)
	}
	return badReader{br}, nil
}

// badReader makes the errors of boundedio's reader bad-input errors.
type badReader struct{ r io.Reader }

func (b badReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	return n, inflateError(err)
}

// ParseProfile parses a protobuf profile (gzipped or not) or one of the
// legacy text forms pprof reads, within the budget: decompressed through
// Decompress, and refused when its parsed form would take more memory
// than the budget allows (see checkProfileCost). It is the one way
// contend reads a profile it did not build itself: files, recordings and
// a live endpoint's answers all come through here. Errors wrap
// ErrBadProfile.
func ParseProfile(data []byte) (*profile.Profile, error) {
	return ParseProfileWithin(data, nil)
}

// ParseProfileWithin is ParseProfile charging the memory of the parsed
// form to b (see SetInputBudget): for profiles read from files.
func ParseProfileWithin(data []byte, b *boundedio.Budget) (*profile.Profile, error) {
	return withSlot(func() (*profile.Profile, error) { return parseCompressed(data, b) })
}

func parseCompressed(data []byte, b *boundedio.Budget) (*profile.Profile, error) {
	data, err := decompress(data)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, badf("empty profile")
	}
	return parseProfile(data, b)
}

// parseProfile runs the pprof parser on decompressed data after checking
// the memory its result would take, turning a panic on hostile input into
// an error: the parser is third-party code and this package promises an
// error, never a crash, on any input. The cost is charged to b.
func parseProfile(data []byte, b *boundedio.Budget) (p *profile.Profile, err error) {
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
	if err := charge(b, cost); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, badf("malformed profile (parser panic: %v)", r)
		}
	}()
	p, err = profile.ParseData(data)
	if err != nil {
		// pprof's messages may quote the input (a legacy text
		// line): only the kind of failure is said.
		return nil, &badInput{msg: "not a Go profile (neither a protobuf profile nor a legacy text one)", err: quiet{err}}
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
// the budget allows; the cost is charged to b.
func checkTextBudget(data []byte, b *boundedio.Budget) error {
	if int64(len(data)) > MaxDecoded() {
		return tooLarge("%s of text", sizeText(int64(len(data))))
	}
	if cost, limit := textCost(data), MaxModel(); cost > limit {
		return tooLarge("parsing would take about %s of memory, more than %s", sizeText(cost), sizeText(limit))
	}
	return charge(b, textCost(data))
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
