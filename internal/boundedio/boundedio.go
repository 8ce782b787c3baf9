// Package boundedio is the one way contend opens and reads a file it did
// not write itself: a profile, a dump, a recording's parts, a perf map. It
// opens regular files only and without blocking (a FIFO or device put in
// a file's place is refused at once, never read), checks the size from
// fstat before reading, reads and inflates within a limit, and charges
// what the inputs of one command cost to one Budget, so that many inputs
// each within their own limit cannot add up past it.
package boundedio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is wrapped by Open's error for a path that is not a
// regular file: a directory, FIFO, socket or device, or (with NoFollow) a
// symbolic link.
var ErrNotRegular = errors.New("not a regular file")

// ErrOwner is wrapped by Open's error for a file owned by a user other
// than the one Options.Owner names (or root).
var ErrOwner = errors.New("owned by another user")

// ErrTooLarge is wrapped by every error about an input over a limit or a
// Budget: its size on disk, what it inflates to, or what it would cost.
var ErrTooLarge = errors.New("over the size budget")

// Errors about the content of a gzip stream. They say what is wrong and
// never quote the stream.
var (
	ErrCorrupt   = errors.New("corrupt gzip")
	ErrTruncated = errors.New("truncated gzip stream")
	ErrNested    = errors.New("gzip stream inside a gzip stream: nested compression is refused")
)

// Options say how Open opens a file.
type Options struct {
	// NoFollow refuses a symbolic link at the path's last component
	// (O_NOFOLLOW), for files inside a directory someone else may write
	// (a recording's parts) or named by a target (/tmp/perf-PID.map).
	NoFollow bool
	// CheckOwner refuses a file owned by a uid other than Owner or root:
	// a file a target names must have been written by the target.
	CheckOwner bool
	Owner      int
}

// Open opens path read-only and without blocking and returns it with its
// fstat, only when the open file is a regular file (and, with
// o.CheckOwner, owned by o.Owner or root). The check is made on the open
// descriptor, so what is checked is what is read: a stat before the open
// could be raced by swapping the path. O_NONBLOCK keeps a FIFO planted in
// the file's place from blocking the open; a regular file reads the same
// with or without it.
func Open(path string, o Options) (*os.File, fs.FileInfo, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if o.NoFollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		if o.NoFollow && errors.Is(err, unix.ELOOP) {
			return nil, nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("a symbolic link, not followed: %w", ErrNotRegular)}
		}
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s: %w", kindOf(st.Mode()), ErrNotRegular)}
	}
	if o.CheckOwner {
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || (int(sys.Uid) != o.Owner && sys.Uid != 0) {
			f.Close()
			uid := -1
			if ok {
				uid = int(sys.Uid)
			}
			return nil, nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("uid %d, not %d or root: %w", uid, o.Owner, ErrOwner)}
		}
	}
	// Reads of a regular file never block; clearing the flag keeps it
	// from surprising a reader that does not expect EAGAIN.
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return f, st, nil
}

// kindOf names the file type of a mode that is not a regular file.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a file"
}

// SizeError is the error about a file larger than a limit on disk,
// refused before it is read.
type SizeError struct {
	Path        string
	Size, Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: %s on disk, more than %s", e.Path, Size(e.Size), Size(e.Limit))
}

func (e *SizeError) Unwrap() error { return ErrTooLarge }

