//go:build ignore

// futex probe family (included by syscalls.bpf.c): every futex wait of the
// target, aggregated per lock and per (thread, lock, user stack, owner),
// and every wake per (thread, lock, waker stack). Stacks are taken at
// syscall exit and only for waits of at least stack_threshold_ns and for
// wakes that woke a thread.
#ifndef CT_FUTEX_BPF_H
#define CT_FUTEX_BPF_H

#include "helpers.bpf.h"
#include "futex.h"

// x86_64 syscall numbers.
#define NR_futex 202
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
#define FUTEX_CMD_MASK 0x7f  // without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
#define FUTEX_TID_MASK 0x3fffffff

#define CT_EAGAIN 11
#define CT_ETIMEDOUT 110

// glibc's pthread_mutex_t on x86_64: __lock (the futex word) at +0, __owner
// (tid of the holder) at +8.
#define CT_GLIBC_OWNER_OFFSET 8

// Waits at least this long carry a stack and an event; set by the collector.
const volatile __u64 stack_threshold_ns = 10000;

// ct_futex_start: key pid_tgid (one entry per thread), value struct
// ct_futex_start: the thread's wait in progress from sys_enter to sys_exit,
// or ts 0 once it ended. Entries are reused in place rather than deleted
// at every exit (an LRU update allocates a node, a delete frees one: both
// cost more than the rest of the probe); LRU so that entries of threads
// gone do not pile up. Readers: ct_futex_exit, and the collector, which
// reads the waits still in progress (ts != 0) when it takes a snapshot
// and seeds the waits already in progress when it attaches (from
// /proc/PID/task/TID/syscall, with ts the start of the recording). A
// reader may see an entry being rewritten; ct_start_put writes ts last.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ct_futex_start);
} ct_futex_start SEC(".maps");

// ct_futex_waits: key struct ct_wait_key, value struct ct_agg. Reader: the
// collector, cumulatively (entries are never deleted; a full map is counted
// in CT_DROP_MAP_FULL_FUTEX_WAIT). count and total_ns are atomic; a reader
// may see one without the other for an update in flight.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct ct_wait_key);
	__type(value, struct ct_agg);
} ct_futex_waits SEC(".maps");

// ct_futex_locks: key futex address, value struct ct_lock_val over every
// wait and wake on it. Reader: the collector, cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct ct_lock_val);
} ct_futex_locks SEC(".maps");

// ct_futex_wakes: key struct ct_wake_key, value struct ct_wake_val. Reader:
// the collector, cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ct_wake_key);
	__type(value, struct ct_wake_val);
} ct_futex_wakes SEC(".maps");

// ct_ucache_wait and ct_ucache_wake: the user-stack caches of long waits
// and of wakes that woke someone (see CT_UCACHE in helpers.bpf.h).
CT_UCACHE(ct_ucache_wait);
CT_UCACHE(ct_ucache_wake);

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

// ct_decode returns the op and futex address of a futex-class syscall, op 0
// for anything else.
static __always_inline __u8 ct_decode(struct pt_regs *regs, long nr, __u64 *addr)
{
	switch (nr) {
	case NR_futex: {
		__u32 cmd = regs->si & FUTEX_CMD_MASK;
		__u8 op = ct_wait_op(cmd);
		if (!op)
			op = ct_wake_op(cmd);
		*addr = regs->di;
		return op;
	}
	case NR_futex_wait:
		*addr = regs->di;
		return CT_OP_FUTEX_WAIT;
	case NR_futex_wake:
		*addr = regs->di;
		return CT_OP_FUTEX_WAKE;
	case NR_futex_requeue: {
		// futex_requeue(struct futex_waitv waiters[2], ...): uaddr of
		// the first entry at +8.
		__u64 uaddr = 0;
		bpf_probe_read_user(&uaddr, sizeof(uaddr), (void *)(regs->di + 8));
		*addr = uaddr;
		return CT_OP_FUTEX_REQUEUE;
	}
	case NR_futex_waitv: {
		__u64 uaddr = 0;
		bpf_probe_read_user(&uaddr, sizeof(uaddr), (void *)(regs->di + 8));
		*addr = uaddr;
		return CT_OP_FUTEX_WAITV;
	}
	}
	return 0;
}

