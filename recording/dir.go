package recording

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/boundedio"
)

// File names inside a recording directory.
const (
	MetaFile    = "meta.json"
	LocksFile   = "locks.json"
	ThreadsFile = "threads.json"
	StacksFile  = "stacks.json"
	EventsFile  = "events.jsonl.gz"
	JITCodeFile = "jit-code.json"
	// goroutine dumps are stored as goroutines-N.txt, N from 0.
	goroutinePrefix = "goroutines-"
	// Java thread dumps are stored as java-threads-N.txt, N from 0.
	javaDumpPrefix = "java-threads-"
	profileSuffix  = ".pb.gz"
)

// ErrNotRecording is returned by Read for a directory without meta.json.
var ErrNotRecording = errors.New("not a contend recording (no meta.json)")

// ErrInvalid is wrapped by Read's errors about content that breaks the
// format's rules (a timeline series outside its samples, a histogram
// longer than 64 buckets, an event naming a stack that is not there):
// bad input, like a corrupt profile.
var ErrInvalid = errors.New("invalid recording")

// ErrExists is returned by Write when the destination already exists.
var ErrExists = errors.New("output directory already exists")

// Owner is the user and group a recording's directory and files are
// given (see WriteAs).
type Owner struct{ UID, GID int }

// Write stores r as a recording directory at dir. The directory is built
// under a temporary name beside dir and renamed into place, so a reader
// never sees a half-written recording. dir must not exist. The directory
// is private (0700) and its files 0600: they hold command lines, stacks
// and goroutine dumps.
func Write(dir string, r *Recording) error { return WriteAs(dir, r, nil) }

// WriteAs is Write, with the directory and every file given to owner
// (when not nil) before the directory is renamed into place: a recording
// made as root under sudo belongs to the user who asked for it. Files are
// created through the descriptor of the temporary directory, never by a
// path another user could redirect.
func WriteAs(dir string, r *Recording, owner *Owner) (err error) {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("write recording %s: %w", dir, ErrExists)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write recording %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-") // mode 0700
	if err != nil {
		return fmt.Errorf("write recording %s: making a directory in %s: %w", dir, parent, pathErrno(err))
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	d, err := openDir(tmp)
	if err != nil {
		return fmt.Errorf("write recording %s: %w", dir, pathErrno(err))
	}
	defer d.Close()
	w := &dirWriter{dir: d, owner: owner}
	if err := writeParts(w, r); err != nil {
		return fmt.Errorf("write recording %s: %w", dir, err)
	}
	if owner != nil {
		if err := d.Chown(owner.UID, owner.GID); err != nil {
			return fmt.Errorf("write recording %s: give it to uid %d: %w", dir, owner.UID, pathErrno(err))
		}
	}
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("write recording %s: %w", dir, pathErrno(err))
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("write recording %s: %w", dir, pathErrno(err))
	}
	return syncDir(parent)
}

// CheckCreate reports whether Write could create a recording at dir,
// before anything is recorded: dir must not exist, and a directory must
// be creatable in the nearest existing directory on its path (Write
// creates the missing parents, then builds the recording beside dir). It
// creates and removes a directory there, so what is checked is what
// Write will do. Errors name dir and the directory that refused, never
// the probe's temporary name; a dir that exists wraps ErrExists.
func CheckCreate(dir string) error {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s: %w", dir, ErrExists)
	}
	at := filepath.Dir(dir)
	for {
		st, err := os.Stat(at)
		if err == nil && !st.IsDir() {
			return fmt.Errorf("cannot create %s: %s is not a directory", dir, at)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot create %s: %w", dir, pathErrno(err))
		}
		up := filepath.Dir(at)
		if up == at {
			return fmt.Errorf("cannot create %s: %w", dir, pathErrno(err))
		}
		at = up
	}
	probe, err := os.MkdirTemp(at, ".contend-check-")
	if err != nil {
		return fmt.Errorf("cannot create %s: making a directory in %s: %w", dir, at, pathErrno(err))
	}
	return os.Remove(probe)
}

