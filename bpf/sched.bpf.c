//go:build ignore

// sched probe family: off-CPU time of the target's threads per (thread,
// state left in, user stack), the part of it spent runnable but not
// running, and wake edges waker -> wakee with the waker's context and stack.
#include "helpers.bpf.h"
#include "sched.h"

#define CT_TASK_RUNNING 0x0
#define CT_TASK_INTERRUPTIBLE 0x1
#define CT_TASK_UNINTERRUPTIBLE 0x2
#define CT_TASK_DEAD 0x80
#define CT_TASK_REPORT 0x7f

// Intervals at least this long go to the event log: runnable-but-not-running
// (runq) and uninterruptible sleep (dsleep). Set by the collector.
const volatile __u64 runq_event_ns = 100000;
const volatile __u64 dsleep_event_ns = 10000;

// ct_sched_start: key a target thread (task storage, freed with the
// task), value struct ct_sched_start; written at switch-out, marked
// runnable by sched_waking, consumed at switch-in (off_ts set to 0).
// Task storage rather than a hash map keyed by pid_tgid: its lookup is a
// pointer chase from the task, while an LRU hash update and delete at
// every switch cost several hundred nanoseconds more. Reader: these
// programs only.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ct_sched_start);
} ct_sched_start SEC(".maps");

// ct_offcpu: key struct ct_offcpu_key, value struct ct_offcpu_val. Reader:
// the collector, cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct ct_offcpu_key);
	__type(value, struct ct_offcpu_val);
} ct_offcpu SEC(".maps");

// ct_offcpu_spill: ct_offcpu's overflow. A key that finds ct_offcpu full
// is kept here with stack_id CT_STACK_SPILLED, so a thread's off-CPU time
// by state survives when its stacks no longer fit: code built without
// frame pointers gives a new frame-pointer "stack" at nearly every
// preemption, and fills ct_offcpu within seconds on a busy target. One
// entry per thread and state. Reader: the collector, cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ct_offcpu_key);
	__type(value, struct ct_offcpu_val);
} ct_offcpu_spill SEC(".maps");

// ct_wakes: key struct ct_wakes_key, value the number of wakeups. Reader:
// the collector, cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ct_wakes_key);
	__type(value, __u64);
} ct_wakes SEC(".maps");

// ct_irq: key 0 (hardirq) or 1 (softirq), value the per-CPU nesting depth
// of that context, kept by the entry and exit tracepoints of every kind of
// hard interrupt that can wake a task (device handlers, the local timer
// that runs hrtimer callbacks, irq_work, function-call IPIs) and of
// softirqs. sched_waking reads it to tell a wakeup by a task from one by
// an interrupt that merely interrupted that task. Reader: these programs.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} ct_irq SEC(".maps");

// ct_ucache_switch and ct_ucache_waking: the user-stack caches of the
// switch-out and of a target thread waking another (see CT_UCACHE in
// helpers.bpf.h).
CT_UCACHE(ct_ucache_switch);
CT_UCACHE(ct_ucache_waking);

#define CT_IRQ_HARD 0
#define CT_IRQ_SOFT 1

static __always_inline __u8 ct_state_of(bool preempt, unsigned int prev_state)
{
	if (preempt || (prev_state & CT_TASK_REPORT) == CT_TASK_RUNNING)
		return CT_ST_RUNNABLE;
	if (prev_state & CT_TASK_UNINTERRUPTIBLE)
		return CT_ST_UNINTERRUPTIBLE;
	if (prev_state & CT_TASK_INTERRUPTIBLE)
		return CT_ST_SLEEPING;
	return CT_ST_OTHER;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ct_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = 0;
	if (prev->tgid == target_tgid && !(prev_state & CT_TASK_DEAD)) {
		now = bpf_ktime_get_ns();
		ct_count(CT_EV_SWITCH);
		struct ct_sched_start s = {};
		s.off_ts = now;
		s.state = ct_state_of(preempt, prev_state);
		if (s.state == CT_ST_RUNNABLE)
			s.runnable_ts = now;
		// prev is the current task: its user stack is at hand.
		struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(prev);
		__u64 ip = 0, sp = 0, bp = 0;
		if (ur) {
			ip = BPF_CORE_READ(ur, ip);
			sp = BPF_CORE_READ(ur, sp);
			bp = BPF_CORE_READ(ur, bp);
			s.stack_id = ct_user_stack(ctx, &ct_ucache_switch, prev, ip, sp, bp,
						   BPF_CORE_READ(ur, cs));
		} else {
			s.stack_id = ct_stack_id(ctx, BPF_F_USER_STACK);
		}
		struct ct_sched_start *st = bpf_task_storage_get(&ct_sched_start, prev, 0,
								 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st)
			*st = s;
		else
			ct_count(CT_DROP_START_UPDATE);
		if (ur)
			ct_send_window(CT_FAM_SCHED, prev->pid, s.stack_id, now, now, ip, sp, bp);
	}
	if (next->tgid != target_tgid)
		return 0;
	struct ct_sched_start *sp = bpf_task_storage_get(&ct_sched_start, next, 0, 0);
	if (!sp || !sp->off_ts) {
		ct_count(CT_INFO_NO_START);
		return 0;
	}
	struct ct_sched_start s = *sp;
	sp->off_ts = 0;
	if (!now)
		now = bpf_ktime_get_ns();
	if (now < s.off_ts)
		return 0;

	__u64 runq = 0;
	if (s.runnable_ts && s.runnable_ts <= now)
		runq = now - s.runnable_ts;
	struct ct_offcpu_key k = {};
	k.tid = next->pid;
	k.stack_id = s.stack_id;
	k.state = s.state;
	struct ct_offcpu_val *v = CT_LOOKUP_OR_INIT(&ct_offcpu, &k, struct ct_offcpu_val,
						    CT_INFO_OFFCPU_SPILLED);
	if (!v) {
		k.stack_id = CT_STACK_SPILLED;
		v = CT_LOOKUP_OR_INIT(&ct_offcpu_spill, &k, struct ct_offcpu_val,
				      CT_DROP_MAP_FULL_OFFCPU);
	}
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, now - s.off_ts);
		if (runq)
			__sync_fetch_and_add(&v->runq_ns, runq);
	}

	if (runq >= runq_event_ns) {
		struct ct_event e = {};
		e.kind = CT_K_RUNQ;
		e.op = s.state;
		e.tid = next->pid;
		e.stack_id = s.stack_id;
		e.ts = s.runnable_ts;
		e.dur = runq;
		ct_emit(&e, now);
	}
	if (s.state == CT_ST_UNINTERRUPTIBLE) {
		__u64 end = s.runnable_ts ? s.runnable_ts : now;
		if (end - s.off_ts >= dsleep_event_ns) {
			struct ct_event e = {};
			e.kind = CT_K_DSLEEP;
			e.op = s.state;
			e.tid = next->pid;
			e.stack_id = s.stack_id;
			e.ts = s.off_ts;
			e.dur = end - s.off_ts;
			ct_emit(&e, now);
		}
	}
	return 0;
}

