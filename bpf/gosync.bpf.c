//go:build ignore

// gosync probe family: how long goroutines wait for Go's sync.Mutex and
// sync.RWMutex, per (process, waiter stack, lock). A Go lock wait parks
// the goroutine inside the Go scheduler and never reaches a futex, so the
// other families cannot see it. The collector attaches these programs as
// uprobes on a Go target's own binary, per process, each on an
// instruction the kernel emulates (the frame pointer's PUSH after the
// stack check) instead of single-stepping it: on the benchmark's VM about
// 5 µs a hit against 21 µs for a single-stepped one (docs/cost.md). Never
// uretprobes: a
// uretprobe rewrites the return address on the goroutine's stack, which
// Go's stack copying and traceback cannot follow.
//
// Two ways, the first the default:
//
//   - park/wake, entries only: ct_gosync_park at the entry of
//     runtime.(*semaRoot).queue, where a goroutine that found the
//     semaphore taken queues its sudog just before it parks, and
//     ct_gosync_wake at the entry of runtime.releaseSudog, the first
//     function the goroutine calls once it runs again with the semaphore
//     acquired (semacquire1 in runtime/sema.go, Go 1.21 to 1.26). The wait
//     is park to run again: the time the goroutine could not run for the
//     lock, including the time it waited for a CPU once readied. A
//     goroutine woken without the semaphore queues again with the same
//     sudog; that is the same wait. Which lock a queue is for is told by
//     semacquire1's return address, in the frame record rbp points to at
//     queue's entry: the collector lists, per process, the return
//     addresses of the calls in the runtime's lock wrappers
//     (sync.runtime_SemacquireMutex and kin), ct_gosync_callers; a
//     semaphore of anything else (WaitGroup, the GC) is not recorded.
//   - entry/return (ct_gosync_enter, ct_gosync_exit): the entry of each
//     slow-path function and each of its RET instructions, which the
//     kernel single-steps. Kept for comparison (make bench).
//
// A parked goroutine may resume on another thread, so a wait is keyed by
// its goroutine: Go's register ABI (ABIInternal, amd64) keeps the current
// g in r14 in every Go function, at entry and at every RET, and passes
// the first arguments in rax, rbx, rcx, rdi.
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

// ct_gosync_callers: key struct ct_gosync_caller, value __u32 (enum
// ct_gosync_kind): the return addresses, in each target process, of the
// calls in the runtime's lock wait wrappers, which call semacquire1.
// Written by the collector before it attaches the park probe to a
// process, deleted when the probes come off; read by ct_gosync_park. A
// wrapper has a few calls (semacquire1, morestack): 4096 entries hold
// hundreds of Go processes.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ct_gosync_caller);
	__type(value, __u32);
} ct_gosync_callers SEC(".maps");

// ct_gosync_park: a goroutine queues on a semaphore and is about to park
// (entry of runtime.(*semaRoot).queue(root, addr, s, lifo): addr in rbx,
// the sudog s in rcx). It records the wait's start unless it is the same
// wait queued again, and takes the stack from the lock's slow path up: the
// leaf is internal/sync.(*Mutex).lockSlow for a Mutex, the wrapper
// (sync.runtime_SemacquireRWMutexR, sync.runtime_SemacquireRWMutex) for
// an RWMutex, as ct_gosync_enter records them.
SEC("uprobe")
int ct_gosync_park(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (!ct_is_target(pid))
		return 0;
	ct_count(CT_EV_GOSYNC);
	struct ct_uregs u = ct_read_uregs(ctx);
	// Up to queue's PUSH of rbp, rbp is semacquire1's frame record: the
	// wrapper's frame pointer and semacquire1's return into the wrapper.
	__u64 sema[2];
	if (bpf_probe_read_user(sema, sizeof(sema), (void *)u.bp))
		return 0;
	struct ct_gosync_caller c = {};
	c.ret = sema[1];
	c.pid = pid;
	__u32 *kind = bpf_map_lookup_elem(&ct_gosync_callers, &c);
	if (!kind)
		return 0;
	struct ct_gosync_g k = {};
	k.g = ctx->r14;
	k.pid = pid;
	__u64 addr = ctx->bx, sudog = ctx->cx;
	struct ct_gosync_start *old = bpf_map_lookup_elem(&ct_gosync_inflight, &k);
	if (old && old->sudog == sudog && old->addr == addr)
		return 0;
	struct ct_gosync_start s = {};
	s.kind = *kind;
	s.addr = addr;
	s.sudog = sudog;
	// The wrapper's frame record: its caller's frame pointer and the
	// return into its caller (lockSlow, or the caller of the inlined
	// RLock or Lock).
	__u64 wrap[2];
	struct ct_uregs w = {};
	if (!bpf_probe_read_user(wrap, sizeof(wrap), (void *)sema[0])) {
		if (s.kind == CT_GOSYNC_MUTEX) {
			w.ip = wrap[1];
			w.bp = wrap[0];
			w.sp = sema[0] + 16;
		} else {
			w.ip = sema[1];
			w.bp = sema[0];
			w.sp = u.bp + 16;
		}
	}
	s.stack = ct_user_stack_ret(CT_FAM_GOSYNC, pid, w, 0);
	s.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&ct_gosync_inflight, &k, &s, BPF_ANY);
	return 0;
}

// ct_gosync_add counts one wait of dur nanoseconds from s in process pid.
static __always_inline void ct_gosync_add(__u32 pid, struct ct_gosync_start *s, __u64 dur)
{
	struct ct_gosync_key k = {};
	k.stack = s->stack;
	k.addr = s->addr;
	k.pid = pid;
	k.kind = s->kind;
	__u32 gen = ct_gen_now();
	struct ct_agg *v = CT_AGG(ct_gosync, gen, &k, struct ct_agg, CT_DROP_MAP_FULL_GOSYNC);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, dur);
		ct_max(&v->max_ns, dur);
	}
}

// ct_gosync_wake: a goroutine gives back a sudog (entry of
// runtime.releaseSudog(s): s in rax). When it is the sudog the goroutine
// parked with, the goroutine runs again with the lock's semaphore and the
// wait ends. Every other call (a channel operation's sudog) finds no
// wait and costs the probe hit alone.
SEC("uprobe")
int ct_gosync_wake(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (!ct_is_target(pid))
		return 0;
	ct_count(CT_EV_GOSYNC);
	struct ct_gosync_g g = {};
	g.g = ctx->r14;
	g.pid = pid;
	struct ct_gosync_start *sp = bpf_map_lookup_elem(&ct_gosync_inflight, &g);
	if (!sp || sp->sudog != ctx->ax)
		return 0;
	struct ct_gosync_start s = *sp;
	bpf_map_delete_elem(&ct_gosync_inflight, &g);
	__u64 now = bpf_ktime_get_ns();
	ct_gosync_add(pid, &s, s.ts && s.ts <= now ? now - s.ts : 0);
	return 0;
}

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

	ct_gosync_add(pid, &s, dur);
	return 0;
}