// ReadFile opens path as Open does and reads it whole: refused from its
// size before reading when larger than limit, and refused once more than
// limit bytes were read (a file that grew while read).
func ReadFile(path string, o Options, limit int64) ([]byte, error) {
	f, st, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &SizeError{Path: path, Size: st.Size(), Limit: limit}
	}
	data, err := ReadAtMost(f, limit, st.Size())
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%s: grew past %s while read: %w", path, Size(limit), ErrTooLarge)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// ReadAtMost reads r to its end into one buffer, sized from hint when it
// is known and grown by doubling otherwise, never beyond limit+1 bytes:
// reading more than limit fails with ErrTooLarge. Growing a buffer by
// copying holds the old and the new one at once, so the peak is at most
// one and a half times the limit; io.ReadAll or bytes.Buffer could double
// past it.
func ReadAtMost(r io.Reader, limit, hint int64) ([]byte, error) {
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

// IsGzip reports whether data starts with the gzip magic number.
func IsGzip(data []byte) bool {
	return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
}

// maxDeflateRatio is the most deflate can expand (RFC 1951: a 258-byte
// match in at most two bits, plus block overhead): a gzip trailer stating
// more is a lie not worth allocating for.
const maxDeflateRatio = 1032

// Inflate returns data inflated when it is gzip-compressed, data itself
// otherwise. Inflation stops past limit (ErrTooLarge); data that inflates
// to gzip again (a nested stream, a way around any limit on the outer
// one) is refused with ErrNested, a damaged stream with ErrCorrupt or
// ErrTruncated.
func Inflate(data []byte, limit int64) ([]byte, error) {
	if !IsGzip(data) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	// The trailer's ISIZE gives the size of the last member (mod 2^32):
	// an honest stream is inflated into a buffer of the right size at
	// once. It is only a hint (a truncated stream has none), so the
	// limit is what stops inflation.
	hint := int64(0)
	if n := len(data); n >= 18 {
		hint = int64(uint32(data[n-4]) | uint32(data[n-3])<<8 | uint32(data[n-2])<<16 | uint32(data[n-1])<<24)
	}
	out, err := ReadAtMost(zr, limit, min(hint, int64(len(data))*maxDeflateRatio))
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, ErrTruncated
	case errors.Is(err, ErrTooLarge):
		return nil, fmt.Errorf("decompresses to more than %s: %w", Size(limit), ErrTooLarge)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if IsGzip(out) {
		return nil, ErrNested
	}
	return out, nil
}

// NewReader returns a reader of r's content, inflated when it is gzip,
// that fails with an error wrapping ErrTooLarge once more than limit bytes
// have come out of it, and refuses nested compression (ErrNested). It is
// for inputs read as a stream (a recording's event log). Errors about the
// stream wrap ErrCorrupt or ErrTruncated; an error reading r stays what
// it is.
func NewReader(r io.Reader, limit int64) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(2)
	if !IsGzip(head) {
		return &limitReader{r: br, left: limit, limit: limit}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	inner := bufio.NewReader(&limitReader{r: gzipErrors{zr}, left: limit, limit: limit})
	if head, _ := inner.Peek(2); IsGzip(head) {
		return nil, ErrNested
	}
	return inner, nil
}

// gzipErrors reads a gzip stream and makes its errors about the content
// (a corrupt block, a bad checksum, a truncated stream) wrap ErrCorrupt
// or ErrTruncated; an error reading the underlying file stays what it is.
type gzipErrors struct{ r io.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	var perr *fs.PathError
	switch {
	case err == nil, err == io.EOF, errors.As(err, &perr):
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = ErrTruncated
	default:
		err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return n, err
}

// limitReader fails once more than limit bytes were read through it.
type limitReader struct {
	r           io.Reader
	left, limit int64
}

func (b *limitReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, b.tooLarge()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = ErrTruncated
	}
	return n, err
}

func (b *limitReader) tooLarge() error {
	return fmt.Errorf("decompresses to more than %s: %w", Size(b.limit), ErrTooLarge)
}

// Budget bounds what the inputs of one command may cost together, in
// bytes of memory: each input charges its estimated cost before it is
// built, and an input that would take the total past the limit is
// refused. A nil *Budget charges nothing. It is safe for concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Limit returns the budget's limit in bytes (0 for a nil budget).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Used returns what was charged so far.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Charge adds n bytes for the input named what, or refuses with an error
// wrapping ErrTooLarge that gives the figures (what the input asks, what
// the inputs before it took, the limit) when the total would pass the
// limit; a refused charge is not kept.
func (b *Budget) Charge(what string, n int64) error {
	if b == nil {
		return nil
	}
	if n < 0 {
		n = 0
	}
	for {
		used := b.used.Load()
		if n > b.limit-used {
			return &BudgetError{What: what, Asked: n, Used: used, Limit: b.limit}
		}
		if b.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// Release gives back n bytes charged earlier, for an input dropped
// before it was kept.
func (b *Budget) Release(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// BudgetError is the refusal of an input that would take a Budget past
// its limit.
type BudgetError struct {
	What               string
	Asked, Used, Limit int64
}

func (e *BudgetError) Error() string {
	if e.Used == 0 {
		return fmt.Sprintf("%s would take about %s of memory, more than the %s all inputs may take", e.What, Size(e.Asked), Size(e.Limit))
	}
	return fmt.Sprintf("%s would take about %s of memory, and the inputs before it %s: more than the %s all inputs may take", e.What, Size(e.Asked), Size(e.Used), Size(e.Limit))
}

func (e *BudgetError) Unwrap() error { return ErrTooLarge }

// Size formats a byte count for a message: whole MiB when it is one,
// MiB with one decimal from 1 MiB, bytes below.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
