package collector

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/recording"
)

// fdPaths names the files behind the descriptors of sleeps, from
// /proc/PID/fd while recording, so that the analysis, which opens no
// file, has the path. A path is cached per (process, descriptor, device,
// inode) and read again only for a descriptor now open on another file.
type fdPaths struct {
	root string
	mu   sync.Mutex
	m    map[fdKey]string
}

type fdKey struct {
	pid uint32
	fd  int32
	dev uint32
	ino uint64
}

// maxFDPaths bounds the cache: a program that opens a new file for
// every write would otherwise grow it for the whole recording. Emptied
// when full; a path read again costs a readlink and a stat.
const maxFDPaths = 4096

// path returns the path of descriptor fd of process pid if it is still
// the file dev:ino (kernel dev_t), "" when it is not or cannot be read.
func (p *fdPaths) path(pid uint32, fd int32, dev uint32, ino uint64) string {
	k := fdKey{pid, fd, dev, ino}
	p.mu.Lock()
	if v, ok := p.m[k]; ok {
		p.mu.Unlock()
		return v
	}
	p.mu.Unlock()
	name := procPath(p.root, strconv.FormatUint(uint64(pid), 10), "fd", strconv.Itoa(int(fd)))
	v := ""
	var st unix.Stat_t
	if target, err := os.Readlink(name); err == nil && unix.Stat(name, &st) == nil &&
		st.Ino == ino && unix.Major(st.Dev) == dev>>20 && unix.Minor(st.Dev) == dev&0xfffff {
		v = target
	}
	p.mu.Lock()
	if p.m == nil || len(p.m) >= maxFDPaths {
		p.m = map[fdKey]string{}
	}
	p.m[k] = v
	p.mu.Unlock()
	return v
}

// objCache hands out one *recording.Object per distinct object, so that
// the thousands of sleeps of a convoy on one file share it in the event
// log instead of holding a copy each.
type objCache struct {
	paths fdPaths
	m     map[objID]*recording.Object
	// sched holds schedFrames' answers by the frames' addresses, shared
	// as the objects are.
	sched map[[schedPCs]uint64][]recording.Frame
}

// objID is what tells two objects of struct ct_sleep records apart.
type objID struct {
	pid            uint32
	fd             int32
	dev            uint32
	ino            uint64
	sys            uint16
	kind           uint8
	cmd            uint32
	ltype, lwhence int16
	lstart, llen   int64
	err            int32
}

// maxObjects bounds objCache, emptied when full (a program that opens a
// file per request makes a new object per sleep).
const maxObjects = 4096

// object returns the object of r (sleepObject), shared with earlier
// records of the same one. Not safe for concurrent use: the ring buffer
// reader alone calls it.
func (c *objCache) object(r sleepRec) *recording.Object {
	if r.FD < 0 {
		return nil
	}
	id := objID{r.Ev.PID, r.FD, r.Dev, r.Ino, r.Ev.Sys, r.Ev.Kind, r.Cmd, r.LType, r.LWhence, r.LStart, r.LLen, r.Err}
	if o, ok := c.m[id]; ok {
		return o
	}
	o := sleepObject(r, &c.paths)
	if c.m == nil || len(c.m) >= maxObjects {
		c.m = map[objID]*recording.Object{}
	}
	c.m[id] = o
	return o
}

// schedFrames returns schedFrames(r, ksym), shared with earlier records
// of the same frames.
func (c *objCache) schedFrames(r sleepRec, ksym kernelSymbols) []recording.Frame {
	if r.NSPCs == 0 || r.NSPCs > schedPCs {
		return nil
	}
	var id [schedPCs]uint64
	copy(id[:], r.SPCs[:r.NSPCs])
	if f, ok := c.sched[id]; ok {
		return f
	}
	f := schedFrames(r, ksym)
	if c.sched == nil || len(c.sched) >= maxObjects {
		c.sched = map[[schedPCs]uint64][]recording.Frame{}
	}
	c.sched[id] = f
	return f
}

// devString formats a kernel dev_t (major << 20 | minor) as
// /proc/PID/maps and /proc/locks do.
func devString(dev uint32) string {
	return fmt.Sprintf("%02x:%02x", dev>>20, dev&0xfffff)
}

