//go:build ignore

// Maps, settings and helpers shared by every probe family. Each family's
// object declares these maps; the collector creates them once and hands the
// same maps to every object (CollectionOptions.MapReplacements), so the
// target set, stacks, counters and the event log are common to all
// families.
#ifndef CT_HELPERS_BPF_H
#define CT_HELPERS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"

#define CT_EEXIST 17

// The first address past user space on x86_64 (4-level paging; 5-level
// paging reaches further, but no return address of an ordinary process
// lies there).
#define CT_USER_TOP (1ULL << 47)

// ct_targets: the target set, a bitmap of thread group ids: bit (tgid &
// 63) of entry (tgid >> 6). 65536 entries cover PID_MAX_LIMIT (2^22).
// Every program tests the current (or switched, woken, sampled) task's
// tgid here first and returns at once for any other process: an array
// lookup the verifier inlines, a few instructions. Writers: the collector
// (the processes it resolves from -p, --comm and --cgroup, and those it
// finds in its scans) and the lifecycle probes in sched.bpf.c (forked
// children and exec'd processes in --comm and --cgroup modes; a process's
// bit is cleared when its last thread exits). Bits are set and cleared
// with atomic or/and.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} ct_targets SEC(".maps");

// ct_gen: key 0, value the generation (0 or 1) of the aggregate maps the
// probes write now. Every aggregate exists twice (CT_AGG_MAP, names ending
// _0 and _1); the collector flips the generation, waits for programs in
// flight, then reads and empties the maps of the other generation. The
// maps thus hold one drain period of data, never the whole recording: no
// entry of an exited thread or of a one-off stack stays behind.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ct_gen SEC(".maps");

// Token buckets (GCRA): a bucket passes an event when its theoretical
// arrival time is at most tolerance ahead of now, then advances it by
// interval. interval is the per-CPU spacing (ncpu * 1e9 / rate) and
// tolerance = interval * (burst - 1). The collector computes them
// (collector/tokenbucket.go).
const volatile __u64 event_interval_ns = 50000;
const volatile __u64 event_tolerance_ns = 50000 * 255;
const volatile __u64 window_interval_ns = 2000000;
const volatile __u64 window_tolerance_ns = 2000000 * 15;

// ct_events: the event log, the stack windows and the thread and process
// records. Records: struct ct_event or struct ct_window (first byte is the
// kind). Reader: the collector's ring buffer reader, which polls it every
// few tens of milliseconds: records are written with BPF_RB_NO_WAKEUP so
// the target never pays for waking the reader. Every failed output is
// counted (CT_DROP_RINGBUF_*). Size set by the collector before load.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} ct_events SEC(".maps");

// ct_counters: key enum ct_counter, value a per-CPU __u64 count.
// Reader: the collector sums the CPUs at every drain; it names the counters
// from enum ct_counter in the object's BTF (the key type keeps it there).
// Increments are plain adds on this CPU's slot; a program interrupted by
// another on the same CPU (a wakeup from an interrupt during a syscall
// probe) can lose one increment.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CT_NR_COUNTERS);
	__type(key, enum ct_counter);
	__type(value, __u64);
} ct_counters SEC(".maps");

// ct_stacks: stack hash -> struct ct_stack (process and frames). The
// probes walk a stack themselves, hash its frames (with the process id),
// key every aggregate by that hash and store the frames here unless the
// hash is present. A 64-bit hash does not collide in practice, so no
// stack is lost to a full bucket as in a BPF stack map. The collector
// reads and empties the map at every drain, after the aggregates (a
// program stores a stack before the aggregate that refers to it), and
// keeps the stacks itself; a stack that recurs is stored again once per
// drain period. A store that finds the map full is counted
// (CT_DROP_STACK_MAP_FULL): 16384 distinct stacks in one drain period.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ct_stack);
} ct_stacks SEC(".maps");

