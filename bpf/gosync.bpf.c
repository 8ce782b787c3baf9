//go:build ignore

// gosync probe family: how long goroutines wait in the slow paths of Go's
// sync.Mutex and sync.RWMutex, per (process, waiter stack). A Go lock wait
// parks the goroutine inside the Go scheduler and never reaches a futex,
// so the other families cannot see it. The collector attaches these
// programs as uprobes on a Go target's own binary, per process: at the
// entry of each slow-path function (ct_gosync_enter; on the frame
// pointer's PUSH after the stack check, which the kernel emulates instead
// of single-stepping it) and at each of its RET instructions
// (ct_gosync_exit). Never uretprobes: a
// uretprobe rewrites the return address on the goroutine's stack, which
// Go's stack copying and traceback cannot follow.
//
// A parked goroutine may resume on another thread, so a wait is keyed by
// its goroutine: Go's register ABI (ABIInternal, amd64) keeps the current
// g in r14 in every Go function, at entry and at every RET. The lock is
// the function's first argument, in rax at its entry.
#include "helpers.bpf.h"
#include "gosync.h"

// ct_gosync_inflight: key struct ct_gosync_g, value struct
// ct_gosync_start: the goroutines inside a probed slow path now. Written
// at entry (overwritten when the function is entered again before it
// returned, as after a stack growth restarts it), read and deleted at
// return. LRU, sized for 32768 goroutines waiting at once: a goroutine
// whose return is never seen (the probes detached first) cannot pin an
// entry, and beyond that many concurrent waiters the oldest waits are the
// ones forgotten (their returns count CT_INFO_GOSYNC_NO_START).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, struct ct_gosync_g);
	__type(value, struct ct_gosync_start);
} ct_gosync_inflight SEC(".maps");

// ct_gosync: key struct ct_gosync_key, value struct ct_agg: waits, their
// total and longest duration (two generations, see ct_gen). A program has
// a few dozen lock call paths, some of which take one of many locks (a
// striped table, a mutex per connection): 16384 (call path, lock) pairs
// contended per drain period leave room for a large service, and a full
// map is counted (CT_DROP_MAP_FULL_GOSYNC).
CT_AGG_MAP(ct_gosync, struct ct_gosync_key, struct ct_agg, 16384);

SEC("uprobe")
int ct_gosync_enter(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (!ct_is_target(pid))
		return 0;
	ct_count(CT_EV_GOSYNC);
	struct ct_gosync_g k = {};
	k.g = ctx->r14;
	k.pid = pid;
	struct ct_uregs u = ct_read_uregs(ctx);
	// Up to the function's PUSH of rbp, the return address is at sp and
	// rbp still holds the caller's frame record.
	__u64 ret = 0;
	if (bpf_probe_read_user(&ret, sizeof(ret), (void *)u.sp) || ret < 4096 || ret >= CT_USER_TOP)
		ret = 0;
	struct ct_gosync_start s = {};
	s.stack = ret ? ct_user_stack_ret(CT_FAM_GOSYNC, pid, u, ret) : CT_STACK_LOST;
	if (!ret)
		ct_count(CT_DROP_STACK_USER);
	// The first argument (rax in ABIInternal): the *Mutex for lockSlow,
	// the semaphore word for the RWMutex waits; either names the lock.
	s.addr = ctx->ax;
	s.kind = (__u32)bpf_get_attach_cookie(ctx);
	s.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&ct_gosync_inflight, &k, &s, BPF_ANY);
	return 0;
}

SEC("uprobe")
int ct_gosync_exit(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (!ct_is_target(pid))
		return 0;
	struct ct_gosync_g g = {};
	g.g = ctx->r14;
	g.pid = pid;
	struct ct_gosync_start *sp = bpf_map_lookup_elem(&ct_gosync_inflight, &g);
	if (!sp) {
		ct_count(CT_INFO_GOSYNC_NO_START);
		return 0;
	}
	struct ct_gosync_start s = *sp;
	bpf_map_delete_elem(&ct_gosync_inflight, &g);
	__u64 now = bpf_ktime_get_ns();
	__u64 dur = s.ts && s.ts <= now ? now - s.ts : 0;

	struct ct_gosync_key k = {};
	k.stack = s.stack;
	k.addr = s.addr;
	k.pid = pid;
	k.kind = s.kind;
	__u32 gen = ct_gen_now();
	struct ct_agg *v = CT_AGG(ct_gosync, gen, &k, struct ct_agg, CT_DROP_MAP_FULL_GOSYNC);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, dur);
		ct_max(&v->max_ns, dur);
	}
	return 0;
}