const (
	nrFcntl = 72
	nrFlock = 73
)

// fcntl and flock constants (fcntl(2), flock(2)).
var (
	fcntlCmds   = map[uint32]string{6: "F_SETLK", 7: "F_SETLKW", 37: "F_OFD_SETLK", 38: "F_OFD_SETLKW"}
	lockTypes   = map[int16]string{0: "F_RDLCK", 1: "F_WRLCK", 2: "F_UNLCK"}
	seekWhences = map[int16]string{0: "SEEK_SET", 1: "SEEK_CUR", 2: "SEEK_END"}
	errNames    = map[int32]string{11: "EAGAIN", 13: "EACCES"}
)

// flockOp names a flock(2) operation: "LOCK_EX", "LOCK_SH|LOCK_NB".
func flockOp(op uint32) string {
	var parts []string
	for _, f := range []struct {
		bit  uint32
		name string
	}{{1, "LOCK_SH"}, {2, "LOCK_EX"}, {8, "LOCK_UN"}, {4, "LOCK_NB"}} {
		if op&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("0x%x", op)
	}
	return strings.Join(parts, "|")
}

// name returns m[k], or "#k" for a value it does not know.
func name[K comparable](m map[K]string, k K) string {
	if v, ok := m[k]; ok {
		return v
	}
	return fmt.Sprintf("#%v", k)
}

// schedFrames names the innermost kernel frames r's thread had at its
// uninterruptible sleep's switch-out (ct_sleep.spcs) and keeps those
// between the scheduler's __schedule and the rest of the stack: the
// function that waited (rwsem_down_read_slowpath, down_write,
// mutex_lock, io_schedule, ...), which the stack walked at the switch-in
// leaves out. Nil when there are none, or __schedule is not among them
// (the frames then cannot be told from the tracepoint's own).
func schedFrames(r sleepRec, ksym kernelSymbols) []recording.Frame {
	if ksym == nil || r.NSPCs == 0 || r.NSPCs > schedPCs {
		return nil
	}
	var out []recording.Frame
	seen := false
	for _, pc := range r.SPCs[:r.NSPCs] {
		f := ksym.Frame(pc)
		f.Kernel = true
		if !seen {
			seen = f.Func == "__schedule"
			continue
		}
		out = append(out, f)
	}
	return out
}

// joinKernel returns the kernel frames of a sleep: sched, the frames
// walked at the switch-out below the scheduler (schedFrames), then
// stack, the stack walked at the switch-in; sched is cut at the first
// function stack starts with, which both walks saw.
func joinKernel(sched, stack []recording.Frame) []recording.Frame {
	if len(sched) == 0 {
		return stack
	}
	if len(stack) > 0 {
		for i, f := range sched {
			if f.Func == stack[0].Func {
				sched = sched[:i]
				break
			}
		}
	}
	return append(append(make([]recording.Frame, 0, len(sched)+len(stack)), sched...), stack...)
}

// sleepObject converts the object of a struct ct_sleep record; nil when
// its call takes no descriptor. paths names the file (nil: not named).
func sleepObject(r sleepRec, paths *fdPaths) *recording.Object {
	if r.FD < 0 {
		return nil
	}
	o := &recording.Object{FD: int(r.FD)}
	if r.Ino != 0 {
		o.Dev, o.Inode = devString(r.Dev), r.Ino
		if paths != nil {
			o.Path = paths.path(r.Ev.PID, r.FD, r.Dev, r.Ino)
		}
	}
	switch r.Ev.Sys {
	case nrFcntl:
		o.Cmd = name(fcntlCmds, r.Cmd)
		if r.LType >= 0 {
			o.Range = &recording.LockRange{Type: name(lockTypes, r.LType), Whence: name(seekWhences, r.LWhence), Start: r.LStart, Len: r.LLen}
		}
	case nrFlock:
		o.Cmd = flockOp(r.Cmd)
	}
	if r.Ev.Kind == kindTryFail {
		o.Err = name(errNames, r.Err)
	}
	return o
}
