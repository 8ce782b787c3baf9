//go:build ignore

// futex probe family: every futex wait of the target that sleeps,
// aggregated per lock and per (thread, lock, user stack, owner), and every
// wake that woke a thread per (thread, lock, waker stack). No syscall is
// hooked: enabling any syscall tracepoint, even one syscall's, makes every
// syscall of every process on the machine take the kernel's slow path, so
// recording one process would tax all the others. A wait is seen from the
// scheduler instead: it starts when its thread goes to sleep inside a
// futex call (the switch-out probe in sched.bpf.c reads the call from the
// thread's saved registers and walks its stack), and ends at the thread's
// next switch-in (ct_futex_switch_in). A wake is seen when a futex call
// wakes a sleeping thread (ct_futex_waking, on sched_waking, in the
// waker's context). Waits that never sleep (the word changed before the
// thread could) and wakes that wake nobody cost the target's threads a
// syscall but nobody a wait; they are not seen. Stacks go with waits of at
// least stack_threshold_ns and with every wake.
#include "helpers.bpf.h"
#include "calls.bpf.h"

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

// ct_wait_end accounts the futex wait s of thread t, ended by its
// switch-in at now.
static __always_inline void ct_wait_end(struct task_struct *t, struct ct_call_start *s, __u64 now, __u32 gen)
{
	ct_count(CT_EV_FUTEX_WAIT);
	__u64 pid_tgid = ct_task_key(t);
	__u64 start = s->ts, dur = now - s->ts;
	bool timeout = s->timeout;
	// The part of the wait the thread spent woken and runnable, waiting
	// for a CPU: from its wake to now. A wake before the sleep's own
	// entry was written (see ct_call_switch_out) made the whole sleep
	// runnable. No wake seen (woken_ts 0): the kernel woke the thread
	// but ct_futex_waking did not run for it. Seen on the test machine:
	// 2 to 964 of 600,000 sleeps in TestChurnNothingLost, every one a
	// timer's wake in an interrupt over a thread of the VM's init
	// process, where ftrace records the sched_waking and no BPF program
	// runs (see ct_queued_ns). Such a wait was woken by no futex call
	// the probes could see (a target's call is seen from its own
	// context): a timeout, or a signal, like the marked ones; its
	// run-queue time is the scheduler's own record, which starts at the
	// enqueue, after the wake (compared on waits with both: about
	// 1.5 us less for most, tens of us less when the wake had to reach
	// an idle CPU). Without that record it is neither a timeout nor
	// woken by a call, its run-queue time is unknown, and it is counted
	// as lost.
	__u64 runq = 0, w = s->woken_ts;
	if (!w) {
		if (ct_queued_ns(t, &runq)) {
			ct_count(CT_INFO_WAKE_SCHED_FUTEX);
			timeout = true;
			if (runq > dur)
				runq = dur;
		} else {
			ct_count(CT_DROP_WAKE_UNSEEN);
		}
	} else if (w >= start) {
		runq = now > w ? now - w : 0;
	} else {
		runq = dur;
	}
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	struct ct_lock_key lk = {};
	lk.addr = s->addr;
	lk.pid = pid;
	lk.shared = s->shared;
	struct ct_lock_val *lv = CT_AGG(ct_futex_locks, gen, &lk, struct ct_lock_val,
					CT_DROP_MAP_FULL_FUTEX_LOCK);
	if (lv) {
		__sync_fetch_and_add(&lv->waits, 1);
		__sync_fetch_and_add(&lv->blocked, 1);
		if (timeout)
			__sync_fetch_and_add(&lv->timeouts, 1);
		__sync_fetch_and_add(&lv->total_ns, dur);
		if (runq)
			__sync_fetch_and_add(&lv->runq_ns, runq);
		ct_max(&lv->max_ns, dur);
		__u32 slot = ct_log2(dur);
		if (slot >= CT_HIST_SLOTS)
			slot = CT_HIST_SLOTS - 1;
		__sync_fetch_and_add(&lv->hist[slot], 1);
	}

	bool long_wait = dur >= stack_threshold_ns;
	struct ct_wait_key k = {};
	k.addr = s->addr;
	k.pid = pid;
	k.tid = tid;
	k.owner = s->owner;
	k.op = s->op;
	k.shared = s->shared;
	k.stack = long_wait ? s->stack : CT_STACK_NONE;
	struct ct_agg *v = CT_AGG(ct_futex_waits, gen, &k, struct ct_agg, CT_DROP_MAP_FULL_FUTEX_WAIT);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, dur);
		ct_max(&v->max_ns, dur);
	}
	if (!long_wait)
		return;

	struct ct_event e = {};
	e.kind = CT_K_WAIT;
	e.op = s->op;
	e.pid = pid;
	e.tid = tid;
	e.peer = s->owner;
	e.stack = k.stack;
	e.ts = start;
	e.dur = dur;
	e.addr = s->addr;
	ct_emit(&e, now);
}

