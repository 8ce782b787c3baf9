//go:build ignore

// The traced syscalls: their numbers and how to read a futex call's
// operation and address from the user registers saved at syscall entry.
// Shared by the futex and io families (which hook the syscalls' exits)
// and by the switch-out probe in sched.bpf.c (which times the calls that
// leave the CPU from their first switch-out).
#ifndef CT_CALLS_BPF_H
#define CT_CALLS_BPF_H

#include "helpers.bpf.h"
#include "futex.h"

// x86_64 syscall numbers.
#define NR_read 0
#define NR_write 1
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_writev 20
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_rename 82
#define NR_readv 19
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_fcntl 72
#define NR_flock 73
#define NR_ftruncate 77
#define NR_futex 202
#define NR_openat 257
#define NR_renameat 264
#define NR_sync_file_range 277
#define NR_fallocate 285
#define NR_preadv 295
#define NR_pwritev 296
#define NR_renameat2 316
#define NR_copy_file_range 326
#define NR_futex_waitv 449
#define NR_futex_wake 454
#define NR_futex_wait 455
#define NR_futex_requeue 456

// futex(2) commands.
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_CMP_REQUEUE_PI 12
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128   // futex(2): the word is private to the process
#define FUTEX2_PRIVATE 128       // futex2 flags: the same
#define FUTEX_CMD_MASK 0x7f      // without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
#define FUTEX_TID_MASK 0x3fffffff

// glibc's pthread_mutex_t on x86_64: __lock (the futex word) at +0, __owner
// (tid of the holder) at +8.
#define CT_GLIBC_OWNER_OFFSET 8
// The value a glibc lock's waiter waits for its word to leave:
// __lll_lock_wait calls futex_wait(word, 2): locked, with waiters.
#define CT_GLIBC_LOCKED_WAITERS 2

#define CT_ENOSYS 38

// ct_syscall_nr returns the number of the syscall the task whose saved
// user registers are ur is inside, -1 when it is in none (or ur is NULL):
// inside a syscall ax still holds -ENOSYS (the entry code stores it there
// until the call returns) and orig_ax the number, which tells a syscall
// from an interrupt or fault frame.
static __always_inline long ct_syscall_nr(struct pt_regs *ur)
{
	if (!ur || (long)BPF_CORE_READ(ur, ax) != -CT_ENOSYS)
		return -1;
	return (long)BPF_CORE_READ(ur, orig_ax);
}

// ct_wait_op maps a futex(2) command to a wait op, 0 when it is not a wait.
static __always_inline __u8 ct_wait_op(__u32 cmd)
{
	switch (cmd) {
	case FUTEX_WAIT: return CT_OP_WAIT;
	case FUTEX_WAIT_BITSET: return CT_OP_WAIT_BITSET;
	case FUTEX_LOCK_PI: return CT_OP_LOCK_PI;
	case FUTEX_LOCK_PI2: return CT_OP_LOCK_PI2;
	case FUTEX_WAIT_REQUEUE_PI: return CT_OP_WAIT_REQUEUE_PI;
	}
	return 0;
}

// ct_wake_op maps a futex(2) command to a wake op, 0 when it is not a wake.
static __always_inline __u8 ct_wake_op(__u32 cmd)
{
	switch (cmd) {
	case FUTEX_WAKE: return CT_OP_WAKE;
	case FUTEX_WAKE_BITSET: return CT_OP_WAKE_BITSET;
	case FUTEX_WAKE_OP: return CT_OP_WAKE_OP;
	case FUTEX_REQUEUE: return CT_OP_REQUEUE;
	case FUTEX_CMP_REQUEUE: return CT_OP_CMP_REQUEUE;
	case FUTEX_CMP_REQUEUE_PI: return CT_OP_CMP_REQUEUE_PI;
	case FUTEX_UNLOCK_PI: return CT_OP_UNLOCK_PI;
	}
	return 0;
}

// ct_futex_call is a futex-class call decoded from its registers.
struct ct_futex_call {
	__u64 addr;
	__u8 op;      // enum ct_futex_op, 0 for none
	__u8 shared;  // no private flag: the word may be shared between processes
};