// ct_named: stack hash -> 1 once the collector has enough windows to name
// that stack; windows are no longer sent for it, leaving the window budget
// to stacks not yet named. Writer: the collector (it stops adding when the
// map is full: windows then go on for the stacks left). Reader:
// ct_send_window.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} ct_named SEC(".maps");

// ct_buckets: key enum ct_bucket_id, value the per-CPU theoretical arrival
// time of the bucket. Nested programs on one CPU can race on a slot; the
// loss is one token either way.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CT_NR_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} ct_buckets SEC(".maps");

// ct_scratch: key enum ct_family, value a per-CPU struct ct_window being
// filled before it is copied to the ring buffer (too large for the BPF
// stack). One slot per family, because only programs of different families
// can nest on one CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CT_NR_FAMILIES);
	__type(key, __u32);
	__type(value, struct ct_window);
} ct_scratch SEC(".maps");

// ct_stackbuf: key enum ct_family, value a per-CPU struct ct_stack: the
// frames of the stack being walked (one slot per family, as ct_scratch).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CT_NR_FAMILIES);
	__type(key, __u32);
	__type(value, struct ct_stack);
} ct_stackbuf SEC(".maps");

// ct_call_start: key pid_tgid (one entry per thread), value struct
// ct_call_start: the traced syscall the thread is asleep in, written by the
// switch-out probe (sched.bpf.c) when the thread goes to sleep inside the
// call, consumed (ts set to 0) at the thread's next switch-in by the futex
// and io probes, deleted when the thread exits. Only calls that sleep get
// an entry, so a thread's futex calls that return at once never touch this
// map, and no syscall of any process passes through a tracing hook. LRU so
// that a thread that exits unseen cannot pin an entry. Readers: the
// switch-in probes, and the collector, which reads the calls still in
// progress (ts != 0) at every drain and seeds the calls already in
// progress when it attaches (from /proc/PID/task/TID/syscall, with ts the
// start of the recording). A reader may see an entry being rewritten;
// ct_start_set writes ts last.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ct_call_start);
} ct_call_start SEC(".maps");

// ct_task_key returns task t's key in the per-thread maps: its pid_tgid.
static __always_inline __u64 ct_task_key(struct task_struct *t)
{
	return ((__u64)t->tgid << 32) | (__u32)t->pid;
}

// ct_irq: key CT_IRQ_HARD or CT_IRQ_SOFT, value the per-CPU nesting depth
// of that context, kept by the entry and exit tracepoints of every kind of
// hard interrupt that can wake a task (device handlers, the local timer
// that runs hrtimer callbacks, irq_work, function-call IPIs) and of
// softirqs (sched.bpf.c). The sched_waking probes read it to tell a wakeup
// by a task from one by an interrupt that merely interrupted that task: a
// futex wait's timer fires in an interrupt, perhaps on top of a thread in
// the middle of a futex wake. Reader: the programs.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} ct_irq SEC(".maps");

#define CT_IRQ_HARD 0
#define CT_IRQ_SOFT 1

// ct_irq_depth_of returns this CPU's nesting depth of interrupt context
// key.
static __always_inline __u32 ct_irq_depth_of(__u32 key)
{
	__u32 *depth = bpf_map_lookup_elem(&ct_irq, &key);
	return depth ? *depth : 0;
}