static __always_inline void ct_wait_exit(void *ctx, struct pt_regs *regs, __u64 pid_tgid, long ret)
{
	struct ct_futex_start *sp = bpf_map_lookup_elem(&ct_futex_start, &pid_tgid);
	if (!sp || !sp->ts) {
		ct_count(CT_INFO_NO_START);
		return;
	}
	struct ct_futex_start s = *sp;
	ct_start_done(&sp->ts);
	ct_count(CT_EV_FUTEX_WAIT);

	__u64 now = bpf_ktime_get_ns();
	__u64 dur = now - s.ts;
	__u32 tid = (__u32)pid_tgid;

	struct ct_lock_val *lv = CT_LOOKUP_OR_INIT(&ct_futex_locks, &s.addr, struct ct_lock_val,
						   CT_DROP_MAP_FULL_FUTEX_LOCK);
	if (lv) {
		__sync_fetch_and_add(&lv->waits, 1);
		if (ret != -CT_EAGAIN)
			__sync_fetch_and_add(&lv->blocked, 1);
		if (ret == -CT_ETIMEDOUT)
			__sync_fetch_and_add(&lv->timeouts, 1);
		__sync_fetch_and_add(&lv->total_ns, dur);
		ct_max(&lv->max_ns, dur);
		__u32 slot = ct_log2(dur);
		if (slot >= CT_HIST_SLOTS)
			slot = CT_HIST_SLOTS - 1;
		__sync_fetch_and_add(&lv->hist[slot], 1);
	}

	struct ct_wait_key k = {};
	k.addr = s.addr;
	k.tid = tid;
	k.owner = s.owner;
	k.op = s.op;
	k.stack_id = CT_STACK_NONE;
	bool long_wait = dur >= stack_threshold_ns;
	if (long_wait)
		k.stack_id = ct_regs_stack(ctx, &ct_ucache_wait, regs);

	struct ct_agg *v = CT_LOOKUP_OR_INIT(&ct_futex_waits, &k, struct ct_agg,
					     CT_DROP_MAP_FULL_FUTEX_WAIT);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, dur);
		ct_max(&v->max_ns, dur);
	}
	if (!long_wait)
		return;

	struct ct_event e = {};
	e.kind = CT_K_WAIT;
	e.op = s.op;
	e.tid = tid;
	e.peer = s.owner;
	e.stack_id = k.stack_id;
	e.ts = s.ts;
	e.dur = dur;
	e.addr = s.addr;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_FUTEX, tid, k.stack_id, s.ts, now, regs->ip,
		       regs->sp, regs->bp);
}

static __always_inline void ct_wake_exit(void *ctx, struct pt_regs *regs, __u64 pid_tgid,
					 __u8 op, __u64 addr, long ret)
{
	ct_count(CT_EV_FUTEX_WAKE);
	__u64 woken = 0;
	if (op == CT_OP_UNLOCK_PI) {
		// The kernel is only entered to unlock a PI futex with waiters
		// (FUTEX_WAITERS set), and success hands it to one of them.
		woken = ret == 0;
	} else if (ret > 0) {
		woken = ret;
	}
	__u32 tid = (__u32)pid_tgid;

	struct ct_lock_val *lv = CT_LOOKUP_OR_INIT(&ct_futex_locks, &addr, struct ct_lock_val,
						   CT_DROP_MAP_FULL_FUTEX_LOCK);
	if (lv) {
		__sync_fetch_and_add(&lv->wakes, 1);
		if (woken)
			__sync_fetch_and_add(&lv->woken, woken);
	}

	struct ct_wake_key k = {};
	k.addr = addr;
	k.tid = tid;
	k.stack_id = CT_STACK_NONE;
	if (woken)
		k.stack_id = ct_regs_stack(ctx, &ct_ucache_wake, regs);
	struct ct_wake_val *v = CT_LOOKUP_OR_INIT(&ct_futex_wakes, &k, struct ct_wake_val,
						  CT_DROP_MAP_FULL_FUTEX_WAKE);
	if (v) {
		__sync_fetch_and_add(&v->wakes, 1);
		if (woken)
			__sync_fetch_and_add(&v->woken, woken);
	}
	if (!woken)
		return;

	__u64 now = bpf_ktime_get_ns();
	struct ct_event e = {};
	e.kind = CT_K_WAKE;
	e.op = op;
	e.tid = tid;
	e.peer = woken;
	e.stack_id = k.stack_id;
	e.ts = now;
	e.addr = addr;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_FUTEX, tid, k.stack_id, now, now, regs->ip,
		       regs->sp, regs->bp);
}

