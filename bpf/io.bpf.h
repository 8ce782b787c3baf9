//go:build ignore

// io probe family (included by syscalls.bpf.c): durations of the target's
// file I/O syscalls per (thread, syscall, user stack); stacks and events
// for calls of at least io_threshold_ns.
#ifndef CT_IO_BPF_H
#define CT_IO_BPF_H

#include "helpers.bpf.h"
#include "io.h"

// x86_64 syscall numbers traced.
#define NR_read 0
#define NR_write 1
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_writev 20
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_rename 82
#define NR_openat 257
#define NR_renameat 264
#define NR_sync_file_range 277
#define NR_renameat2 316

// Calls at least this long carry a stack and an event; set by the collector.
const volatile __u64 io_threshold_ns = 10000;

// ct_io_start: key pid_tgid, value struct ct_io_start: the thread's I/O
// call in progress, or ts 0 once it ended. Reused in place and read by the
// collector as ct_futex_start is (see there).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ct_io_start);
} ct_io_start SEC(".maps");

// ct_io: key struct ct_io_key, value struct ct_agg. Reader: the collector,
// cumulatively.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct ct_io_key);
	__type(value, struct ct_agg);
} ct_io SEC(".maps");

// ct_ucache_io: the user-stack cache of slow I/O calls (see CT_UCACHE in
// helpers.bpf.h).
CT_UCACHE(ct_ucache_io);

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

// ct_io_enter starts timing an I/O call: called at every target syscall
// entry.
static __always_inline void ct_io_enter(struct pt_regs *regs, long nr, __u64 pid_tgid)
{
	if (!ct_is_io(nr))
		return;
	struct ct_io_start s = {};
	s.nr = nr;
	s.ip = regs->ip;
	s.sp = regs->sp;
	s.bp = regs->bp;
	s.ts = bpf_ktime_get_ns();
	struct ct_io_start *sp = bpf_map_lookup_elem(&ct_io_start, &pid_tgid);
	if (sp) {
		ct_start_done(&sp->ts);
		sp->nr = s.nr;
		sp->ip = s.ip;
		sp->sp = s.sp;
		sp->bp = s.bp;
		ct_start_set(&sp->ts, s.ts);
	} else if (bpf_map_update_elem(&ct_io_start, &pid_tgid, &s, BPF_NOEXIST)) {
		ct_count(CT_DROP_START_UPDATE);
	}
}

// ct_io_exit accounts a finished I/O call: called at every target syscall
// exit.
static __always_inline void ct_io_exit(void *ctx, struct pt_regs *regs, long nr, __u64 pid_tgid)
{
	if (!ct_is_io(nr))
		return;
	struct ct_io_start *sp = bpf_map_lookup_elem(&ct_io_start, &pid_tgid);
	if (!sp || !sp->ts) {
		ct_count(CT_INFO_NO_START);
		return;
	}
	struct ct_io_start s = *sp;
	ct_start_done(&sp->ts);
	if (s.nr != nr)
		return;
	ct_count(CT_EV_IO);
	__u64 now = bpf_ktime_get_ns();
	__u64 dur = now - s.ts;
	__u32 tid = (__u32)pid_tgid;

	struct ct_io_key k = {};
	k.tid = tid;
	k.nr = nr;
	k.stack_id = CT_STACK_NONE;
	bool slow = dur >= io_threshold_ns;
	if (slow)
		k.stack_id = ct_regs_stack(ctx, &ct_ucache_io, regs);
	struct ct_agg *v = CT_LOOKUP_OR_INIT(&ct_io, &k, struct ct_agg, CT_DROP_MAP_FULL_IO);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, dur);
		ct_max(&v->max_ns, dur);
	}
	if (!slow)
		return;

	struct ct_event e = {};
	e.kind = CT_K_IO;
	e.sys = nr;
	e.tid = tid;
	e.stack_id = k.stack_id;
	e.ts = s.ts;
	e.dur = dur;
	ct_emit(&e, now);
	ct_send_window(CT_FAM_IO, tid, k.stack_id, s.ts, now, regs->ip, regs->sp, regs->bp);
}

#endif