// ct_queued_ns sets *ns to how long thread t, being switched in on this
// CPU (sched_switch, t the next task), waited on a run queue since it was
// last queued: the kernel's own run-delay accounting (sched_info, the
// run_delay of /proc/PID/schedstat), its enqueue time last_queued against
// this run queue's clock, both in the scheduler's clock and both read
// before the switch's own accounting (sched_info_arrive, after the
// tracepoint) clears last_queued. It stands in for a wake the
// sched_waking probes did not see: on the test machine no BPF program
// runs in an interrupt taken over the threads of one process (the VM's
// init), though ftrace records the interrupt's wakes; a timer that fires
// there wakes a target's thread unseen. False when the kernel keeps no
// such record (no CONFIG_SCHED_INFO) or t was not queued.
static __always_inline bool ct_queued_ns(struct task_struct *t, __u64 *ns)
{
	if (!bpf_core_field_exists(t->sched_info.last_queued) || !bpf_core_field_exists(t->se.cfs_rq))
		return false;
	__u64 q = BPF_CORE_READ(t, sched_info.last_queued);
	if (!q)
		return false;
	// This CPU's run queue, reached through t's own: the scheduler
	// keeps a task's se.cfs_rq on the CPU it is on (set_task_rq), and t
	// is being switched in here. (With group scheduling, which every
	// distribution kernel has; without it the field is absent.)
	__u64 c = BPF_CORE_READ(t, se.cfs_rq, rq, clock);
	if (!c || c < q)
		return false;
	*ns = c - q;
	return true;
}

// ct_by_task reports whether a sched_waking fired in the context of the
// task cur itself: not in an interrupt that merely interrupted it, and not
// on the idle task.
static __always_inline bool ct_by_task(struct task_struct *cur)
{
	return cur->pid != 0 && ct_irq_depth_of(CT_IRQ_HARD) == 0 && ct_irq_depth_of(CT_IRQ_SOFT) == 0;
}

// CT_AGG_MAP declares the two generations (name_0, name_1) of an aggregate
// hash map (see ct_gen). Reader: the collector, which drains the
// generation not being written.
#define CT_AGG_MAP(name, key_t, val_t, entries)           \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_HASH);          \
		__uint(max_entries, entries);             \
		__type(key, key_t);                       \
		__type(value, val_t);                     \
	} name##_0 SEC(".maps");                          \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_HASH);          \
		__uint(max_entries, entries);             \
		__type(key, key_t);                       \
		__type(value, val_t);                     \
	} name##_1 SEC(".maps")

static __always_inline void ct_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&ct_counters, &idx);
	if (v)
		*v += 1;
}

// ct_is_target reports whether process tgid is in the target set.
static __always_inline bool ct_is_target(__u32 tgid)
{
	__u32 k = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&ct_targets, &k);
	return w && ((*w >> (tgid & 63)) & 1);
}

// ct_set_target adds process tgid to the target set (or removes it) and
// reports whether that changed it.
static __always_inline bool ct_set_target(__u32 tgid, bool on)
{
	__u32 k = tgid >> 6;
	__u64 *w = bpf_map_lookup_elem(&ct_targets, &k);
	if (!w)
		return false;
	__u64 bit = 1ULL << (tgid & 63);
	__u64 old;
	if (on)
		old = __sync_fetch_and_or(w, bit);
	else
		old = __sync_fetch_and_and(w, ~bit);
	return !!(old & bit) != on;
}

// ct_gen_now returns the generation of the aggregate maps to write.
static __always_inline __u32 ct_gen_now(void)
{
	__u32 k = 0;
	__u32 *g = bpf_map_lookup_elem(&ct_gen, &k);
	return g ? (*g & 1) : 0;
}

// ct_take reports whether bucket id has a token at now, and takes it.
static __always_inline bool ct_take(__u32 id, __u64 now)
{
	__u64 *tat = bpf_map_lookup_elem(&ct_buckets, &id);
	if (!tat)
		return false;
	__u64 interval = id == CT_BUCKET_WINDOW ? window_interval_ns : event_interval_ns;
	__u64 tolerance = id == CT_BUCKET_WINDOW ? window_tolerance_ns : event_tolerance_ns;
	__u64 t = *tat;
	if (t < now)
		t = now;
	if (t - now > tolerance)
		return false;
	*tat = t + interval;
	return true;
}

// ct_uregs are the user registers a stack walk and a stack window start
// from.
struct ct_uregs {
	__u64 ip, sp, bp;
};