// ct_wake_context classifies the context sched_waking fired in: inside a
// hard interrupt or a softirq by the depth counters, else the idle task or
// an ordinary task. (The stack the program runs on cannot tell: interrupts
// from user mode run on the task's own kernel stack, and the kernel may
// run tracing programs on a private stack.)
static __always_inline __u8 ct_wake_context(struct task_struct *cur)
{
	__u32 key = CT_IRQ_HARD;
	__u32 *depth = bpf_map_lookup_elem(&ct_irq, &key);
	if (depth && *depth > 0)
		return CT_CTX_HARDIRQ;
	key = CT_IRQ_SOFT;
	depth = bpf_map_lookup_elem(&ct_irq, &key);
	if (depth && *depth > 0)
		return CT_CTX_SOFTIRQ;
	if (cur->pid == 0)
		return CT_CTX_IDLE;
	return CT_CTX_TASK;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(ct_sched_waking, struct task_struct *p)
{
	if (p->tgid != target_tgid)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	ct_count(CT_EV_WAKEUP);
	struct ct_sched_start *sp = bpf_task_storage_get(&ct_sched_start, p, 0, 0);
	if (sp && sp->off_ts && !sp->runnable_ts)
		sp->runnable_ts = now;

	struct task_struct *cur = bpf_get_current_task_btf();
	struct ct_wakes_key k = {};
	k.wakee = p->pid;
	k.ctx = ct_wake_context(cur);
	k.stack_id = CT_STACK_NONE;
	if (k.ctx == CT_CTX_TASK) {
		k.waker = cur->pid;
		if (cur->tgid == target_tgid) {
			struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(cur);
			if (ur)
				k.stack_id = ct_user_stack(ctx, &ct_ucache_waking, cur,
							   BPF_CORE_READ(ur, ip), BPF_CORE_READ(ur, sp),
							   BPF_CORE_READ(ur, bp), BPF_CORE_READ(ur, cs));
			else
				k.stack_id = ct_stack_id(ctx, BPF_F_USER_STACK);
		}
	}
	__u64 *v = CT_LOOKUP_OR_INIT(&ct_wakes, &k, __u64, CT_DROP_MAP_FULL_WAKES);
	if (v)
		__sync_fetch_and_add(v, 1);

	struct ct_event e = {};
	e.kind = CT_K_WAKEUP;
	e.op = k.ctx;
	e.tid = k.waker;
	e.peer = p->pid;
	e.stack_id = k.stack_id;
	e.ts = now;
	ct_emit(&e, now);
	return 0;
}

static __always_inline void ct_irq_depth(__u32 key, bool enter)
{
	__u32 *depth = bpf_map_lookup_elem(&ct_irq, &key);
	if (!depth)
		return;
	if (enter)
		*depth += 1;
	else if (*depth > 0) // attached in the middle of one: exit without entry
		*depth -= 1;
}

// CT_IRQ_PROGS defines the entry and exit programs of one interrupt kind.
#define CT_IRQ_PROGS(tp, key)                                    \
	SEC("tp_btf/" #tp "_entry")                              \
	int ct_##tp##_in(void *ctx) { ct_irq_depth(key, true); return 0; } \
	SEC("tp_btf/" #tp "_exit")                               \
	int ct_##tp##_out(void *ctx) { ct_irq_depth(key, false); return 0; }

CT_IRQ_PROGS(irq_handler, CT_IRQ_HARD)
CT_IRQ_PROGS(local_timer, CT_IRQ_HARD)
CT_IRQ_PROGS(irq_work, CT_IRQ_HARD)
CT_IRQ_PROGS(call_function, CT_IRQ_HARD)
CT_IRQ_PROGS(call_function_single, CT_IRQ_HARD)
CT_IRQ_PROGS(softirq, CT_IRQ_SOFT)
