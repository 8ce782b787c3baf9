//go:build ignore

// Types and constants shared by every probe family and by the Go collector
// (collector/records.go mirrors them; a test checks the layouts against the
// BTF of the compiled objects).
#ifndef CT_COMMON_H
#define CT_COMMON_H

// Record kinds in the shared ring buffer (ct_events). Every record starts
// with a __u8 kind.
enum ct_kind {
	CT_K_WAIT = 1,    // struct ct_event: futex wait at least the stack threshold
	CT_K_WAKE = 2,    // struct ct_event: futex wake that woke someone
	CT_K_IO = 3,      // struct ct_event: I/O syscall at least the I/O threshold
	CT_K_RUNQ = 4,    // struct ct_event: runnable but not running
	CT_K_DSLEEP = 5,  // struct ct_event: uninterruptible sleep
	CT_K_WAKEUP = 6,  // struct ct_event: sched_waking of a target thread
	CT_K_WINDOW = 7,  // struct ct_window: user registers and stack window
	CT_K_TASK = 8,    // struct ct_event: a target thread or process came or went (op: enum ct_task_op)
	CT_K_SLEEP = 9,   // struct ct_sleep: a sleep in the kernel (D, or in a non-futex syscall) at least the stack threshold
	CT_K_TRYFAIL = 10, // struct ct_sleep: a non-blocking lock attempt that failed (fcntl F_SETLK, flock LOCK_NB)
};

// What a CT_K_TASK record reports (ct_event.op). These records are never
// rate-limited: the collector folds the aggregates of exited threads and
// notes when a process joined or left the target set.
enum ct_task_op {
	CT_TASK_THREAD_EXIT = 1,  // thread tid of process pid exited
	CT_TASK_PROC_EXIT = 2,    // the last thread of process pid exited
	CT_TASK_PROC_JOIN = 3,    // process pid joined the target set (fork or exec, --comm/--cgroup)
	CT_TASK_PROC_LEAVE = 4,   // process pid left it (exec into another name or cgroup)
};

// Counter indices of ct_counters (a per-CPU array). The Go side reads the
// names from this enum in the object's BTF: CT_EV_* count events seen,
// CT_DROP_* count lost data, CT_SAMPLED_* count records the rate limits
// left out by design (the in-kernel aggregates still hold those events),
// CT_INFO_* are none of these.
enum ct_counter {
	CT_EV_FUTEX_WAIT = 0,
	CT_EV_FUTEX_WAKE,
	CT_EV_SWITCH,
	CT_EV_WAKEUP,
	CT_EV_ONCPU,
	CT_EV_IO,
	CT_DROP_RINGBUF_EVENT,     // event record lost: ring buffer full
	CT_DROP_RINGBUF_WINDOW,    // stack window lost: ring buffer full
	CT_DROP_RINGBUF_TASK,      // thread or process record lost: ring buffer full
	CT_SAMPLED_EVENT,          // event record not sent: token bucket empty
	CT_SAMPLED_WINDOW,         // stack window not sent: token bucket empty
	CT_DROP_STACK_USER,        // user stack could not be read at all
	CT_DROP_STACK_KERNEL,      // kernel stack could not be read
	CT_DROP_STACK_MAP_FULL,    // ct_stacks full: the stack's frames were not stored
	CT_DROP_MAP_FULL_FUTEX_WAIT,
	CT_DROP_MAP_FULL_FUTEX_WAKE,
	CT_DROP_MAP_FULL_FUTEX_LOCK,
	CT_DROP_MAP_FULL_OFFCPU,
	CT_DROP_MAP_FULL_WAKES,
	CT_DROP_MAP_FULL_ONCPU,
	CT_DROP_MAP_FULL_IO,
	CT_DROP_START_UPDATE,      // per-thread call start could not be stored
	CT_INFO_WINDOW_SKIPPED,    // window not taken: its stack is already named
	CT_INFO_WINDOW_PARTIAL,    // window shorter than asked (unmapped page)
	CT_INFO_NO_START,          // switch-in without a switch-out entry
	CT_INFO_OFFCPU_SPILLED,    // offcpu map full: the entry goes to the spill map, stackless
	CT_INFO_CALL_STALE,        // call start found at switch-in that is no longer the thread's call (dropped)
	CT_EV_GOSYNC,              // Go lock slow path entered (gosync uprobes)
	CT_DROP_MAP_FULL_GOSYNC,   // ct_gosync full: a Go lock wait was not counted
	CT_INFO_GOSYNC_NO_START,   // Go lock slow path left without its entry (entered before attach)
	CT_DROP_WAKE_UNSEEN,       // futex wait ended with no wake seen and no run-queue record: neither timeout nor wake, no run-queue time
	CT_INFO_WAKE_FIRST,        // futex sleep woken before its switch-out wrote an entry: the wake wrote it
	CT_INFO_WAKE_SCHED_FUTEX,  // futex wait ended with no wake seen: a timeout, its run-queue time the scheduler's (ct_queued_ns)
	CT_INFO_WAKE_SCHED_OFFCPU, // sleep ended with no wake seen: its run-queue time the scheduler's (ct_queued_ns)
	CT_DROP_SWITCH_IN_UNSEEN,  // switch-out of a thread whose last switch-in was not seen: that time off CPU is lost
	CT_EV_KSLEEP,              // sleep in the kernel at least the stack threshold: its kernel stack taken (CT_K_SLEEP)
	CT_EV_LOCK_TRY_FAIL,       // non-blocking fcntl/flock lock attempt that failed with EAGAIN or EACCES
	CT_NR_COUNTERS,
};