// ct_read_uregs reads the user registers saved in regs (all zero when
// regs is NULL).
static __always_inline struct ct_uregs ct_read_uregs(struct pt_regs *regs)
{
	struct ct_uregs u = {};
	if (regs) {
		u.ip = BPF_CORE_READ(regs, ip);
		u.sp = BPF_CORE_READ(regs, sp);
		u.bp = BPF_CORE_READ(regs, bp);
	}
	return u;
}

// ct_mix folds v into the running stack hash h (a multiply-rotate mix of
// each frame, as in 64-bit MurmurHash).
static __always_inline __u64 ct_mix(__u64 h, __u64 v)
{
	v *= 0x87c37b91114253d5ULL;
	v = (v << 31) | (v >> 33);
	v *= 0x4cf5ad432745937fULL;
	h ^= v;
	h = (h << 27) | (h >> 37);
	return h * 5 + 0x52dce729;
}

// ct_store_stack finishes the hash h of the stack in s (s->n frames) and
// stores the stack in ct_stacks unless it is there; it returns the hash.
static __always_inline __u64 ct_store_stack(struct ct_stack *s, __u64 h)
{
	h ^= s->n;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	if (h < CT_STACK_FIRST)
		h += CT_STACK_FIRST;
	long err = bpf_map_update_elem(&ct_stacks, &h, s, BPF_NOEXIST);
	if (err && err != -CT_EEXIST)
		ct_count(CT_DROP_STACK_MAP_FULL);
	return h;
}

// ct_user_stack_ret walks a user stack as ct_user_stack does (below), with ret, when not 0, as the second
// frame: the return address at the stack pointer when u was taken at a
// function's first instruction, before the function pushed its frame
// record (a uprobe at a function's entry; the frame-pointer walk from
// there starts at the caller's caller).
static __always_inline __u64 ct_user_stack_ret(__u32 family, __u32 pid, struct ct_uregs u, __u64 ret)
{
	__u64 ip = u.ip, sp = u.sp, bp = u.bp;
	struct ct_stack *s = bpf_map_lookup_elem(&ct_stackbuf, &family);
	if (!s || !ip) {
		ct_count(CT_DROP_STACK_USER);
		return CT_STACK_LOST;
	}
	s->pid = pid;
	s->pcs[0] = ip;
	__u64 h = ct_mix(pid, ip);
	__u32 n = 1, first = 1;
	if (ret) {
		s->pcs[1] = ret;
		h = ct_mix(h, ret);
		n = first = 2;
	}
	__u64 fp = bp, lo = sp;
	for (__u32 i = first; i < CT_STACK_DEPTH; i++) {
		if ((fp & 7) || fp < lo || fp - sp >= CT_STACK_SPAN)
			break;
		__u64 rec[2];
		if (bpf_probe_read_user(rec, sizeof(rec), (void *)fp))
			break;
		if (rec[1] < 4096 || rec[1] >= CT_USER_TOP)
			break;
		s->pcs[i & (CT_STACK_DEPTH - 1)] = rec[1];
		h = ct_mix(h, rec[1]);
		n = i + 1;
		lo = fp + 16;
		fp = rec[0];
	}
	s->n = n;
	return ct_store_stack(s, h);
}

// ct_user_stack walks the user stack of process pid from its registers u,
// stores it (ct_stacks) and returns its hash, or CT_STACK_LOST.
//
// The walk follows frame pointers, as the kernel's own does, but accepts a
// frame record only where a frame record can be: 8-byte aligned, above the
// previous one and within CT_STACK_SPAN of the stack pointer, with a
// return address in user space. Code built without frame pointers leaves
// data in rbp, and the kernel's walk then reads "frames" out of it, a new
// stack at nearly every event, which fills any stack map within seconds;
// these checks end such walks at the first word that cannot be a frame, so
// a stack through such code is its leaf and the frames that checked out.
// The collector names the stacks of such code from stack windows it
// unwinds with .eh_frame (ct_send_window).
static __always_inline __u64 ct_user_stack(__u32 family, __u32 pid, struct ct_uregs u)
{
	return ct_user_stack_ret(family, pid, u, 0);
}

