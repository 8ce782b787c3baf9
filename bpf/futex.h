//go:build ignore

// Types of the futex probe family shared with the Go collector.
#ifndef CT_FUTEX_H
#define CT_FUTEX_H

// Futex operations as recorded (not the kernel's FUTEX_* numbers, which
// overlap between futex(2) and the futex2 syscalls). Waits first.
enum ct_futex_op {
	CT_OP_WAIT = 1,         // futex(FUTEX_WAIT)
	CT_OP_WAIT_BITSET,      // futex(FUTEX_WAIT_BITSET)
	CT_OP_LOCK_PI,          // futex(FUTEX_LOCK_PI)
	CT_OP_LOCK_PI2,         // futex(FUTEX_LOCK_PI2)
	CT_OP_WAIT_REQUEUE_PI,  // futex(FUTEX_WAIT_REQUEUE_PI)
	CT_OP_FUTEX_WAIT,       // futex_wait(2)
	CT_OP_FUTEX_WAITV,      // futex_waitv(2), first address of the vector
	CT_OP_LAST_WAIT = CT_OP_FUTEX_WAITV,
	CT_OP_WAKE,             // futex(FUTEX_WAKE)
	CT_OP_WAKE_BITSET,      // futex(FUTEX_WAKE_BITSET)
	CT_OP_WAKE_OP,          // futex(FUTEX_WAKE_OP)
	CT_OP_REQUEUE,          // futex(FUTEX_REQUEUE)
	CT_OP_CMP_REQUEUE,      // futex(FUTEX_CMP_REQUEUE)
	CT_OP_CMP_REQUEUE_PI,   // futex(FUTEX_CMP_REQUEUE_PI)
	CT_OP_UNLOCK_PI,        // futex(FUTEX_UNLOCK_PI)
	CT_OP_FUTEX_WAKE,       // futex_wake(2)
	CT_OP_FUTEX_REQUEUE,    // futex_requeue(2)
};

// Log2 histogram slots of a lock: slot i counts waits with
// 2^i <= ns < 2^(i+1); 40 slots reach 18 minutes.
#define CT_HIST_SLOTS 40

// ct_wait_key: one wait aggregate. stack is CT_STACK_NONE for waits
// shorter than the stack threshold; owner is 0 for waits that did not
// block (it is read when the wait leaves the CPU).
struct ct_wait_key {
	__u64 addr;
	__u64 stack;
	__u32 pid;
	__u32 tid;
	__u32 owner;
	__u8 op;
	__u8 shared;  // 1: a process-shared futex (no FUTEX_PRIVATE_FLAG)
	__u8 _pad[2];
};

// ct_lock_key: one futex word of one process.
struct ct_lock_key {
	__u64 addr;
	__u32 pid;
	__u8 shared;
	__u8 _pad[3];
};

// ct_lock_val: every wait on one futex word. Wakes are not counted here:
// the collector sums them from the wake aggregates, which keeps the wake
// path, the hot one, to one map update.
struct ct_lock_val {
	__u64 waits;
	__u64 blocked;   // waits that left the CPU
	__u64 timeouts;  // waits woken by no futex wake (a timer, a signal)
	__u64 total_ns;
	__u64 max_ns;
	__u64 runq_ns;   // of total_ns, the time the woken waiters spent runnable, waiting for a CPU
	__u64 hist[CT_HIST_SLOTS];
};

// ct_wake_key: one wake aggregate. stack is CT_STACK_NONE for wakes that
// woke nobody.
struct ct_wake_key {
	__u64 addr;
	__u64 stack;
	__u32 pid;
	__u32 tid;
	__u8 shared;
	__u8 _pad[7];
};

struct ct_wake_val {
	__u64 wakes;
	__u64 woken;
};

#endif