// ct_futex_enter starts timing a wait: called at every target syscall
// entry.
static __always_inline void ct_futex_enter(struct pt_regs *regs, long nr, __u64 pid_tgid)
{
	if (nr != NR_futex && nr != NR_futex_wait && nr != NR_futex_waitv)
		return;
	__u64 addr = 0;
	__u8 op = ct_decode(regs, nr, &addr);
	if (op == 0 || op > CT_OP_LAST_WAIT)
		return;

	struct ct_futex_start s = {};
	s.op = op;
	s.addr = addr;
	__u32 owner = 0;
	if (op == CT_OP_LOCK_PI || op == CT_OP_LOCK_PI2) {
		// PI futexes hold the owner's tid in the word itself.
		if (!bpf_probe_read_user(&owner, sizeof(owner), (void *)addr))
			owner &= FUTEX_TID_MASK;
	} else {
		if (bpf_probe_read_user(&owner, sizeof(owner), (void *)(addr + CT_GLIBC_OWNER_OFFSET)))
			owner = 0;
	}
	s.owner = owner;
	s.ip = regs->ip;
	s.sp = regs->sp;
	s.bp = regs->bp;
	s.ts = bpf_ktime_get_ns();
	struct ct_futex_start *sp = bpf_map_lookup_elem(&ct_futex_start, &pid_tgid);
	if (sp) {
		ct_start_done(&sp->ts);
		sp->addr = s.addr;
		sp->ip = s.ip;
		sp->sp = s.sp;
		sp->bp = s.bp;
		sp->owner = s.owner;
		sp->op = s.op;
		ct_start_set(&sp->ts, s.ts);
	} else if (bpf_map_update_elem(&ct_futex_start, &pid_tgid, &s, BPF_NOEXIST)) {
		ct_count(CT_DROP_START_UPDATE);
	}
}

// ct_futex_exit accounts a finished wait or wake: called at every target
// syscall exit.
static __always_inline void ct_futex_exit(void *ctx, struct pt_regs *regs, long nr, __u64 pid_tgid,
					  long ret)
{
	if (nr != NR_futex && nr != NR_futex_wait && nr != NR_futex_waitv &&
	    nr != NR_futex_wake && nr != NR_futex_requeue)
		return;
	// futex_waitv only waits: the wait's address was saved at entry, so
	// skip ct_decode's read of the user-memory argument.
	if (nr == NR_futex_waitv) {
		ct_wait_exit(ctx, regs, pid_tgid, ret);
		return;
	}
	// The argument registers saved at entry are intact at exit (the
	// result goes to ax), so wakes need no entry probe.
	__u64 addr = 0;
	__u8 op = ct_decode(regs, nr, &addr);
	if (op == 0)
		return;
	if (op <= CT_OP_LAST_WAIT)
		ct_wait_exit(ctx, regs, pid_tgid, ret);
	else
		ct_wake_exit(ctx, regs, pid_tgid, op, addr, ret);
}

#endif