// ct_kernel_stack stores the kernel stack of ctx (ct_stacks) and returns
// its hash, or CT_STACK_LOST.
static __always_inline __u64 ct_kernel_stack(void *ctx, __u32 family, __u32 pid)
{
	struct ct_stack *s = bpf_map_lookup_elem(&ct_stackbuf, &family);
	if (!s) {
		ct_count(CT_DROP_STACK_KERNEL);
		return CT_STACK_LOST;
	}
	long len = bpf_get_stack(ctx, s->pcs, sizeof(s->pcs), 0);
	if (len <= 0) {
		ct_count(CT_DROP_STACK_KERNEL);
		return CT_STACK_LOST;
	}
	__u32 n = (__u32)len / 8;
	s->pid = 0;
	s->n = n;
	__u64 h = 0x6b65726e656cULL; // "kernel": kernel stacks belong to no process
	for (__u32 i = 0; i < CT_STACK_DEPTH; i++) {
		if (i >= n)
			break;
		h = ct_mix(h, s->pcs[i & (CT_STACK_DEPTH - 1)]);
	}
	return ct_store_stack(s, h);
}

// ct_task_kernel_stack stores the kernel stack of task t, which is not
// running (a sleeping thread at its switch-in: the stack it slept on,
// unwound from its saved registers, as /proc/PID/stack shows it), in
// ct_stacks and returns its hash, or CT_STACK_LOST.
static __always_inline __u64 ct_task_kernel_stack(struct task_struct *t, __u32 family)
{
	struct ct_stack *s = bpf_map_lookup_elem(&ct_stackbuf, &family);
	if (!s) {
		ct_count(CT_DROP_STACK_KERNEL);
		return CT_STACK_LOST;
	}
	long len = bpf_get_task_stack(t, s->pcs, sizeof(s->pcs), 0);
	if (len <= 0) {
		ct_count(CT_DROP_STACK_KERNEL);
		return CT_STACK_LOST;
	}
	__u32 n = (__u32)len / 8;
	s->pid = 0;
	s->n = n;
	__u64 h = 0x6b65726e656cULL; // "kernel", as ct_kernel_stack: the same stack hashes the same
	for (__u32 i = 0; i < CT_STACK_DEPTH; i++) {
		if (i >= n)
			break;
		h = ct_mix(h, s->pcs[i & (CT_STACK_DEPTH - 1)]);
	}
	return ct_store_stack(s, h);
}

// Local views of the kernel's file structures, with only the fields read
// (CO-RE flavors: "___ct" is dropped when they are matched against the
// kernel's types). Using the kernel's own types would put their whole
// graph into the objects' BTF, and clang orders some of the forward
// declarations that graph brings differently from run to run, which
// make check-generate would see as a change.
struct super_block___ct {
	dev_t s_dev;
} __attribute__((preserve_access_index));

struct inode___ct {
	unsigned long i_ino;
	struct super_block___ct *i_sb;
} __attribute__((preserve_access_index));

struct file___ct {
	struct inode___ct *f_inode;
} __attribute__((preserve_access_index));

struct fdtable___ct {
	unsigned int max_fds;
	struct file___ct **fd;
} __attribute__((preserve_access_index));

struct files_struct___ct {
	struct fdtable___ct *fdt;
} __attribute__((preserve_access_index));

struct task_struct___ct {
	struct files_struct___ct *files;
} __attribute__((preserve_access_index));

// ct_inode_id sets *dev and *ino to the device and inode of in (a
// struct inode of the kernel).
static __always_inline void ct_inode_id(void *in, __u32 *dev, __u64 *ino)
{
	struct inode___ct *i = in;
	*ino = BPF_CORE_READ(i, i_ino);
	*dev = BPF_CORE_READ(i, i_sb, s_dev);
}

