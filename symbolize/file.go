package symbolize

import (
	"fmt"
	"sync"

	"github.com/contend-dev/contend/recording"
)

// File is one ELF object opened from disk, for work without a live process
// (the analyzer disassembles functions of binaries named in a recording).
// Addresses are ELF virtual addresses: the OFF of a "module+0xOFF" frame, or
// a runtime address minus the load bias. A File is safe for concurrent use.
type File struct {
	mu  sync.Mutex
	o   *object
	lim *limits
}

// OpenFile opens the ELF object at path, with its separate debug file when
// one is found under o.DebugDirs (o.ProcRoot is not used). path must be a
// regular file: it is opened without blocking and checked on the open
// descriptor, so a FIFO, a device or a directory there is an error, not a
// hang.
func OpenFile(path string, o Options) (*File, error) {
	lim := newLimits()
	obj, err := openObjectFile(path, path, lim)
	if err != nil {
		return nil, fmt.Errorf("open object: %w", err)
	}
	dirs := o.DebugDirs
	if dirs == nil {
		dirs = []string{defaultDebugDir}
	}
	obj.dbg = findDebugFile(obj, "", dirs)
	return &File{o: obj, lim: lim}, nil
}

// Warnings says what the file's lookups could not do: tables over the
// memory budget, lookups that hit malformed data.
func (f *File) Warnings() []string { return f.lim.warnings() }

// Close releases the file's memory mapping.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.o.close()
	return nil
}

// BuildID returns the GNU build id in hex, or the Go build id, or "".
func (f *File) BuildID() string {
	if f.o.buildID != "" {
		return f.o.buildID
	}
	return f.o.goBuildID
}

// FunctionAt returns the function containing the ELF virtual address addr
// and its machine code; Start and End are ELF virtual addresses.
func (f *File) FunctionAt(addr uint64) (fn Function, code []byte, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.o.data == nil {
		return Function{}, nil, false
	}
	return objectFunction(f.o, addr, 0, f.lim)
}

// Frames symbolizes the ELF virtual address addr like Process.Frames.
func (f *File) Frames(addr uint64, exact bool) []recording.Frame {
	f.mu.Lock()
	defer f.mu.Unlock()
	lookup := addr
	if !exact && addr > 0 {
		lookup = addr - 1
	}
	var fr []inlFrame
	if f.o.data != nil {
		if err := guarded(func() { fr = f.o.codeFrames(lookup) }); err != nil {
			f.lim.fault(f.o.name, err)
			fr = nil
		}
	}
	return toFrames(fr, f.o.name, addr, addr)
}