// ct_futex_switch_in ends a target thread's futex wait at its switch-in:
// the thread was woken (or its timeout fired) and runs again, on its way
// out of the call.
SEC("tp_btf/sched_switch")
int BPF_PROG(ct_futex_switch_in, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (!ct_is_target(next->tgid))
		return 0;
	struct ct_call_start s;
	__u64 now;
	if (!ct_call_resumed(next, true, &s, &now))
		return 0;
	ct_wait_end(next, &s, now, ct_gen_now());
	return 0;
}

// ct_wake_seen accounts a wake by the current thread pid_tgid, in futex
// call c (registers regs), that woke one sleeping thread.
static __always_inline void ct_wake_seen(struct pt_regs *regs, __u64 pid_tgid, struct ct_futex_call *c,
					 __u32 gen)
{
	ct_count(CT_EV_FUTEX_WAKE);
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct ct_uregs u = ct_read_uregs(regs);

	struct ct_wake_key k = {};
	k.addr = c->addr;
	k.pid = pid;
	k.tid = tid;
	k.shared = c->shared;
	k.stack = ct_user_stack(CT_FAM_FUTEX, pid, u);
	struct ct_wake_val *v = CT_AGG(ct_futex_wakes, gen, &k, struct ct_wake_val,
				       CT_DROP_MAP_FULL_FUTEX_WAKE);
	if (v) {
		__sync_fetch_and_add(&v->wakes, 1);
		__sync_fetch_and_add(&v->woken, 1);
	}

	__u64 now = bpf_ktime_get_ns();
	struct ct_event e = {};
	e.kind = CT_K_WAKE;
	e.op = c->op;
	e.pid = pid;
	e.tid = tid;
	e.peer = 1;
	e.stack = k.stack;
	e.ts = now;
	e.addr = c->addr;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_FUTEX, pid, tid, k.stack, now, now, u);
}

// ct_in_futex reports whether thread p, asleep, is inside a futex call:
// ct_syscall_nr on its saved user registers.
static __always_inline bool ct_in_futex(struct task_struct *p)
{
	return ct_is_futex(ct_syscall_nr((struct pt_regs *)bpf_task_pt_regs(p)));
}

// ct_mark_woken marks the futex sleep of thread p as woken now, by a
// timer or a signal when timeout, else by a futex call. The marks go in
// p's entry whatever it holds: the wake of a sleep can come before the
// switch-out that writes the sleep's entry, from another CPU between the
// scheduler taking p off its run queue and the tracepoint (see
// ct_call_switch_out), and the switch-out keeps them. A thread's first
// sleep has no entry yet: the wake writes one, not started (ts 0), to
// hold the marks. The marks are cleared when the sleep ends
// (ct_call_resumed). A wake that reaches a thread still on its way into
// the sleep, which then does not sleep at all (a lock handed over at
// once), leaves its marks behind; the next sleep's own wake overwrites
// them, and they are read as that sleep's only when its wake goes unseen.
// A wake of a thread in no futex call is not marked, so that a sleep
// elsewhere (a nanosleep, a read) leaves none behind.
static __always_inline void ct_mark_woken(struct task_struct *p, bool timeout)
{
	__u64 key = ct_task_key(p);
	struct ct_call_start *sp = bpf_map_lookup_elem(&ct_call_start, &key);
	if (!sp) {
		struct ct_call_start z = {};
		// Fails when the switch-out wrote the entry since the lookup;
		// the lookup below then finds that one.
		bpf_map_update_elem(&ct_call_start, &key, &z, BPF_NOEXIST);
		sp = bpf_map_lookup_elem(&ct_call_start, &key);
		if (!sp)
			return;
		ct_count(CT_INFO_WAKE_FIRST);
	}
	sp->timeout = timeout;
	sp->woken_ts = bpf_ktime_get_ns();
}

// ct_futex_waking sees a sleeping thread p being woken. When the current
// thread is a target's, inside a futex call that wakes, and not in an
// interrupt that merely interrupted it, the call woke p: a wake. When p is
// a target's thread asleep in a futex wait, the wait is marked as ended by
// a timeout (or a signal) unless such a call woke it.
SEC("tp_btf/sched_waking")
int BPF_PROG(ct_futex_waking, struct task_struct *p)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	bool cur_target = ct_is_target(cur->tgid), p_target = ct_is_target(p->tgid);
	if (!cur_target && !p_target)
		return 0;
	struct ct_futex_call c = {};
	struct pt_regs *ur = 0;
	if (ct_by_task(cur)) {
		ur = (struct pt_regs *)bpf_task_pt_regs(cur);
		long nr = ct_syscall_nr(ur);
		if (ct_is_futex(nr))
			c = ct_decode_futex(ur, nr);
	}
	bool wake = c.op > CT_OP_LAST_WAIT;
	if (p_target && ct_in_futex(p))
		ct_mark_woken(p, !wake);
	if (wake && cur_target)
		ct_wake_seen(ur, bpf_get_current_pid_tgid(), &c, ct_gen_now());
	return 0;
}
