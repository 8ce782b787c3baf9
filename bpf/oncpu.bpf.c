//go:build ignore

// oncpu probe family: cpu-clock samples of the target's threads (a perf
// event per CPU), per (thread, user stack, kernel stack).
#include "helpers.bpf.h"
#include "oncpu.h"

// ct_oncpu: key struct ct_oncpu_key, value struct ct_oncpu_val. Reader: the
// collector, cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ct_oncpu_key);
	__type(value, struct ct_oncpu_val);
} ct_oncpu SEC(".maps");

SEC("perf_event")
int ct_oncpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid;
	if (!ct_in_target(&pid_tgid))
		return 0;
	ct_count(CT_EV_ONCPU);
	__u32 tid = (__u32)pid_tgid;
	__u64 now = bpf_ktime_get_ns();

	struct ct_oncpu_key k = {};
	k.tid = tid;
	k.ustack = ct_stack_id(ctx, BPF_F_USER_STACK);
	k.kstack = CT_STACK_NONE;
	// cs is read as the whole 8-byte slot 17 of the x86_64 register frame
	// (UAPI layout): the context allows only full-width loads there, and
	// newer kernels made the field a union.
	__u64 cs = ((const __u64 *)&ctx->regs)[17];
	bool user = (cs & 3) == 3;
	if (!user)
		k.kstack = ct_stack_id(ctx, 0);
	struct ct_oncpu_val *v = CT_LOOKUP_OR_INIT(&ct_oncpu, &k, struct ct_oncpu_val,
						   CT_DROP_MAP_FULL_ONCPU);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->period_ns, ctx->sample_period);
	}

	// User registers: the sample's own in user mode, else those saved at
	// kernel entry.
	__u64 ip, sp, bp;
	if (user) {
		ip = ctx->regs.ip;
		sp = ctx->regs.sp;
		bp = ctx->regs.bp;
	} else {
		struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (!ur)
			return 0;
		ip = BPF_CORE_READ(ur, ip);
		sp = BPF_CORE_READ(ur, sp);
		bp = BPF_CORE_READ(ur, bp);
	}
	ct_send_window(CT_FAM_ONCPU, tid, k.ustack, now, now, ip, sp, bp);
	return 0;
}