// ct_fd_inode sets *dev and *ino to the device and inode of the file
// behind descriptor fd of task t (left as they are when fd is not open):
// four pointer reads through the task's file table, bounded by its size.
static __always_inline void ct_fd_inode(struct task_struct *t, int fd, __u32 *dev, __u64 *ino)
{
	if (fd < 0)
		return;
	struct fdtable___ct *fdt = BPF_CORE_READ((struct task_struct___ct *)t, files, fdt);
	if (!fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return;
	struct file___ct **fds = BPF_CORE_READ(fdt, fd);
	struct file___ct *f = NULL;
	if (!fds || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return;
	struct inode___ct *in = BPF_CORE_READ(f, f_inode);
	if (in)
		ct_inode_id(in, dev, ino);
}

// ct_emit_sleep sends a CT_K_SLEEP or CT_K_TRYFAIL record if the event
// bucket has a token.
static __always_inline void ct_emit_sleep(struct ct_sleep *e, __u64 now)
{
	if (!ct_take(CT_BUCKET_EVENT, now)) {
		ct_count(CT_SAMPLED_EVENT);
		return;
	}
	if (bpf_ringbuf_output(&ct_events, e, sizeof(*e), BPF_RB_NO_WAKEUP))
		ct_count(CT_DROP_RINGBUF_EVENT);
}

// ct_start_done and ct_start_set end and begin a reused start entry (see
// ct_call_start): the entry is marked done (ts 0) before its other fields
// are rewritten and gets its new ts last, with volatile stores the
// compiler keeps in order (x86 keeps stores in order), so that a reader
// that sees ts != 0 sees the fields written before it.
static __always_inline void ct_start_done(__u64 *ts)
{
	*(volatile __u64 *)ts = 0;
}

static __always_inline void ct_start_set(__u64 *ts, __u64 v)
{
	*(volatile __u64 *)ts = v;
}

// ct_emit sends e to the event log if the event bucket has a token.
static __always_inline void ct_emit(struct ct_event *e, __u64 now)
{
	if (!ct_take(CT_BUCKET_EVENT, now)) {
		ct_count(CT_SAMPLED_EVENT);
		return;
	}
	if (bpf_ringbuf_output(&ct_events, e, sizeof(*e), BPF_RB_NO_WAKEUP))
		ct_count(CT_DROP_RINGBUF_EVENT);
}

// ct_emit_task sends a CT_K_TASK record (never rate-limited).
static __always_inline void ct_emit_task(__u8 op, __u32 pid, __u32 tid)
{
	struct ct_event e = {};
	e.kind = CT_K_TASK;
	e.op = op;
	e.pid = pid;
	e.tid = tid;
	e.ts = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&ct_events, &e, sizeof(e), BPF_RB_NO_WAKEUP))
		ct_count(CT_DROP_RINGBUF_TASK);
}