// Token buckets of ct_buckets.
enum ct_bucket_id {
	CT_BUCKET_EVENT = 0,
	CT_BUCKET_WINDOW = 1,
	CT_NR_BUCKETS,
};

// Stack values that are not hashes of ct_stacks. Every stack hash is at
// least CT_STACK_FIRST (a hash below it is moved up), so the values below
// never name a stack.
#define CT_STACK_NONE 0     // not taken (event below its threshold)
#define CT_STACK_LOST 1     // could not be read; counted in CT_DROP_STACK_*
#define CT_STACK_SPILLED 2  // aggregate map full: kept without the stack
#define CT_STACK_FIRST 16

// Maximum frames per stack in ct_stacks. 64 keeps a stack at 520 bytes;
// deeper stacks keep their 64 innermost frames, which hold the lock call
// site.
#define CT_STACK_DEPTH 64

// Frame records a user stack walk may cross: frame pointers must rise
// through the thread's stack, at most this far above the stack pointer.
// 8 MiB is the default thread stack (ulimit -s); a frame pointer beyond it
// is data, not a frame.
#define CT_STACK_SPAN (8 << 20)

// Stack windows: up to CT_WINDOW_MAX bytes from the user sp, read in
// CT_WINDOW_CHUNK-byte pieces aligned to CT_WINDOW_CHUNK so no piece spans a
// page boundary: a window that runs into an unmapped page keeps everything
// before it. 8 KiB covers the frames between a lock call and the thread's
// entry point in ordinary C, C++ and Rust code.
#define CT_WINDOW_MAX 8192
#define CT_WINDOW_CHUNK 1024

// Families, used for ct_window.family and to pick a per-CPU scratch slot
// (programs of different families can nest on one CPU: a wakeup from an
// interrupt can run the sched programs inside a syscall probe).
enum ct_family {
	CT_FAM_FUTEX = 0,
	CT_FAM_IO = 1,
	CT_FAM_ONCPU = 2,
	CT_FAM_SCHED = 3,
	CT_FAM_GOSYNC = 4,
	CT_FAM_TRY = 5,     // the fexit probes of fcntl and flock (process context, can nest under nothing of theirs)
	CT_NR_FAMILIES,
};

// Target selection modes (target_mode): which processes the kernel adds to
// the target set by itself, between the collector's own scans.
enum ct_target_mode {
	CT_TARGET_PIDS = 0,    // the processes named, nothing else
	CT_TARGET_COMM = 1,    // processes named target_comm, and their forked children
	CT_TARGET_CGROUP = 2,  // processes of the cgroup in ct_cgroup, and their forked children
};

// ct_target_arg is the argument of the ct_target_update program: add
// process pid to the target set (on = 1) or remove it (on = 0).
struct ct_target_arg {
	__u32 pid;
	__u32 on;
};

// ct_agg: count, total and maximum duration of intervals (futex waits,
// I/O calls).
struct ct_agg {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
};

// ct_stack is the value of ct_stacks: the frames of one stack of process
// pid, innermost first.
struct ct_stack {
	__u32 pid;
	__u32 n;
	__u64 pcs[CT_STACK_DEPTH];
};

