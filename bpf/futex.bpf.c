//go:build ignore

// futex probe family: every futex wait of the target, aggregated per lock
// and per (thread, lock, user stack, owner), and every wake per (thread,
// lock, waker stack). The programs hook only the exits of the futex
// syscalls (syscalls:sys_exit_futex and the futex2 calls): a wait's start
// is its first switch-out, recorded by sched.bpf.c. Hooking the syscall
// entries as well would make every syscall of every process on the machine
// pass through one more tracing hook. Stacks are taken only for waits of at
// least stack_threshold_ns and for wakes that woke a thread.
#include "helpers.bpf.h"
#include "calls.bpf.h"

#define CT_EAGAIN 11
#define CT_ETIMEDOUT 110

// Waits at least this long carry a stack and an event; set by the collector.
const volatile __u64 stack_threshold_ns = 10000;

// ct_futex_waits: key struct ct_wait_key, value struct ct_agg (two
// generations, see ct_gen). count and total_ns are atomic; a reader may see
// one without the other for an update in flight. 32768 entries: the
// distinct (thread, lock, stack, owner) of one drain period.
CT_AGG_MAP(ct_futex_waits, struct ct_wait_key, struct ct_agg, 32768);

// ct_futex_locks: key struct ct_lock_key, value struct ct_lock_val over
// every wait on that word.
CT_AGG_MAP(ct_futex_locks, struct ct_lock_key, struct ct_lock_val, 8192);

// ct_futex_wakes: key struct ct_wake_key, value struct ct_wake_val.
CT_AGG_MAP(ct_futex_wakes, struct ct_wake_key, struct ct_wake_val, 16384);

static __always_inline void ct_wait_exit(void *ctx, struct pt_regs *regs, __u64 pid_tgid, long nr,
					 struct ct_futex_call *c, long ret, __u32 gen)
{
	ct_count(CT_EV_FUTEX_WAIT);
	struct ct_call_start s = ct_call_ended(pid_tgid, nr);
	__u64 now = bpf_ktime_get_ns();
	__u64 dur = 0, start = now;
	if (s.ts && s.ts <= now) {
		start = s.ts;
		dur = now - s.ts;
		// futex_waitv's vector may have changed meanwhile: keep the
		// address it blocked on.
		c->addr = s.addr;
	}
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	struct ct_lock_key lk = {};
	lk.addr = c->addr;
	lk.pid = pid;
	lk.shared = c->shared;
	struct ct_lock_val *lv = CT_AGG(ct_futex_locks, gen, &lk, struct ct_lock_val,
					CT_DROP_MAP_FULL_FUTEX_LOCK);
	if (lv) {
		__sync_fetch_and_add(&lv->waits, 1);
		if (s.ts)
			__sync_fetch_and_add(&lv->blocked, 1);
		if (ret == -CT_ETIMEDOUT)
			__sync_fetch_and_add(&lv->timeouts, 1);
		if (dur) {
			__sync_fetch_and_add(&lv->total_ns, dur);
			ct_max(&lv->max_ns, dur);
		}
		__u32 slot = ct_log2(dur);
		if (slot >= CT_HIST_SLOTS)
			slot = CT_HIST_SLOTS - 1;
		__sync_fetch_and_add(&lv->hist[slot], 1);
	}

	struct ct_wait_key k = {};
	k.addr = c->addr;
	k.pid = pid;
	k.tid = tid;
	k.owner = s.owner;
	k.op = c->op;
	k.shared = c->shared;
	k.stack = CT_STACK_NONE;
	bool long_wait = dur >= stack_threshold_ns;
	struct ct_uregs u = {};
	if (long_wait) {
		u = ct_read_uregs(regs);
		k.stack = ct_user_stack(CT_FAM_FUTEX, pid, u);
	}
	struct ct_agg *v = CT_AGG(ct_futex_waits, gen, &k, struct ct_agg, CT_DROP_MAP_FULL_FUTEX_WAIT);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		if (dur) {
			__sync_fetch_and_add(&v->total_ns, dur);
			ct_max(&v->max_ns, dur);
		}
	}
	if (!long_wait)
		return;

	struct ct_event e = {};
	e.kind = CT_K_WAIT;
	e.op = c->op;
	e.pid = pid;
	e.tid = tid;
	e.peer = s.owner;
	e.stack = k.stack;
	e.ts = start;
	e.dur = dur;
	e.addr = c->addr;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_FUTEX, pid, tid, k.stack, start, now, u);
}

static __always_inline void ct_wake_exit(void *ctx, struct pt_regs *regs, __u64 pid_tgid,
					 struct ct_futex_call *c, long ret, __u32 gen)
{
	ct_count(CT_EV_FUTEX_WAKE);
	__u64 woken = 0;
	if (c->op == CT_OP_UNLOCK_PI) {
		// The kernel is only entered to unlock a PI futex with waiters
		// (FUTEX_WAITERS set), and success hands it to one of them.
		woken = ret == 0;
	} else if (ret > 0) {
		woken = ret;
	}
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	struct ct_wake_key k = {};
	k.addr = c->addr;
	k.pid = pid;
	k.tid = tid;
	k.shared = c->shared;
	k.stack = CT_STACK_NONE;
	struct ct_uregs u = {};
	if (woken) {
		u = ct_read_uregs(regs);
		k.stack = ct_user_stack(CT_FAM_FUTEX, pid, u);
	}
	struct ct_wake_val *v = CT_AGG(ct_futex_wakes, gen, &k, struct ct_wake_val,
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
	e.op = c->op;
	e.pid = pid;
	e.tid = tid;
	e.peer = woken;
	e.stack = k.stack;
	e.ts = now;
	e.addr = c->addr;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_FUTEX, pid, tid, k.stack, now, now, u);
}

// ct_futex_exit accounts a futex-class syscall nr of the target ending
// with ret. The argument registers saved at entry are intact at exit (the
// result goes to ax), so the call is decoded from them.
static __always_inline int ct_futex_exit(void *ctx, long nr, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!ct_is_target(pid_tgid >> 32))
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct ct_futex_call c = ct_decode_futex(regs, nr);
	if (c.op == 0)
		return 0;
	__u32 gen = ct_gen_now();
	if (c.op <= CT_OP_LAST_WAIT)
		ct_wait_exit(ctx, regs, pid_tgid, nr, &c, ret, gen);
	else
		ct_wake_exit(ctx, regs, pid_tgid, &c, ret, gen);
	return 0;
}

// CT_FUTEX_EXIT defines the exit program of one futex-class syscall.
#define CT_FUTEX_EXIT(name, nr)                                                   \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                \
	int ct_exit_##name(struct trace_event_raw_sys_exit *ctx)                  \
	{                                                                         \
		return ct_futex_exit(ctx, nr, ctx->ret);                          \
	}

CT_FUTEX_EXIT(futex, NR_futex)
CT_FUTEX_EXIT(futex_wait, NR_futex_wait)
CT_FUTEX_EXIT(futex_waitv, NR_futex_waitv)
CT_FUTEX_EXIT(futex_wake, NR_futex_wake)
CT_FUTEX_EXIT(futex_requeue, NR_futex_requeue)