// ct_send_window copies the user registers and up to CT_WINDOW_MAX bytes of
// user stack from sp to the ring buffer, for the collector to unwind with
// .eh_frame and name the stack hash. Skipped when the stack is already
// named; rate-limited by the window bucket.
static __always_inline void ct_send_window(__u32 family, __u32 pid, __u32 tid, __u64 stack,
					   __u64 ts, __u64 now, struct ct_uregs u)
{
	__u64 ip = u.ip, sp = u.sp, bp = u.bp;
	if (stack >= CT_STACK_FIRST && bpf_map_lookup_elem(&ct_named, &stack)) {
		ct_count(CT_INFO_WINDOW_SKIPPED);
		return;
	}
	if (!ct_take(CT_BUCKET_WINDOW, now)) {
		ct_count(CT_SAMPLED_WINDOW);
		return;
	}
	struct ct_window *w = bpf_map_lookup_elem(&ct_scratch, &family);
	if (!w)
		return;
	w->h.kind = CT_K_WINDOW;
	w->h.family = family;
	w->h.pid = pid;
	w->h.tid = tid;
	w->h._pad = 0;
	w->h.stack = stack;
	w->h.ts = ts;
	w->h.ip = ip;
	w->h.sp = sp;
	w->h.bp = bp;

	// First piece: from sp to the next chunk boundary, then whole chunks
	// until the window is full or a piece cannot be read.
	__u32 len = CT_WINDOW_CHUNK - (sp & (CT_WINDOW_CHUNK - 1));
	if (len > CT_WINDOW_CHUNK || len == 0)
		return;
	if (bpf_probe_read_user(w->data, len, (void *)sp)) {
		len = 0;
	} else {
		for (int i = 0; i < CT_WINDOW_MAX / CT_WINDOW_CHUNK - 1; i++) {
			if (len + CT_WINDOW_CHUNK > CT_WINDOW_MAX)
				break;
			__u32 off = len & (CT_WINDOW_MAX - 1);
			if (bpf_probe_read_user(w->data + off, CT_WINDOW_CHUNK, (void *)(sp + off)))
				break;
			len += CT_WINDOW_CHUNK;
		}
	}
	if (len + CT_WINDOW_CHUNK <= CT_WINDOW_MAX)
		ct_count(CT_INFO_WINDOW_PARTIAL);
	w->h.len = len;
	__u64 size = sizeof(w->h) + (len & (CT_WINDOW_MAX * 2 - 1));
	if (size > sizeof(*w))
		return;
	if (bpf_ringbuf_output(&ct_events, w, size, BPF_RB_NO_WAKEUP))
		ct_count(CT_DROP_RINGBUF_WINDOW);
}

// ct_log2 returns floor(log2(v)), 0 for v <= 1.
static __always_inline __u32 ct_log2(__u64 v)
{
	__u32 r = 0, shift;
	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

// ct_max raises *dst to v. Racy by design: two CPUs raising one maximum at
// once can lose the smaller raise; counts and totals use atomic adds.
static __always_inline void ct_max(__u64 *dst, __u64 v)
{
	if (*dst < v)
		*dst = v;
}

// ct_btf_types keeps in the objects' BTF the record types that no map
// declares (the ring buffer's records), for the collector's layout test.
// Never read.
const volatile struct {
	struct ct_event event;
	struct ct_window_hdr window;
	struct ct_sleep sleep;
} ct_btf_types = {};

// ct_zero is the initial value of every aggregate entry (large enough for
// the largest value type; values are checked against it at compile time).
const volatile __u8 ct_zero[512] = {};

// CT_LOOKUP_OR_INIT returns the value of key in map, inserting a zero value
// first when there is none; NULL (after counting full_counter) when the map
// is full. Two CPUs inserting the same key at once is fine: BPF_NOEXIST lets
// one win and both then update the same entry.
#define CT_LOOKUP_OR_INIT(map, key, val_t, full_counter)                      \
	({                                                                    \
		_Static_assert(sizeof(val_t) <= sizeof(ct_zero), "ct_zero too small"); \
		val_t *_v = bpf_map_lookup_elem(map, key);                    \
		if (!_v) {                                                    \
			bpf_map_update_elem(map, key, (void *)ct_zero, BPF_NOEXIST); \
			_v = bpf_map_lookup_elem(map, key);                   \
			if (!_v)                                              \
				ct_count(full_counter);                       \
		}                                                             \
		_v;                                                           \
	})

// CT_AGG is CT_LOOKUP_OR_INIT on generation gen of the aggregate map name
// (CT_AGG_MAP). Each generation has its own call site, so the verifier
// resolves each to its map's own lookup function.
#define CT_AGG(name, gen, key, val_t, full_counter)                                  \
	((gen) ? CT_LOOKUP_OR_INIT(&name##_1, key, val_t, full_counter)              \
	       : CT_LOOKUP_OR_INIT(&name##_0, key, val_t, full_counter))

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#endif
