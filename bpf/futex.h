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

// ct_futex_start: a wait in progress, from sys_enter to sys_exit (ts 0
// once it ended). ip, sp and bp are the user registers at sys_enter: the
// collector unwinds a copy of the stack of a wait still in progress from
// them (stacks are otherwise taken at sys_exit).
struct ct_futex_start {
	__u64 ts;
	__u64 addr;
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 owner;  // tid read beside the futex word at wait time, 0 if none
	__u8 op;      // enum ct_futex_op
	__u8 _pad[3];
};

// ct_wait_key: one wait aggregate. stack_id is CT_STACK_NONE for waits
// shorter than the stack threshold.
struct ct_wait_key {
	__u64 addr;
	__u32 tid;
	__s32 stack_id;
	__u32 owner;
	__u8 op;
	__u8 _pad[3];
};

// ct_lock_val: every wait and wake on one futex address.
struct ct_lock_val {
	__u64 waits;
	__u64 blocked;   // waits that did not return EAGAIN
	__u64 timeouts;  // waits that returned ETIMEDOUT
	__u64 total_ns;
	__u64 max_ns;
	__u64 wakes;
	__u64 woken;
	__u64 hist[CT_HIST_SLOTS];
};

// ct_wake_key: one wake aggregate. stack_id is CT_STACK_NONE for wakes that
// woke nobody.
struct ct_wake_key {
	__u64 addr;
	__u32 tid;
	__s32 stack_id;
};

struct ct_wake_val {
	__u64 wakes;
	__u64 woken;
};

#endif
