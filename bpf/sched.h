//go:build ignore

// Types of the scheduler probe family shared with the Go collector.
#ifndef CT_SCHED_H
#define CT_SCHED_H

// State a thread left the CPU in (from sched_switch's prev_state).
enum ct_state {
	CT_ST_RUNNABLE = 0,         // preempted, or prev_state & 0x7f == 0
	CT_ST_SLEEPING = 1,         // TASK_INTERRUPTIBLE
	CT_ST_UNINTERRUPTIBLE = 2,  // TASK_UNINTERRUPTIBLE (D)
	CT_ST_OTHER = 3,            // stopped, traced, parked
};

// Context a wakeup came from.
enum ct_wake_ctx {
	CT_CTX_TASK = 0,
	CT_CTX_HARDIRQ = 1,
	CT_CTX_SOFTIRQ = 2,
	CT_CTX_IDLE = 3,
};

// ct_sched_start: a thread off CPU, from its switch-out to its switch-in.
struct ct_sched_start {
	__u64 off_ts;       // switch-out
	__u64 runnable_ts;  // became runnable (switch-out if preempted, else wakeup); 0 until then
	__u64 stack;        // user stack hash at switch-out
	__u8 state;         // enum ct_state
	__u8 _pad[3];
	__s32 nr;           // syscall slept in, -1 outside one (set for sleeps only)
	__u32 waker;        // tid of the task whose sched_waking ended the sleep, 0 if none seen
	__u32 waker_pid;
	// The call's object, read at the switch-out while the thread's
	// memory is the current one: fd and cmd are its first two arguments,
	// lk the struct flock of an fcntl lock command (l_type -1: none).
	__s32 fd;
	__u32 cmd;
	__s64 l_start;
	__s64 l_len;
	__s16 l_type;
	__s16 l_whence;
	__u32 _pad2;
};

// CT_SCHED_PCS bounds the frames walked at an uninterruptible sleep's
// switch-out: enough to pass the tracepoint's own frames and the
// scheduler's and reach the function that waited (rwsem_down_write_slowpath,
// down_write, mutex_lock, io_schedule, ... around 8 deep), which the walk
// of a sleeping task at its switch-in leaves out.
#define CT_SCHED_PCS 12

// ct_sched_pcs: the innermost kernel frames of a target thread at its
// uninterruptible sleep's switch-out, the scheduler's functions included.
struct ct_sched_pcs {
	__u64 pcs[CT_SCHED_PCS];
	__u32 n;
	__u32 _pad;
};

struct ct_offcpu_key {
	__u64 stack;
	__u32 pid;
	__u32 tid;
	__u8 state;
	__u8 _pad[7];
};

struct ct_offcpu_val {
	__u64 count;
	__u64 total_ns;  // switch-out to switch-in
	__u64 runq_ns;   // part of total_ns spent runnable, waiting for a CPU
};

struct ct_wakes_key {
	__u64 stack;      // waker's user stack when the waker is a target thread
	__u32 waker_pid;  // process of the waker, 0 when not a task
	__u32 waker;      // tid, 0 when the wakeup came from interrupt or idle context
	__u32 wakee_pid;
	__u32 wakee;
	__u8 ctx;         // enum ct_wake_ctx
	__u8 _pad[7];
};

#endif
