package collector

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Waits and I/O calls still in progress. The kernel aggregates a futex
// wait or an I/O call when its thread runs again, so a thread blocked for
// the whole recording would show only in the /proc timeline. The
// collector therefore reads the per-thread start entries (ct_call_start,
// written when a call's thread goes to sleep) at every drain and accounts
// the calls still in progress up to the snapshot's end. Their stacks are
// unwound from a copy of the thread's user stack the collector takes from
// /proc/PID/mem while the call lasts, from the registers the entry holds
// (Session.unwindOpen): the frame-pointer walk the kernel keeps in the
// entry stops at the first function built without frame pointers. Calls
// already in progress when the probes attach have no start entry; the
// collector seeds one from /proc/PID/task/TID/syscall, timed from the
// start of the recording (such a call ends with no stack).

// openCall is a futex wait or an I/O call in progress.
type openCall struct {
	pid, tid uint32
	// ts is the start (bpf_ktime_get_ns): the call's first switch-out,
	// or the recording's start for a call already in progress when the
	// probes attached.
	ts uint64
	// io is set for an I/O syscall (nr); otherwise a futex wait (addr,
	// owner, op, shared).
	io     bool
	nr     uint32
	addr   uint64
	owner  uint32
	op     uint8
	shared bool
	// ip, sp and bp are the user registers of the call (bp 0 when
	// unknown: a call seeded from /proc); the collector unwinds a copy
	// of the stack from them.
	ip, sp, bp uint64
}

// openSpan is an open call's part of an interval.
type openSpan struct {
	openCall
	// dur is the time from the later of its start and the interval's
	// start to the interval's end.
	dur uint64
}

// openFromStart is the call a ct_call_start entry of thread key (pid_tgid)
// stands for.
func openFromStart(key uint64, v callStart) openCall {
	c := openCall{pid: uint32(key >> 32), tid: uint32(key), ts: v.TS, nr: v.NR, ip: v.IP, sp: v.SP, bp: v.BP}
	if v.Op == 0 {
		c.io = true
	} else {
		c.addr, c.owner, c.op, c.shared = v.Addr, v.Owner, v.Op, v.Shared != 0
	}
	return c
}

// start is the ct_call_start entry of c, as seeded for a call already in
// progress when the probes attached: its stack was not walked (the kernel
// walks a call's stack when its thread goes to sleep, which this one did
// before), so a seeded wait that ends counts under "[stack lost]", not
// among the short waits.
func (c openCall) start() callStart {
	v := callStart{TS: c.ts, NR: c.nr, IP: c.ip, SP: c.sp, BP: c.bp, Stack: stackLost}
	if !c.io {
		v.Addr, v.Owner, v.Op = c.addr, c.owner, c.op
		if c.shared {
			v.Shared = 1
		}
	}
	return v
}

func compareOpen(a, b openCall) int {
	return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid), boolCompare(a.io, b.io), cmp.Compare(a.ts, b.ts))
}

// boolCompare orders false before true.
func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// clipOpen returns the calls in progress at to (monotonic ns) with the
// part of each that lies in [from, to). A call that started after to (an
// entry written after the snapshot's instant) is left out.
func clipOpen(calls []openCall, from, to uint64) []openSpan {
	var out []openSpan
	for _, c := range calls {
		start := max(c.ts, from)
		if start >= to {
			continue
		}
		out = append(out, openSpan{openCall: c, dur: to - start})
	}
	return out
}

// Futex syscall numbers and commands on x86_64 (bpf/futex.bpf.h).
const (
	nrFutex      = 202
	nrFutexWaitv = 449
	nrFutexWait  = 455

	futexCmdMask        = 0x7f
	futexPrivateFlag    = 128
	futexWait           = 0
	futexLockPI         = 6
	futexWaitBitset     = 9
	futexWaitRequeuePI  = 11
	futexLockPI2        = 13
	futexTIDMask        = 0x3fffffff
	glibcOwnerOffset    = 8
	procSyscallRunning  = "running"
	procSyscallNotInSys = -1
)

// procSyscall is what /proc/PID/task/TID/syscall says about a thread
// blocked in the kernel: the syscall number, its six arguments, and the
// user stack pointer and instruction pointer.
type procSyscall struct {
	nr     int64
	args   [6]uint64
	sp, pc uint64
}

// parseProcSyscall parses /proc/PID/task/TID/syscall. It reports false
// for a thread that is running or blocked outside a syscall.
func parseProcSyscall(b []byte) (procSyscall, bool, error) {
	f := strings.Fields(string(bytes.TrimSpace(b)))
	if len(f) == 0 {
		return procSyscall{}, false, fmt.Errorf("empty syscall file")
	}
	if f[0] == procSyscallRunning {
		return procSyscall{}, false, nil
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return procSyscall{}, false, fmt.Errorf("syscall number %q: %w", f[0], err)
	}
	if nr == procSyscallNotInSys {
		return procSyscall{}, false, nil
	}
	if len(f) != 9 {
		return procSyscall{}, false, fmt.Errorf("syscall file has %d fields, want 9", len(f))
	}
	ps := procSyscall{nr: nr}
	vals := make([]uint64, 8)
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		if err != nil {
			return procSyscall{}, false, fmt.Errorf("syscall file field %d %q: %w", i+2, s, err)
		}
		vals[i] = v
	}
	copy(ps.args[:], vals[:6])
	ps.sp, ps.pc = vals[6], vals[7]
	return ps, true, nil
}

// waitOp returns the wait op (enum ct_futex_op) of a futex(2) command, 0
// when it is not a wait.
func waitOp(cmd uint64) uint8 {
	switch cmd & futexCmdMask {
	case futexWait:
		return opWait
	case futexWaitBitset:
		return opWaitBitset
	case futexLockPI:
		return opLockPI
	case futexLockPI2:
		return opLockPI2
	case futexWaitRequeuePI:
		return opWaitRequeuePI
	}
	return 0
}