// pathErrno returns the errno inside a path error, so a message names the
// path its caller chose rather than a temporary one.
func pathErrno(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openDir opens the directory at path itself, not what a symbolic link
// there points to.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// dirWriter creates the files of a recording inside one open directory.
type dirWriter struct {
	dir   *os.File
	owner *Owner
	// sizes records each file written and its size.
	sizes map[string]int64
}

// writeParts writes every part of r, meta.json last: it lists the other
// files with their sizes (Meta.Files).
func writeParts(w *dirWriter, r *Recording) error {
	w.sizes = map[string]int64{}
	if err := writeData(w, r); err != nil {
		return err
	}
	meta := r.Meta
	meta.Version = FormatVersion
	if meta.Counters == nil {
		meta.Counters = map[string]uint64{}
	}
	meta.Files = w.sizes
	return w.writeJSON(MetaFile, meta)
}

// writeData writes the parts of r other than meta.json.
func writeData(w *dirWriter, r *Recording) error {
	views := make([]string, 0, len(r.Profiles))
	for v := range r.Profiles {
		views = append(views, string(v))
	}
	sort.Strings(views)
	for _, v := range views {
		p := r.Profiles[View(v)]
		if p == nil {
			continue
		}
		if strings.ContainsAny(v, `/\`) || v == "" || v[0] == '.' {
			return fmt.Errorf("bad view name %q", v)
		}
		if err := w.writeFile(v+profileSuffix, func(w io.Writer) error {
			return p.Write(w) // gzipped protobuf
		}); err != nil {
			return fmt.Errorf("view %s: %w", v, err)
		}
	}
	for i, d := range r.Goroutines {
		if d == nil || len(d.Raw) == 0 {
			continue
		}
		name := fmt.Sprintf("%s%d.txt", goroutinePrefix, i)
		if err := w.writeFile(name, func(w io.Writer) error {
			_, err := w.Write(d.Raw)
			return err
		}); err != nil {
			return err
		}
	}
	if err := writeJavaDumps(w, r.JavaDumps); err != nil {
		return err
	}
	if len(r.JITCode) > 0 {
		if err := w.writeJSON(JITCodeFile, r.JITCode); err != nil {
			return err
		}
	}
	if r.NativeCode != nil {
		if err := w.writeJSON(NativeCodeFile, r.NativeCode); err != nil {
			return err
		}
	}
	if r.Locks != nil {
		if err := w.writeJSON(LocksFile, r.Locks); err != nil {
			return err
		}
	}
	if r.Threads != nil {
		if err := w.writeJSON(ThreadsFile, r.Threads); err != nil {
			return err
		}
	}
	if r.Stacks != nil {
		if err := w.writeJSON(StacksFile, r.Stacks); err != nil {
			return err
		}
	}
	if r.Events != nil {
		if err := w.writeFile(EventsFile, func(w io.Writer) error {
			zw := gzip.NewWriter(w)
			enc := json.NewEncoder(zw)
			for i := range r.Events {
				if err := enc.Encode(&r.Events[i]); err != nil {
					return err
				}
			}
			return zw.Close()
		}); err != nil {
			return err
		}
	}
	return nil
}

func (w *dirWriter) writeJSON(name string, v any) error {
	return w.writeFile(name, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// writeFile creates name (0600, never through a symbolic link), lets fill
// write it through a buffer, gives it to the owner and syncs it.
func (w *dirWriter) writeFile(name string, fill func(io.Writer) error) error {
	fd, err := unix.Openat(int(w.dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if w.owner != nil {
		if err := f.Chown(w.owner.UID, w.owner.GID); err != nil {
			return err
		}
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := fill(bw); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if w.sizes != nil {
		w.sizes[name] = st.Size()
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}

// IsRecording reports whether dir looks like a recording directory.
func IsRecording(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, MetaFile))
	return err == nil && st.Mode().IsRegular()
}

// Read loads the recording directory dir. Every file is opened through
// boundedio's opener as a regular file only, never through a symbolic
// link (a FIFO, device or link in its place is refused at once: a
// recording is a directory anyone may have written, and a link to a file
// the reader may read but its writer may not would hand that file to the
// analysis), and read within goprof's budget: profiles and the event log
// through the same decompression path as any profile, the JSON files
// refused when larger than the budget allows. What each part costs once
// parsed is charged to goprof's input budget, shared with the other
// inputs of the command. The thread timeline is validated (see
// Timeline.Validate), as are the lock histograms and the events' stack
// references; errors name the file at fault.
func Read(dir string) (*Recording, error) {
	r, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	if err := checkComplete(dir, r.Meta, entries); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	}
	if err := r.readProfiles(dir, entries); err != nil {
		return nil, err
	}
	if err := r.readTables(dir); err != nil {
		return nil, err
	}
	if r.empty() {
		return nil, fmt.Errorf("read recording %s: it holds %s and nothing else: no profile, lock table, thread timeline or event log: %w", dir, MetaFile, ErrInvalid)
	}
	return r, nil
}

// readMeta returns a Recording holding only the metadata of the
// recording in dir, checked for a format version this code reads and for
// figures that cannot be negative. Its errors are Read's.
func readMeta(dir string) (*Recording, error) {
	metaData, err := readBudgeted(filepath.Join(dir, MetaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read recording %s: %w", dir, ErrNotRecording)
	}
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	r := &Recording{}
	if err := json.Unmarshal(metaData, &r.Meta); err != nil {
		return nil, fmt.Errorf("read recording %s: %s: %w: %w", dir, MetaFile, jsonError(err), ErrInvalid)
	}
	if r.Meta.Version > FormatVersion {
		return nil, fmt.Errorf("read recording %s: format version %d is newer than this contend reads (%d)", dir, r.Meta.Version, FormatVersion)
	}
	if r.Meta.Duration < 0 || r.Meta.NumCPU < 0 {
		return nil, fmt.Errorf("read recording %s: %s: negative duration_ns or num_cpu: %w", dir, MetaFile, ErrInvalid)
	}
	return r, nil
}

// readProfiles reads into r the pprof profiles, the Java thread dumps and
// the goroutine dumps among entries, the files of dir, the goroutine
// dumps in the order they were taken. Its errors are Read's.
func (r *Recording) readProfiles(dir string, entries []os.DirEntry) error {
	var dumps []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, profileSuffix):
			p, err := readProfile(filepath.Join(dir, name))
			if err != nil {
				return fmt.Errorf("read recording %s: %w", dir, err)
			}
			r.SetProfile(View(strings.TrimSuffix(name, profileSuffix)), p)
		case strings.HasPrefix(name, goroutinePrefix) && strings.HasSuffix(name, ".txt"):
			dumps = append(dumps, name)
		}
	}
	var err error
	if r.JavaDumps, err = readJavaDumps(dir, entries); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	}
	sort.Slice(dumps, func(i, j int) bool { return dumpIndex(dumps[i]) < dumpIndex(dumps[j]) })
	for _, name := range dumps {
		data, err := goprof.ReadFileWith(filepath.Join(dir, name), inside)
		if err != nil {
			return fmt.Errorf("read recording: %w", err)
		}
		d, err := goprof.ParseDumpWithin(data, goprof.InputBudget())
		if err != nil {
			return fmt.Errorf("read recording %s: %s: %w", dir, name, err)
		}
		r.Goroutines = append(r.Goroutines, d)
	}
	return nil
}

// readTables reads into r the JSON files of dir (JIT and native code,
// locks, the thread timeline, stacks) and its event log, validating the
// lock histograms and the timeline. Its errors are Read's.
func (r *Recording) readTables(dir string) error {
	var err error
	if err := readJSON(filepath.Join(dir, JITCodeFile), &r.JITCode); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	}
	if r.NativeCode, err = readNativeCode(dir); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	}
	if err := readJSON(filepath.Join(dir, LocksFile), &r.Locks); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	}
	for i := range r.Locks {
		if n := len(r.Locks[i].Hist); n > maxHistBuckets {
			return fmt.Errorf("read recording %s: %s: lock %d: %d histogram buckets, more than %d: %w", dir, LocksFile, i, n, maxHistBuckets, ErrInvalid)
		}
	}
	var tl Timeline
	if ok, err := readJSONOpt(filepath.Join(dir, ThreadsFile), &tl); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	} else if ok {
		if err := tl.Validate(); err != nil {
			return fmt.Errorf("read recording %s: %s: %w: %w", dir, ThreadsFile, err, ErrInvalid)
		}
		r.Threads = &tl
	}
	if err := readJSON(filepath.Join(dir, StacksFile), &r.Stacks); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	}
	if err := readEvents(filepath.Join(dir, EventsFile), r); err != nil {
		return fmt.Errorf("read recording %s: %w", dir, err)
	}
	return nil
}

// empty reports whether r holds no data besides its metadata.
func (r *Recording) empty() bool {
	return len(r.Profiles) == 0 && len(r.Goroutines) == 0 && r.Locks == nil && r.Threads == nil && r.Events == nil && len(r.JavaDumps) == 0
}

// probeFiles lists the files a live recording holds for each probe family
// it lists in Meta.Probes (see collector.buildViews): the check for
// recordings written before Meta.Files existed.
var probeFiles = map[string][]string{
	"futex": {string(ViewFutexWait) + profileSuffix, string(ViewFutexWake) + profileSuffix, LocksFile},
	"sched": {string(ViewOffCPU) + profileSuffix, string(ViewWakes) + profileSuffix},
	"oncpu": {string(ViewOnCPU) + profileSuffix},
	"io":    {string(ViewIO) + profileSuffix},
}

// checkComplete refuses a damaged recording: a file its manifest lists
// that is missing or of another size (truncated, or overwritten), or, in
// a recording without a manifest, a view of a probe it says was attached.
// A file the manifest does not list is no damage (a trace exported into
// the directory).
func checkComplete(dir string, m Meta, entries []os.DirEntry) error {
	if m.Files == nil {
		present := map[string]bool{}
		for _, e := range entries {
			present[e.Name()] = true
		}
		for _, probe := range m.Probes {
			for _, name := range probeFiles[probe] {
				if !present[name] {
					return fmt.Errorf("%s is missing: %s says the %s probe was attached, which writes it: %w", name, MetaFile, probe, ErrInvalid)
				}
			}
		}
		return nil
	}
	names := make([]string, 0, len(m.Files))
	for name := range m.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want := m.Files[name]
		if name != filepath.Base(name) || name == "." || name == ".." || name == MetaFile {
			return fmt.Errorf("%s: files: bad name %q: %w", MetaFile, name, ErrInvalid)
		}
		st, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s is missing (%s lists it, %d bytes): %w", name, MetaFile, want, ErrInvalid)
		case err != nil:
			return err
		case !st.Mode().IsRegular():
			return fmt.Errorf("%s: %w", name, goprof.ErrNotRegular)
		case st.Size() < want:
			return fmt.Errorf("%s is truncated: %d of the %d bytes %s lists: %w", name, st.Size(), want, MetaFile, ErrInvalid)
		case st.Size() != want:
			return fmt.Errorf("%s has %d bytes where %s lists %d: %w", name, st.Size(), MetaFile, want, ErrInvalid)
		}
	}
	return nil
}

// maxHistBuckets is the length of a log2 histogram of uint64 nanoseconds.
const maxHistBuckets = 64

func dumpIndex(name string) int {
	var n int
	fmt.Sscanf(strings.TrimPrefix(name, goroutinePrefix), "%d", &n)
	return n
}

// inside are the opener's options for a file inside a recording
// directory: a symbolic link is not followed.
var inside = boundedio.Options{NoFollow: true}

// readProfile reads one view through goprof's budgeted path.
func readProfile(path string) (*profile.Profile, error) {
	data, err := goprof.ReadFileWith(path, inside)
	if err != nil {
		return nil, err
	}
	p, err := goprof.ParseProfileWithin(data, goprof.InputBudget())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return p, nil
}

// jsonExpansion bounds how much larger JSON decoded into the recording's
// types is than its text: the smallest stack frame, {"func":"a"}, is 12
// bytes of text and an 80-byte Frame; timeline counters, a digit and a
// comma each, become 8-byte integers.
const jsonExpansion = 8

// readBudgeted reads a JSON file of a recording: a regular file within
// goprof's budget, refused when its decoded form could take more than
// the memory budget goprof allows a profile; its decoded form is charged
// to the input budget.
func readBudgeted(path string) ([]byte, error) {
	data, err := goprof.ReadFileWith(path, inside)
	if err != nil {
		return nil, err
	}
	cost := int64(len(data)) * jsonExpansion
	if limit := goprof.MaxModel(); cost > limit {
		return nil, fmt.Errorf("%s: %d bytes of JSON could take more than %d MiB once read: %w", filepath.Base(path), len(data), limit>>20, goprof.ErrTooLarge)
	}
	if err := goprof.InputBudget().Charge("reading it", cost); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return data, nil
}

// jsonError describes an error of encoding/json by where it is, never
// by what the input holds there (a syntax error quotes the byte at
// fault; a type error names the Go type, which is ours, and the field).
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		kind, _, _ := strings.Cut(te.Value, " ") // "number -5": the kind only
		return fmt.Errorf("JSON %s where a %s belongs, field %q at byte %d", kind, te.Type, te.Field, te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("JSON ends early")
	}
	return errors.New("malformed JSON")
}

func readJSON(path string, v any) error {
	_, err := readJSONOpt(path, v)
	return err
}

// readJSONOpt decodes path into v; a missing file is not an error and
// reports false.
func readJSONOpt(path string, v any) (bool, error) {
	data, err := readBudgeted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: %w: %w", filepath.Base(path), jsonError(err), ErrInvalid)
	}
	return true, nil
}

// maxEventLine bounds one line of the event log: an event is about a
// hundred bytes of JSON. Reading line by line keeps the decoder from
// buffering an endless value (a JSON decoder reads a stream of spaces
// into memory looking for one).
const maxEventLine = 64 << 10

// maxLogEvents bounds the events of one log: eight times the 120,000 the
// collector keeps (collector.maxEvents), so every log contend writes is
// read, while a log of millions of empty events, a few bytes each once
// compressed, is refused before it is built.
const maxLogEvents = 1 << 20

// costEvent is the memory one event takes once read and analysed: the
// 96-byte Event, and the state the analysis of the live views keeps per
// event (a log of 1.15 million events reached 511 MB at its peak, about
// 440 bytes each), rounded up.
const costEvent = 512

// readEvents reads the event log, one JSON event per line, inflated
// through goprof's budgeted reader. A first pass counts the lines, so the
// log is refused from its size (more than maxLogEvents, or more than the
// input budget allows at costEvent each) before any event is built, and
// the events are read into a slice of that length.
func readEvents(path string, r *Recording) error {
	f, _, err := boundedio.Open(path, inside)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := countEvents(f)
	if err != nil {
		return fmt.Errorf("%s: %w", EventsFile, err)
	}
	if n > maxLogEvents {
		return fmt.Errorf("%s: %d lines, more than the %d events a log may hold: %w", EventsFile, n, maxLogEvents, goprof.ErrTooLarge)
	}
	if err := goprof.InputBudget().Charge(fmt.Sprintf("reading its %d events", n), n*costEvent); err != nil {
		return fmt.Errorf("%s: %w", EventsFile, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", EventsFile, err)
	}
	zr, err := goprof.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", EventsFile, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 4096), maxEventLine)
	r.Events = make([]Event, 0, n)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if int64(len(r.Events)) == n {
			return fmt.Errorf("%s: more lines than its first reading counted (%d): %w", EventsFile, n, ErrInvalid)
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%s: line %d: %w: %w", EventsFile, line, jsonError(err), ErrInvalid)
		}
		if e.Stack >= len(r.Stacks) || e.Stack < -1 {
			return fmt.Errorf("%s: line %d: stack %d out of range: %w", EventsFile, line, e.Stack, ErrInvalid)
		}
		r.Events = append(r.Events, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s: a line longer than %d KiB: %w", EventsFile, maxEventLine>>10, ErrInvalid)
		}
		return fmt.Errorf("%s: %w", EventsFile, err)
	}
	return nil
}

// countEvents counts the lines of the event log f (an unterminated last
// line counts), reading it through goprof's budgeted reader and keeping
// nothing. A line longer than maxEventLine is refused as soon as it is
// seen.
func countEvents(f io.Reader) (int64, error) {
	zr, err := goprof.NewReader(f)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	var n, run int64 // lines, and bytes since the last newline
	for {
		k, err := zr.Read(buf)
		for b := buf[:k]; len(b) > 0; {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				run += int64(len(b))
				break
			}
			n++
			run, b = 0, b[i+1:]
		}
		if run > maxEventLine {
			return 0, fmt.Errorf("a line longer than %d KiB: %w", maxEventLine>>10, ErrInvalid)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if run > 0 {
		n++
	}
	return n, nil
}

// DirName names a recording directory after its target and a time:
// "contend-<comm>-<pid>-<YYYYmmdd-HHMMSS>", the command name kept to the
// characters safe in a file name, and a part left out when unknown.
func DirName(m Meta, t time.Time) string {
	name := "contend"
	comm := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return -1
	}, m.Comm)
	if strings.Trim(comm, ".") != "" {
		name += "-" + comm
	}
	if m.PID > 0 {
		name += fmt.Sprintf("-%d", m.PID)
	}
	return name + "-" + t.Format("20060102-150405")
}
