//go:build ignore

// io probe family: the target's file I/O syscalls per (thread, syscall,
// user stack). As the futex family, it hooks only the syscalls' exits: a
// call that left the CPU (blocked on the disk, or was preempted) is timed
// from its first switch-out (sched.bpf.c); one that never left the CPU is
// counted with no duration. Stacks and events go with calls of at least
// io_threshold_ns.
#include "helpers.bpf.h"
#include "calls.bpf.h"
#include "io.h"

// Calls at least this long carry a stack and an event; set by the collector.
const volatile __u64 io_threshold_ns = 10000;

// ct_io: key struct ct_io_key, value struct ct_agg (two generations, see
// ct_gen).
CT_AGG_MAP(ct_io, struct ct_io_key, struct ct_agg, 8192);

static __always_inline int ct_io_exit(void *ctx, long nr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	if (!ct_is_target(pid))
		return 0;
	ct_count(CT_EV_IO);
	struct ct_call_start s = ct_call_ended(pid_tgid, nr);
	__u64 now = bpf_ktime_get_ns();
	__u64 dur = 0;
	if (s.ts && s.ts <= now)
		dur = now - s.ts;

	struct ct_io_key k = {};
	k.pid = pid;
	k.tid = tid;
	k.nr = nr;
	k.stack = CT_STACK_NONE;
	bool slow = dur >= io_threshold_ns;
	struct ct_uregs u = {};
	if (slow) {
		u = ct_read_uregs((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()));
		k.stack = ct_user_stack(CT_FAM_IO, pid, u);
	}
	__u32 gen = ct_gen_now();
	struct ct_agg *v = CT_AGG(ct_io, gen, &k, struct ct_agg, CT_DROP_MAP_FULL_IO);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		if (dur) {
			__sync_fetch_and_add(&v->total_ns, dur);
			ct_max(&v->max_ns, dur);
		}
	}
	if (!slow)
		return 0;

	struct ct_event e = {};
	e.kind = CT_K_IO;
	e.sys = nr;
	e.pid = pid;
	e.tid = tid;
	e.stack = k.stack;
	e.ts = s.ts;
	e.dur = dur;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_IO, pid, tid, k.stack, s.ts, now, u);
	return 0;
}

// CT_IO_EXIT defines the exit program of one I/O syscall.
#define CT_IO_EXIT(name, nr)                                                      \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                \
	int ct_exit_##name(struct trace_event_raw_sys_exit *ctx)                  \
	{                                                                         \
		return ct_io_exit(ctx, nr);                                       \
	}

CT_IO_EXIT(read, NR_read)
CT_IO_EXIT(write, NR_write)
CT_IO_EXIT(pread64, NR_pread64)
CT_IO_EXIT(pwrite64, NR_pwrite64)
CT_IO_EXIT(writev, NR_writev)
CT_IO_EXIT(fsync, NR_fsync)
CT_IO_EXIT(fdatasync, NR_fdatasync)
CT_IO_EXIT(rename, NR_rename)
CT_IO_EXIT(openat, NR_openat)
CT_IO_EXIT(renameat, NR_renameat)
CT_IO_EXIT(sync_file_range, NR_sync_file_range)
CT_IO_EXIT(renameat2, NR_renameat2)