// ct_event is one entry of the event log. Times are bpf_ktime_get_ns
// (CLOCK_MONOTONIC); the collector converts them to time since the start of
// the recording.
struct ct_event {
	__u8 kind;      // enum ct_kind
	__u8 op;        // futex op (enum ct_futex_op), wake context (enum ct_wake_ctx), enum ct_task_op
	__u16 sys;      // syscall number (CT_K_IO)
	__u32 pid;      // process of tid
	__u32 tid;      // thread (the waker for CT_K_WAKEUP, 0 when not a task)
	__u32 peer;     // owner (WAIT), woken count (WAKE), wakee (WAKEUP)
	__u64 stack;    // user stack hash in ct_stacks or CT_STACK_*
	__u64 ts;       // start of the interval, or the instant
	__u64 dur;      // length of the interval in ns
	__u64 addr;     // futex address (WAIT, WAKE), the wakee's process (WAKEUP)
};

// ct_sleep is one sleep of a target thread in the kernel (CT_K_SLEEP):
// uninterruptible, or inside a system call other than a futex, at least
// the stack threshold long; or one failed non-blocking lock attempt
// (CT_K_TRYFAIL, dur 0, no kernel stack). It starts with a struct ct_event
// so the collector's event log reads its common part: op is enum
// ct_state, sys the syscall (CT_SYS_NONE outside one), peer the waker's
// tid (0: not woken by a task, or the wake not seen), stack the user
// stack at the switch-out, addr the kernel stack's hash (ct_stacks) or
// CT_STACK_*. The rest names the object of the call: the file behind
// argument fd (its device and inode, read through the thread's file
// table) and, for record locks, the range the call asked for.
struct ct_sleep {
	struct ct_event e;
	__u64 ino;        // inode of fd's file, 0 when none
	__s64 l_start;    // struct flock of fcntl lock commands
	__s64 l_len;
	__u32 dev;        // kernel dev_t of fd's file: major << 20 | minor
	__s32 fd;         // first argument of the call, -1 when it takes no fd
	__u32 waker_pid;  // process of peer
	__u32 cmd;        // second argument: fcntl command, flock operation
	__s16 l_type;     // F_RDLCK, F_WRLCK, F_UNLCK; -1 when no struct flock was read
	__s16 l_whence;
	__s32 err;        // CT_K_TRYFAIL: the error returned (positive errno)
	__u32 nspcs;      // frames in spcs
	__u32 _pad;
	// An uninterruptible sleep's innermost kernel frames at its
	// switch-out, the tracepoint's and the scheduler's own first: they
	// hold the functions that waited (rwsem_down_read_slowpath,
	// mutex_lock, ...), which the kernel's walk of a sleeping task (the
	// stack in e.addr) skips as scheduler code.
	__u64 spcs[12];
};

// CT_SYS_NONE is ct_event.sys of a sleep outside any system call (a page
// fault).
#define CT_SYS_NONE 0xffff

// ct_window_hdr heads a CT_K_WINDOW record; len bytes of stack copied from
// address sp follow it.
struct ct_window_hdr {
	__u8 kind;      // CT_K_WINDOW
	__u8 family;    // enum ct_family
	__u16 len;      // bytes of stack that follow
	__u32 pid;
	__u32 tid;
	__u32 _pad;
	__u64 stack;    // stack hash this window names
	__u64 ts;       // same ts as the event the window belongs to
	__u64 ip;
	__u64 sp;
	__u64 bp;
};

// ct_window is a whole CT_K_WINDOW record as filled in the kernel; only
// the header and h.len bytes of data are sent. data has one chunk of slack
// so that the verifier can bound every chunk's offset with a mask.
struct ct_window {
	struct ct_window_hdr h;
	__u8 data[CT_WINDOW_MAX + CT_WINDOW_CHUNK];
};

// ct_call_start: a traced syscall (futex wait or I/O call) that left the
// CPU asleep, from the thread's switch-out inside it to its next switch-in
// (ts 0 once it ended). ip, sp and bp are the user registers of the call,
// stack the user stack walked from them at the switch-out (the thread's
// memory can only be read while it runs): the collector unwinds a copy of
// the stack of a call still in progress from the registers.
struct ct_call_start {
	__u64 ts;
	__u64 addr;   // futex address (futex waits)
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 nr;     // syscall number
	__u32 owner;  // tid read beside the futex word when the wait blocked, 0 if none
	__u8 op;      // enum ct_futex_op (futex waits), 0 for I/O
	__u8 shared;  // 1: a process-shared futex (no FUTEX_PRIVATE_FLAG)
	__u8 timeout; // 1: woken by no futex wake (a timer, a signal)
	__u8 _pad[5];
	__u64 stack;  // user stack hash (ct_stacks) or CT_STACK_*
	__u64 woken_ts; // when the sleep's wake was seen (sched_waking), 0 if not (yet)
};

#endif