// ct_decode_futex decodes futex-class syscall nr from the user registers
// regs (the syscall's arguments); op 0 for anything else. The vector
// syscalls (futex_waitv, futex_requeue) name their first entry, read from
// user memory.
static __always_inline struct ct_futex_call ct_decode_futex(struct pt_regs *regs, long nr)
{
	struct ct_futex_call c = {};
	switch (nr) {
	case NR_futex: {
		__u64 arg = BPF_CORE_READ(regs, si);
		__u32 cmd = arg & FUTEX_CMD_MASK;
		c.op = ct_wait_op(cmd);
		if (!c.op)
			c.op = ct_wake_op(cmd);
		c.addr = BPF_CORE_READ(regs, di);
		c.shared = !(arg & FUTEX_PRIVATE_FLAG);
		break;
	}
	case NR_futex_wait:
		// futex_wait(uaddr, val, mask, flags, timeout, clockid)
		c.op = CT_OP_FUTEX_WAIT;
		c.addr = BPF_CORE_READ(regs, di);
		c.shared = !(BPF_CORE_READ(regs, cx) & FUTEX2_PRIVATE);
		break;
	case NR_futex_wake:
		// futex_wake(uaddr, mask, nr, flags)
		c.op = CT_OP_FUTEX_WAKE;
		c.addr = BPF_CORE_READ(regs, di);
		c.shared = !(BPF_CORE_READ(regs, cx) & FUTEX2_PRIVATE);
		break;
	case NR_futex_waitv:
	case NR_futex_requeue: {
		// struct futex_waitv { u64 val; u64 uaddr; u32 flags; u32 reserved; }
		// futex_waitv(waiters, ...) and futex_requeue(waiters[2], ...)
		// name their first entry.
		__u64 v[3] = {};
		bpf_probe_read_user(v, sizeof(v), (void *)BPF_CORE_READ(regs, di));
		c.op = nr == NR_futex_waitv ? CT_OP_FUTEX_WAITV : CT_OP_FUTEX_REQUEUE;
		c.addr = v[1];
		c.shared = !((__u32)v[2] & FUTEX2_PRIVATE);
		break;
	}
	}
	return c;
}

// ct_is_futex reports whether nr is a futex-class syscall.
static __always_inline bool ct_is_futex(long nr)
{
	return nr == NR_futex || nr == NR_futex_wait || nr == NR_futex_waitv ||
	       nr == NR_futex_wake || nr == NR_futex_requeue;
}

// ct_is_io reports whether nr is one of the I/O syscalls the io family
// traces.
static __always_inline bool ct_is_io(long nr)
{
	switch (nr) {
	case NR_read:
	case NR_write:
	case NR_pread64:
	case NR_pwrite64:
	case NR_writev:
	case NR_fsync:
	case NR_fdatasync:
	case NR_rename:
	case NR_openat:
	case NR_renameat:
	case NR_sync_file_range:
	case NR_renameat2:
		return true;
	}
	return false;
}

// fcntl(2) record lock commands.
#define CT_F_SETLK 6
#define CT_F_SETLKW 7
#define CT_F_OFD_SETLK 37
#define CT_F_OFD_SETLKW 38

// ct_fd_call reports whether syscall nr takes a file descriptor as its
// first argument and can sleep on the file: the calls whose sleeps are
// named by their file (a lock, a pipe, an inode's lock, a device).
static __always_inline bool ct_fd_call(long nr)
{
	switch (nr) {
	case NR_read:
	case NR_write:
	case NR_pread64:
	case NR_pwrite64:
	case NR_readv:
	case NR_writev:
	case NR_preadv:
	case NR_pwritev:
	case NR_sendto:
	case NR_recvfrom:
	case NR_sendmsg:
	case NR_recvmsg:
	case NR_fcntl:
	case NR_flock:
	case NR_fsync:
	case NR_fdatasync:
	case NR_ftruncate:
	case NR_fallocate:
	case NR_sync_file_range:
	case NR_copy_file_range:
		return true;
	}
	return false;
}

// ct_fcntl_lock_cmd reports whether an fcntl command sets a record lock
// (its third argument a struct flock).
static __always_inline bool ct_fcntl_lock_cmd(__u32 cmd)
{
	return cmd == CT_F_SETLK || cmd == CT_F_SETLKW || cmd == CT_F_OFD_SETLK || cmd == CT_F_OFD_SETLKW;
}

// ct_user_flock is the x86_64 struct flock (fcntl(2)).
struct ct_user_flock {
	__s16 l_type;
	__s16 l_whence;
	__s64 l_start;
	__s64 l_len;
	__s32 l_pid;
};

// ct_call_resumed ends thread t's call in progress at its switch-in: it
// copies the call's entry to *s, marks the entry done, sets *now and
// returns true, when the entry is a futex wait (futex) or an I/O call
// (!futex) that t is still inside. An entry of the other kind is left to
// its own family's probe. An entry t is no longer inside (a call seeded at
// attach that returned before the entry was written) is dropped and
// counted. The clock is read only once a call is found: these probes run
// at every switch-in of the target's threads, most of them with no call.
static __always_inline bool ct_call_resumed(struct task_struct *t, bool futex, struct ct_call_start *s,
					    __u64 *now)
{
	__u64 key = ct_task_key(t);
	struct ct_call_start *sp = bpf_map_lookup_elem(&ct_call_start, &key);
	if (!sp || !sp->ts || (sp->op != 0) != futex)
		return false;
	*s = *sp;
	ct_start_done(&sp->ts);
	// The marks belong to the sleep that ends here. The next sleep's wake
	// cannot come before this switch-in (its thread has to run to make
	// the call), so clearing them now leaves 0 to mean "no wake seen".
	sp->woken_ts = 0;
	sp->timeout = 0;
	*now = bpf_ktime_get_ns();
	struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(t);
	if (ct_syscall_nr(ur) != s->nr || BPF_CORE_READ(ur, sp) != s->sp || s->ts > *now) {
		ct_count(CT_INFO_CALL_STALE);
		return false;
	}
	return true;
}

#endif
