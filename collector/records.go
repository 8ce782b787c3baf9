package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Go mirrors of the C types in bpf/*.h. Field order, sizes and padding
// match the C structs exactly (TestRecordLayouts compares them with the BTF
// of the compiled objects); every field is little-endian on the only
// supported architecture (amd64).

// Stack values that are not hashes of ct_stacks (CT_STACK_* in
// bpf/common.h); every hash is at least stackFirst.
const (
	stackNone uint64 = 0 // not taken: below the event's threshold
	stackLost uint64 = 1 // could not be read, counted in drop_stack_*
	// stackSpilled: the aggregate map was full, the entry kept per thread
	// and state without its stack (info_offcpu_spilled).
	stackSpilled uint64 = 2
	stackFirst   uint64 = 16
)

// stackDepth is CT_STACK_DEPTH: return addresses per ct_stacks entry.
const stackDepth = 64

// histSlots is CT_HIST_SLOTS: log2 histogram slots per lock.
const histSlots = 40

// Record kinds of the ring buffer (enum ct_kind).
const (
	kindWait   = 1
	kindWake   = 2
	kindIO     = 3
	kindRunq   = 4
	kindDSleep = 5
	kindWakeup = 6
	kindWindow = 7
	kindTask   = 8
	// kindSleep and kindTryFail are struct ct_sleep records: a sleep in
	// the kernel with its kernel stack and object, and a failed
	// non-blocking lock attempt.
	kindSleep   = 9
	kindTryFail = 10
)

// What a kindTask record reports (enum ct_task_op).
const (
	taskThreadExit = 1
	taskProcExit   = 2
	taskProcJoin   = 3
	taskProcLeave  = 4
)

// Target selection modes (enum ct_target_mode).
const (
	targetModePIDs   = 0
	targetModeComm   = 1
	targetModeCgroup = 2
)

// Probe families (enum ct_family).
const (
	famFutex  = 0
	famIO     = 1
	famOnCPU  = 2
	famSched  = 3
	famGoSync = 4
	famTry    = 5
)

// What a Go lock probe waits for (enum ct_gosync_kind), the attach cookie
// of its uprobes.
const (
	goSyncMutex = 1
	goSyncRLock = 2
	goSyncWLock = 3
)

// Futex operations (enum ct_futex_op); waits are 1..opLastWait.
const (
	opWait          = 1
	opWaitBitset    = 2
	opLockPI        = 3
	opLockPI2       = 4
	opWaitRequeuePI = 5
	opFutexWait     = 6
	opFutexWaitv    = 7
	opLastWait      = opFutexWaitv
	opWake          = 8
	opWakeBitset    = 9
	opWakeOp        = 10
	opRequeue       = 11
	opCmpRequeue    = 12
	opCmpRequeuePI  = 13
	opUnlockPI      = 14
	opFutexWake     = 15
	opFutexRequeue  = 16
)

// opNames are the values of the op label (recording.LabelOp).
var opNames = map[uint8]string{
	opWait:          "wait",
	opWaitBitset:    "wait_bitset",
	opLockPI:        "lock_pi",
	opLockPI2:       "lock_pi2",
	opWaitRequeuePI: "wait_requeue_pi",
	opFutexWait:     "futex_wait",
	opFutexWaitv:    "futex_waitv",
	opWake:          "wake",
	opWakeBitset:    "wake_bitset",
	opWakeOp:        "wake_op",
	opRequeue:       "requeue",
	opCmpRequeue:    "cmp_requeue",
	opCmpRequeuePI:  "cmp_requeue_pi",
	opUnlockPI:      "unlock_pi",
	opFutexWake:     "futex_wake",
	opFutexRequeue:  "futex_requeue",
}

func opName(op uint8) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("op%d", op)
}

// Thread states of ct_offcpu_key.state (enum ct_state), named as
// recording.State*.
var stateNames = [...]string{"runnable", "sleeping", "uninterruptible", "other"}

func stateName(s uint8) string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "other"
}

// Wake contexts of ct_wakes_key.ctx (enum ct_wake_ctx), the values of the
// context label.
var contextNames = [...]string{"task", "hardirq", "softirq", "idle"}

func contextName(c uint8) string {
	if int(c) < len(contextNames) {
		return contextNames[c]
	}
	return "task"
}

// syscallNames names the x86_64 syscalls the io family traces.
var syscallNames = map[uint32]string{
	0:   "read",
	1:   "write",
	17:  "pread64",
	18:  "pwrite64",
	20:  "writev",
	74:  "fsync",
	75:  "fdatasync",
	82:  "rename",
	257: "openat",
	264: "renameat",
	277: "sync_file_range",
	316: "renameat2",
}

// sleepSyscallNames names the syscalls a sleep in the kernel is most often
// in (kindSleep, kindTryFail), beyond syscallNames; others are
// "syscallN".
var sleepSyscallNames = map[uint32]string{
	7:   "poll",
	19:  "readv",
	23:  "select",
	34:  "pause",
	35:  "nanosleep",
	43:  "accept",
	44:  "sendto",
	45:  "recvfrom",
	46:  "sendmsg",
	47:  "recvmsg",
	61:  "wait4",
	72:  "fcntl",
	73:  "flock",
	77:  "ftruncate",
	9:   "mmap",
	10:  "mprotect",
	11:  "munmap",
	12:  "brk",
	25:  "mremap",
	28:  "madvise",
	230: "clock_nanosleep",
	232: "epoll_wait",
	270: "pselect6",
	271: "ppoll",
	281: "epoll_pwait",
	285: "fallocate",
	288: "accept4",
	295: "preadv",
	296: "pwritev",
	326: "copy_file_range",
	441: "epoll_pwait2",
}

// sleepSyscallName names the syscall of a kindSleep or kindTryFail
// record, "" for sysNone.
func sleepSyscallName(nr uint16) string {
	if nr == sysNone {
		return ""
	}
	if n, ok := sleepSyscallNames[uint32(nr)]; ok {
		return n
	}
	return syscallName(uint32(nr))
}

func syscallName(nr uint32) string {
	if n, ok := syscallNames[nr]; ok {
		return n
	}
	return fmt.Sprintf("syscall%d", nr)
}

// waitKey mirrors struct ct_wait_key.
type waitKey struct {
	Addr   uint64
	Stack  uint64
	PID    uint32
	TID    uint32
	Owner  uint32
	Op     uint8
	Shared uint8
	_      [2]uint8
}

// aggVal mirrors struct ct_agg.
type aggVal struct {
	Count   uint64
	TotalNS uint64
	MaxNS   uint64
}

// lockKey mirrors struct ct_lock_key.
type lockKey struct {
	Addr   uint64
	PID    uint32
	Shared uint8
	_      [3]uint8
}

// lockVal mirrors struct ct_lock_val.
type lockVal struct {
	Waits    uint64
	Blocked  uint64
	Timeouts uint64
	TotalNS  uint64
	MaxNS    uint64
	RunqNS   uint64
	Hist     [histSlots]uint64
}

// wakeKey mirrors struct ct_wake_key.
type wakeKey struct {
	Addr   uint64
	Stack  uint64
	PID    uint32
	TID    uint32
	Shared uint8
	_      [7]uint8
}

// wakeVal mirrors struct ct_wake_val.
type wakeVal struct {
	Wakes uint64
	Woken uint64
}

// offcpuKey mirrors struct ct_offcpu_key.
type offcpuKey struct {
	Stack uint64
	PID   uint32
	TID   uint32
	State uint8
	_     [7]uint8
}

// offcpuVal mirrors struct ct_offcpu_val.
type offcpuVal struct {
	Count   uint64
	TotalNS uint64
	RunqNS  uint64
}

// edgeKey mirrors struct ct_wakes_key (a wake edge).
type edgeKey struct {
	Stack    uint64
	WakerPID uint32
	Waker    uint32
	WakeePID uint32
	Wakee    uint32
	Ctx      uint8
	_        [7]uint8
}

// oncpuKey mirrors struct ct_oncpu_key.
type oncpuKey struct {
	UStack uint64
	KStack uint64
	PID    uint32
	TID    uint32
}

// oncpuVal mirrors struct ct_oncpu_val.
type oncpuVal struct {
	Count    uint64
	PeriodNS uint64
}

// ioKey mirrors struct ct_io_key.
type ioKey struct {
	Stack uint64
	PID   uint32
	TID   uint32
	NR    uint32
	_     uint32
}

// goSyncKey mirrors struct ct_gosync_key: Go lock waits per process,
// waiter stack, lock address and kind (goSync*).
type goSyncKey struct {
	Stack uint64
	Addr  uint64
	PID   uint32
	Kind  uint32
}

// goGKey mirrors struct ct_gosync_g: one goroutine of process PID.
type goGKey struct {
	G   uint64
	PID uint32
	_   uint32
}

// goCallerKey mirrors struct ct_gosync_caller: a return address in
// process PID after a call in one of the runtime's lock wrappers.
type goCallerKey struct {
	Ret uint64
	PID uint32
	_   uint32
}

// callStart mirrors struct ct_call_start: a thread's traced syscall that
// left the CPU asleep, TS 0 once it ended, with the user registers of the
// call and the stack walked from them.
type callStart struct {
	TS      uint64
	Addr    uint64
	IP      uint64
	SP      uint64
	BP      uint64
	NR      uint32
	Owner   uint32
	Op      uint8
	Shared  uint8
	Timeout uint8
	_       [5]uint8
	Stack   uint64
	WokenTS uint64
}

// stackVal mirrors struct ct_stack: the frames of one stack of process PID
// (0 for a kernel stack), innermost first.
type stackVal struct {
	PID uint32
	N   uint32
	PCs [stackDepth]uint64
}

// frames returns the stack's frames.
func (v *stackVal) frames() []uint64 {
	return append([]uint64(nil), v.PCs[:min(int(v.N), stackDepth)]...)
}

// targetArg mirrors struct ct_target_arg.
type targetArg struct {
	PID uint32
	On  uint32
}

// rawEvent mirrors struct ct_event.
type rawEvent struct {
	Kind  uint8
	Op    uint8
	Sys   uint16
	PID   uint32
	TID   uint32
	Peer  uint32
	Stack uint64
	TS    uint64
	Dur   uint64
	Addr  uint64
}

// rawEventSize is sizeof(struct ct_event).
const rawEventSize = 48

// sleepRec mirrors struct ct_sleep: a struct ct_event (Addr the kernel
// stack's hash, Peer the waker, Op the state, Sys the syscall or sysNone)
// and the call's object.
type sleepRec struct {
	Ev       rawEvent
	Ino      uint64
	LStart   int64
	LLen     int64
	Dev      uint32
	FD       int32
	WakerPID uint32
	Cmd      uint32
	LType    int16
	LWhence  int16
	Err      int32
	NSPCs    uint32
	_        uint32
	SPCs     [schedPCs]uint64
}

// schedPCs is the size of ct_sleep.spcs (CT_SCHED_PCS).
const schedPCs = 12

// sleepRecSize is sizeof(struct ct_sleep).
const sleepRecSize = 200

// sysNone is CT_SYS_NONE: a sleep outside any system call.
const sysNone = 0xffff

// decodeSleep decodes a struct ct_sleep record.
func decodeSleep(b []byte) (sleepRec, error) {
	if len(b) < sleepRecSize {
		return sleepRec{}, fmt.Errorf("%w: sleep of %d bytes", errBadRecord, len(b))
	}
	ev, err := decodeEvent(b)
	if err != nil {
		return sleepRec{}, err
	}
	le := binary.LittleEndian
	r := sleepRec{
		Ev:       ev,
		Ino:      le.Uint64(b[48:]),
		LStart:   int64(le.Uint64(b[56:])),
		LLen:     int64(le.Uint64(b[64:])),
		Dev:      le.Uint32(b[72:]),
		FD:       int32(le.Uint32(b[76:])),
		WakerPID: le.Uint32(b[80:]),
		Cmd:      le.Uint32(b[84:]),
		LType:    int16(le.Uint16(b[88:])),
		LWhence:  int16(le.Uint16(b[90:])),
		Err:      int32(le.Uint32(b[92:])),
		NSPCs:    le.Uint32(b[96:]),
	}
	for i := range r.SPCs {
		r.SPCs[i] = le.Uint64(b[104+8*i:])
	}
	return r, nil
}

// windowHdr mirrors struct ct_window_hdr.
type windowHdr struct {
	Kind   uint8
	Family uint8
	Len    uint16
	PID    uint32
	TID    uint32
	_      uint32
	Stack  uint64
	TS     uint64
	IP     uint64
	SP     uint64
	BP     uint64
}

// windowHdrSize is sizeof(struct ct_window_hdr).
const windowHdrSize = 56

// windowMax is CT_WINDOW_MAX and windowChunk CT_WINDOW_CHUNK.
const (
	windowMax   = 8192
	windowChunk = 1024
)

var errBadRecord = errors.New("malformed ring buffer record")

// decodeEvent decodes a struct ct_event record.
func decodeEvent(b []byte) (rawEvent, error) {
	if len(b) < rawEventSize {
		return rawEvent{}, fmt.Errorf("%w: event of %d bytes", errBadRecord, len(b))
	}
	le := binary.LittleEndian
	return rawEvent{
		Kind:  b[0],
		Op:    b[1],
		Sys:   le.Uint16(b[2:]),
		PID:   le.Uint32(b[4:]),
		TID:   le.Uint32(b[8:]),
		Peer:  le.Uint32(b[12:]),
		Stack: le.Uint64(b[16:]),
		TS:    le.Uint64(b[24:]),
		Dur:   le.Uint64(b[32:]),
		Addr:  le.Uint64(b[40:]),
	}, nil
}

// decodeWindow decodes a struct ct_window record; the returned stack
// bytes alias b.
func decodeWindow(b []byte) (windowHdr, []byte, error) {
	if len(b) < windowHdrSize {
		return windowHdr{}, nil, fmt.Errorf("%w: window of %d bytes", errBadRecord, len(b))
	}
	le := binary.LittleEndian
	h := windowHdr{
		Kind:   b[0],
		Family: b[1],
		Len:    le.Uint16(b[2:]),
		PID:    le.Uint32(b[4:]),
		TID:    le.Uint32(b[8:]),
		Stack:  le.Uint64(b[16:]),
		TS:     le.Uint64(b[24:]),
		IP:     le.Uint64(b[32:]),
		SP:     le.Uint64(b[40:]),
		BP:     le.Uint64(b[48:]),
	}
	if int(h.Len) > windowMax || windowHdrSize+int(h.Len) > len(b) {
		return windowHdr{}, nil, fmt.Errorf("%w: window length %d in a record of %d bytes", errBadRecord, h.Len, len(b))
	}
	return h, b[windowHdrSize : windowHdrSize+int(h.Len)], nil
}