// memReader reads the target's memory (owner words, futex_waitv vectors).
type memReader interface {
	ReadAt(p []byte, off int64) (int, error)
}

// openFromSyscall returns the open call a thread blocked in syscall ps
// stands for, as the probes would have recorded it at sys_enter, and
// false when the syscall is neither a futex wait nor a traced I/O call.
// The owner is read beside the futex word as the probe does (mem may be
// nil: owner unknown).
func openFromSyscall(pid, tid uint32, ps procSyscall, ts uint64, mem memReader) (openCall, bool) {
	// /proc gives the user sp and pc, not bp: frames whose unwind rule
	// needs the frame pointer end the walk of such a call's stack.
	c := openCall{pid: pid, tid: tid, ts: ts, nr: uint32(ps.nr), ip: ps.pc, sp: ps.sp}
	if _, ok := syscallNames[uint32(ps.nr)]; ok && ps.nr >= 0 {
		c.io, c.nr = true, uint32(ps.nr)
		return c, true
	}
	switch ps.nr {
	case nrFutex:
		c.op = waitOp(ps.args[1])
		c.addr = ps.args[0]
		c.shared = ps.args[1]&futexPrivateFlag == 0
	case nrFutexWait:
		// futex_wait(uaddr, val, mask, flags, ...)
		c.op, c.addr = opFutexWait, ps.args[0]
		c.shared = ps.args[3]&futexPrivateFlag == 0
	case nrFutexWaitv:
		c.op = opFutexWaitv
		// struct futex_waitv { u64 val; u64 uaddr; u32 flags; ... }:
		// the first entry's address, as the probe reads it.
		if v, ok := readU64(mem, ps.args[0]+8); ok {
			c.addr = v
		}
		if v, ok := readU32(mem, ps.args[0]+16); ok {
			c.shared = v&futexPrivateFlag == 0
		}
	}
	if c.op == 0 {
		return openCall{}, false
	}
	if c.op == opLockPI || c.op == opLockPI2 {
		if v, ok := readU32(mem, c.addr); ok {
			c.owner = v & futexTIDMask
		}
	} else if v, ok := readU32(mem, c.addr+glibcOwnerOffset); ok {
		c.owner = v
	}
	return c, true
}

// readU32 and readU64 read a little-endian word of the target's memory.
func readU32(mem memReader, addr uint64) (uint32, bool) {
	v, ok := readWord(mem, addr, 4)
	return uint32(v), ok
}

func readU64(mem memReader, addr uint64) (uint64, bool) { return readWord(mem, addr, 8) }

func readWord(mem memReader, addr uint64, size int) (uint64, bool) {
	var b [8]byte
	if mem == nil || addr == 0 {
		return 0, false
	}
	if n, err := mem.ReadAt(b[:size], int64(addr)); err != nil || n != size {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// readStackWindow copies up to windowMax bytes of user stack from sp, as
// the probes copy stack windows: a first piece up to the next
// windowChunk boundary, then whole chunks, stopping at the first that
// cannot be read (the end of the stack mapping).
// It reads into buf (windowMax bytes), which the caller may reuse once
// the window has been unwound.
func readStackWindow(mem memReader, sp uint64, buf []byte) []byte {
	buf = buf[:windowMax]
	n := int(windowChunk - sp%windowChunk)
	if k, err := mem.ReadAt(buf[:n], int64(sp)); err != nil || k != n {
		return nil
	}
	for n+windowChunk <= windowMax {
		if k, err := mem.ReadAt(buf[n:n+windowChunk], int64(sp)+int64(n)); err != nil || k != windowChunk {
			break
		}
		n += windowChunk
	}
	return buf[:n]
}

// blockedCall reads the syscall one thread is blocked in; false when it
// is not blocked in one (or the thread is gone).
func blockedCall(taskDir string) (procSyscall, bool) {
	b, err := os.ReadFile(filepath.Join(taskDir, "syscall"))
	if err != nil {
		return procSyscall{}, false
	}
	ps, ok, err := parseProcSyscall(b)
	return ps, ok && err == nil
}

// seedOpen gives a start entry to every futex wait and I/O call the
// target's threads are blocked in as the probes attach (none has one:
// their sys_enter came before), timed from ts, the start of the recording.
// It runs after the probes are attached, so a call entered since has its
// own entry, which seeding never overwrites. A thread that left its call
// between the read of /proc and the seed would keep a stale entry, so
// each thread is read again after the seed and the seed taken back when
// the thread is no longer in the same call. It returns how many calls it
// seeded.
func seedOpen(tr tracer, procRoot string, pid int, ts uint64) int {
	dir := procPath(procRoot, strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	mem, err := os.Open(procPath(procRoot, strconv.Itoa(pid), "mem"))
	var mr memReader
	if err == nil {
		defer mem.Close()
		mr = mem
	}
	type seeded struct {
		dir string
		ps  procSyscall
		c   openCall
	}
	var done []seeded
	for _, e := range ents {
		tid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		td := filepath.Join(dir, e.Name())
		ps, ok := blockedCall(td)
		if !ok {
			continue
		}
		c, ok := openFromSyscall(uint32(pid), uint32(tid), ps, ts, mr)
		if !ok {
			continue
		}
		if stored, err := tr.seed(c); err == nil && stored {
			done = append(done, seeded{td, ps, c})
		}
	}
	n := 0
	for _, s := range done {
		if now, ok := blockedCall(s.dir); ok && now == s.ps {
			n++
			continue
		}
		tr.unseed(s.c)
	}
	return n
}
