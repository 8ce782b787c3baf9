package recording

import (
	"bufio"
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

	"github.com/contend-dev/contend/goprof"
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

// ErrExists is returned by Write when the destination already exists.
var ErrExists = errors.New("output directory already exists")

// Write stores r as a recording directory at dir. The directory is built
// under a temporary name beside dir and renamed into place, so a reader
// never sees a half-written recording. dir must not exist.
func Write(dir string, r *Recording) (err error) {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("write recording %s: %w", dir, ErrExists)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := writeParts(tmp, r); err != nil {
		return fmt.Errorf("write recording %s: %w", dir, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	return syncDir(parent)
}

func writeParts(dir string, r *Recording) error {
	meta := r.Meta
	meta.Version = FormatVersion
	if meta.Counters == nil {
		meta.Counters = map[string]uint64{}
	}
	if err := writeJSON(filepath.Join(dir, MetaFile), meta); err != nil {
		return err
	}
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
		if err := writeFile(filepath.Join(dir, v+profileSuffix), func(w io.Writer) error {
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
		if err := writeFile(filepath.Join(dir, name), func(w io.Writer) error {
			_, err := w.Write(d.Raw)
			return err
		}); err != nil {
			return err
		}
	}
	if err := writeJavaDumps(dir, r.JavaDumps); err != nil {
		return err
	}
	if len(r.JITCode) > 0 {
		if err := writeJSON(filepath.Join(dir, JITCodeFile), r.JITCode); err != nil {
			return err
		}
	}
	if r.Locks != nil {
		if err := writeJSON(filepath.Join(dir, LocksFile), r.Locks); err != nil {
			return err
		}
	}
	if r.Threads != nil {
		if err := writeJSON(filepath.Join(dir, ThreadsFile), r.Threads); err != nil {
			return err
		}
	}
	if r.Stacks != nil {
		if err := writeJSON(filepath.Join(dir, StacksFile), r.Stacks); err != nil {
			return err
		}
	}
	if r.Events != nil {
		if err := writeFile(filepath.Join(dir, EventsFile), func(w io.Writer) error {
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

func writeJSON(path string, v any) error {
	return writeFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// writeFile creates path, lets fill write it through a buffer, and syncs it.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := fill(bw); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
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

// Read loads the recording directory dir.
func Read(dir string) (*Recording, error) {
	metaData, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read recording %s: %w", dir, ErrNotRecording)
	}
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	r := &Recording{}
	if err := json.Unmarshal(metaData, &r.Meta); err != nil {
		return nil, fmt.Errorf("read recording %s: %s: %w", dir, MetaFile, err)
	}
	if r.Meta.Version > FormatVersion {
		return nil, fmt.Errorf("read recording %s: format version %d is newer than this contend reads (%d)", dir, r.Meta.Version, FormatVersion)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	var dumps []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, profileSuffix):
			p, err := readProfile(filepath.Join(dir, name))
			if err != nil {
				return nil, fmt.Errorf("read recording %s: %w", dir, err)
			}
			r.SetProfile(View(strings.TrimSuffix(name, profileSuffix)), p)
		case strings.HasPrefix(name, goroutinePrefix) && strings.HasSuffix(name, ".txt"):
			dumps = append(dumps, name)
		}
	}
	if r.JavaDumps, err = readJavaDumps(dir, entries); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	}
	sort.Slice(dumps, func(i, j int) bool { return dumpIndex(dumps[i]) < dumpIndex(dumps[j]) })
	for _, name := range dumps {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read recording: %w", err)
		}
		d, err := goprof.ParseDump(data)
		if err != nil {
			return nil, fmt.Errorf("read recording %s: %s: %w", dir, name, err)
		}
		r.Goroutines = append(r.Goroutines, d)
	}
	if err := readJSON(filepath.Join(dir, JITCodeFile), &r.JITCode); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	}
	if err := readJSON(filepath.Join(dir, LocksFile), &r.Locks); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	}
	var tl Timeline
	if ok, err := readJSONOpt(filepath.Join(dir, ThreadsFile), &tl); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	} else if ok {
		r.Threads = &tl
	}
	if err := readJSON(filepath.Join(dir, StacksFile), &r.Stacks); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	}
	if err := readEvents(filepath.Join(dir, EventsFile), r); err != nil {
		return nil, fmt.Errorf("read recording %s: %w", dir, err)
	}
	return r, nil
}

func dumpIndex(name string) int {
	var n int
	fmt.Sscanf(strings.TrimPrefix(name, goroutinePrefix), "%d", &n)
	return n
}

func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return p, nil
}

func readJSON(path string, v any) error {
	_, err := readJSONOpt(path, v)
	return err
}

// readJSONOpt decodes path into v; a missing file is not an error and
// reports false.
func readJSONOpt(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return true, nil
}

func readEvents(path string, r *Recording) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", EventsFile, err)
	}
	dec := json.NewDecoder(zr)
	r.Events = []Event{}
	for {
		var e Event
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("%s: event %d: %w", EventsFile, len(r.Events)+1, err)
		}
		if e.Stack >= len(r.Stacks) {
			return fmt.Errorf("%s: event %d: stack %d out of range", EventsFile, len(r.Events)+1, e.Stack)
		}
		r.Events = append(r.Events, e)
	}
	return nil
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
