//go:build ignore

// oncpu probe family: cpu-clock samples of the target's threads (a perf
// event per CPU), per (thread, user stack, kernel stack).
#include "helpers.bpf.h"
#include "oncpu.h"

// ct_oncpu: key struct ct_oncpu_key, value struct ct_oncpu_val (two
// generations, see ct_gen).
CT_AGG_MAP(ct_oncpu, struct ct_oncpu_key, struct ct_oncpu_val, 16384);

SEC("perf_event")
int ct_oncpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	if (!ct_is_target(pid))
		return 0;
	ct_count(CT_EV_ONCPU);
	__u64 now = bpf_ktime_get_ns();

	// cs is read as the whole 8-byte slot 17 of the x86_64 register frame
	// (UAPI layout): the context allows only full-width loads there, and
	// newer kernels made the field a union.
	__u64 cs = ((const __u64 *)&ctx->regs)[17];
	bool user = (cs & 3) == 3;
	// User registers: the sample's own in user mode, else those saved at
	// kernel entry.
	struct ct_uregs u = {};
	if (user) {
		u.ip = ctx->regs.ip;
		u.sp = ctx->regs.sp;
		u.bp = ctx->regs.bp;
	} else {
		u = ct_read_uregs((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()));
	}
	struct ct_oncpu_key k = {};
	k.pid = pid;
	k.tid = tid;
	k.ustack = ct_user_stack(CT_FAM_ONCPU, pid, u);
	k.kstack = CT_STACK_NONE;
	if (!user)
		k.kstack = ct_kernel_stack(ctx, CT_FAM_ONCPU, pid);
	__u32 gen = ct_gen_now();
	struct ct_oncpu_val *v = CT_AGG(ct_oncpu, gen, &k, struct ct_oncpu_val, CT_DROP_MAP_FULL_ONCPU);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->period_ns, ctx->sample_period);
	}
	if (u.ip)
		ct_send_window(CT_FAM_ONCPU, pid, tid, k.ustack, now, now, u);
	return 0;
}
