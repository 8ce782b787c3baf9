//go:build ignore

// io probe family: the target's file I/O syscalls that sleep, per
// (thread, syscall, user stack). As the futex family, it hooks no
// syscall: a call is timed from its thread's switch-out asleep inside it
// (sched.bpf.c, which also walks the stack) to the thread's next
// switch-in (ct_io_switch_in). A call that never sleeps (served from the
// page cache) costs CPU time, which the on-CPU samples see, and is not
// counted here; one that sleeps several times (a read that misses the
// cache on several pages) counts once per sleep. Stacks and events go with
// calls of at least io_threshold_ns.
#include "helpers.bpf.h"
#include "calls.bpf.h"
#include "io.h"

// Calls at least this long carry a stack and an event; set by the collector.
const volatile __u64 io_threshold_ns = 10000;

// ct_io: key struct ct_io_key, value struct ct_agg (two generations, see
// ct_gen).
CT_AGG_MAP(ct_io, struct ct_io_key, struct ct_agg, 8192);

// ct_io_switch_in ends a target thread's I/O call sleep at its switch-in.
SEC("tp_btf/sched_switch")
int BPF_PROG(ct_io_switch_in, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 pid = next->tgid, tid = next->pid;
	if (!ct_is_target(pid))
		return 0;
	struct ct_call_start s;
	__u64 now;
	if (!ct_call_resumed(next, false, &s, &now))
		return 0;
	ct_count(CT_EV_IO);
	__u64 dur = now - s.ts;

	struct ct_io_key k = {};
	k.pid = pid;
	k.tid = tid;
	k.nr = s.nr;
	bool slow = dur >= io_threshold_ns;
	k.stack = slow ? s.stack : CT_STACK_NONE;
	__u32 gen = ct_gen_now();
	struct ct_agg *v = CT_AGG(ct_io, gen, &k, struct ct_agg, CT_DROP_MAP_FULL_IO);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, dur);
		ct_max(&v->max_ns, dur);
	}
	if (!slow)
		return 0;

	struct ct_event e = {};
	e.kind = CT_K_IO;
	e.sys = s.nr;
	e.pid = pid;
	e.tid = tid;
	e.stack = k.stack;
	e.ts = s.ts;
	e.dur = dur;
	ct_emit(&e, now);
	return 0;
}
