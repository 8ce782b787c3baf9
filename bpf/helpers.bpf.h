//go:build ignore

// Maps, settings and helpers shared by every probe family. Each family's
// object declares these maps; the collector creates them once and hands the
// same maps to every object (CollectionOptions.MapReplacements), so stack
// ids, counters and the event log are common to all families.
#ifndef CT_HELPERS_BPF_H
#define CT_HELPERS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"

#define CT_EEXIST 17

// Target process (thread group id), set by the collector before load. Every
// program returns at once for any other process.
const volatile __u32 target_tgid = 0;

// Token buckets (GCRA): a bucket passes an event when its theoretical
// arrival time is at most tolerance ahead of now, then advances it by
// interval. interval is the per-CPU spacing (ncpu * 1e9 / rate) and
// tolerance = interval * (burst - 1). The collector computes them
// (collector/tokenbucket.go).
const volatile __u64 event_interval_ns = 50000;
const volatile __u64 event_tolerance_ns = 50000 * 255;
const volatile __u64 window_interval_ns = 2000000;
const volatile __u64 window_tolerance_ns = 2000000 * 15;

// ct_events: the event log and the stack windows.
// Records: struct ct_event or struct ct_window (first byte is the kind).
// Reader: the collector's ring buffer reader, which polls it every few
// tens of milliseconds: records are written with BPF_RB_NO_WAKEUP so the
// target never pays for waking the reader. Every failed output is counted
// (CT_DROP_RINGBUF_*). Size set by the collector before load.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} ct_events SEC(".maps");

// ct_counters: key enum ct_counter, value a per-CPU __u64 count.
// Reader: the collector sums the CPUs once a second; it names the counters
// from enum ct_counter in the object's BTF (the key type keeps it there). Increments are plain
// adds on this CPU's slot; a program interrupted by another on the same CPU
// (cpu-clock sample during a syscall probe) can lose one increment.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CT_NR_COUNTERS);
	__type(key, enum ct_counter);
	__type(value, __u64);
} ct_counters SEC(".maps");

// ct_stacks: stack id -> up to CT_STACK_DEPTH return addresses, user and
// kernel stacks alike. Without BPF_F_REUSE_STACKID an id never changes its
// stack; a new stack hashing to a taken bucket is lost and counted
// (CT_DROP_STACK_COLLISION). 16384 buckets keep collisions rare for the few
// thousand distinct stacks of a recording. Reader: the collector looks up
// each id once and caches it (entries are never deleted).
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, CT_STACK_DEPTH * sizeof(__u64));
} ct_stacks SEC(".maps");

// ct_named: stack id -> 1 once the collector has enough windows to name
// that stack; windows are no longer sent for it, leaving the window budget
// to stacks not yet named. Writer: the collector. Reader: ct_send_window.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __s32);
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

static __always_inline void ct_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&ct_counters, &idx);
	if (v)
		*v += 1;
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

// ct_stack_id records the stack of ctx (user when flags has
// BPF_F_USER_STACK) and returns its id, or CT_STACK_LOST after counting the
// failure.
static __always_inline __s32 ct_stack_id(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &ct_stacks, flags);
	if (id >= 0)
		return id;
	if (id == -CT_EEXIST)
		ct_count(CT_DROP_STACK_COLLISION);
	else
		ct_count(flags & BPF_F_USER_STACK ? CT_DROP_STACK_USER : CT_DROP_STACK_KERNEL);
	return CT_STACK_LOST;
}

// User-stack cache. bpf_get_stackid of a user stack cost about 1.3 µs per
// switch-out here (BPF run-time statistics of ct_sched_switch with and
// without it, on a two-thread futex ping-pong), and a blocking thread
// takes one at every switch-out, wake and long wait. A thread that
// blocks, wakes others or calls the kernel from the same place again
// walks the same frames again, so each call site keeps, per thread, the
// last walk: the user registers it started from, every 16-byte frame
// record (saved frame pointer, return address) it read, and the stack id
// it produced. A hit costs a task-storage lookup and one read per frame
// record, a few hundred nanoseconds for the short walks through code
// without frame pointers.
//
// Why a hit can never name another stack: the kernel's walk (x86
// perf_callchain_user) is a function of ip, bp and the frame records it
// reads, nothing else: it stores ip, then follows bp through frame
// records until a read fails or CT_STACK_DEPTH entries are stored (it may
// also stop earlier on its own checks, which look only at these same
// values and sp). A hit requires ip, sp and bp equal and every frame
// record re-read now equal, word for word, to the records of the cached
// walk, up to where that walk stopped, so the kernel would store the same
// return addresses and, hashing them, find the same id. A different
// caller at any depth differs in a return address or a saved frame
// pointer of some record on the walk, and misses. The one read not
// repeated is the last, failed one: the address it tried is the same (it
// is the saved frame pointer just compared), and reading it again would
// take a fault at every hit. Only if that page has been mapped since
// could a new walk go further, and then it would append frames after the
// cached ones, never change them. Two further limits:
// a program writing into the frames of its own thread while that thread
// sits in the kernel could make the cached records and the kernel's walk
// read different words (the walk itself would be reading torn frames),
// and 32-bit tasks, whose walk differs, are never cached.
//
// The chain is recorded only when the same registers come back: a thread
// preempted at ever-changing places (a spinner) pays one compare, not a
// second walk.
#define CT_UCACHE_FRAMES (CT_STACK_DEPTH - 1)
#define CT_USER_CS 0x33  // x86_64 __USER_CS: a 64-bit user task

enum ct_ucache_state {
	CT_UC_EMPTY = 0,  // nothing cached (or the last walk failed)
	CT_UC_REGS = 1,   // registers and id of the last walk, no frame records
	CT_UC_CHAIN = 2,  // registers, id and the frame records of the walk
};

// ct_ucache is one call site's cache for one thread (BPF-only: the
// collector never reads it).
struct ct_ucache {
	__u64 ip, sp, bp;
	__s32 stack_id;
	__u32 n;       // frame records read before the walk stopped
	__u8 state;    // enum ct_ucache_state
	__u8 _pad[7];
	__u64 chain[CT_UCACHE_FRAMES][2];  // (saved frame pointer, return address)
};

// CT_UCACHE declares a call site's cache: key a task (task storage, freed
// with the task), value struct ct_ucache, about 1 KiB per thread that
// reaches the site (five sites: at most 5 KiB per thread). Reader and
// writer: ct_user_stack only. A lookup the kernel refuses (one nested in
// another task-storage operation on the same CPU) returns NULL, and the
// site then takes the stack uncached.
#define CT_UCACHE(name)                                   \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);  \
		__uint(map_flags, BPF_F_NO_PREALLOC);     \
		__type(key, int);                         \
		__type(value, struct ct_ucache);          \
	} name SEC(".maps")

// ct_chain_walk reads the frame records from bp on, as the kernel's walk
// does. With record set it stores them in c (and their number in c->n);
// otherwise it compares them with c's and reports whether all matched up
// to where c's walk stopped.
static __always_inline bool ct_chain_walk(struct ct_ucache *c, __u64 bp, bool record)
{
	__u64 fp = bp;
	__u32 n = record ? CT_UCACHE_FRAMES : c->n;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < CT_UCACHE_FRAMES; i++) {
		if (i >= n)
			break;
		__u64 rec[2];
		if (bpf_probe_read_user(rec, sizeof(rec), (void *)fp)) {
			if (!record)
				return false;
			c->n = i;
			return true;
		}
		if (record) {
			c->chain[i][0] = rec[0];
			c->chain[i][1] = rec[1];
		} else if (rec[0] != c->chain[i][0] || rec[1] != c->chain[i][1]) {
			return false;
		}
		fp = rec[0];
	}
	if (record)
		c->n = CT_UCACHE_FRAMES;
	return true;
}

// ct_user_stack returns the user stack id of the current task, whose user
// registers are ip, sp, bp and cs, through the call site's cache (a
// CT_UCACHE map); task is the current task. Hits are counted in
// CT_INFO_STACK_CACHED.
static __always_inline __s32 ct_user_stack(void *ctx, void *cache, struct task_struct *task,
					   __u64 ip, __u64 sp, __u64 bp, __u64 cs)
{
	struct ct_ucache *c = NULL;
	if (cs == CT_USER_CS)
		c = bpf_task_storage_get(cache, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return ct_stack_id(ctx, BPF_F_USER_STACK);
	bool same = c->state != CT_UC_EMPTY && c->ip == ip && c->sp == sp && c->bp == bp;
	if (same && c->state == CT_UC_CHAIN && ct_chain_walk(c, bp, false)) {
		ct_count(CT_INFO_STACK_CACHED);
		return c->stack_id;
	}
	__s32 id = ct_stack_id(ctx, BPF_F_USER_STACK);
	if (id < 0) {
		c->state = CT_UC_EMPTY;
		return id;
	}
	c->ip = ip;
	c->sp = sp;
	c->bp = bp;
	c->stack_id = id;
	c->state = CT_UC_REGS;
	if (same) {
		ct_chain_walk(c, bp, true);
		c->state = CT_UC_CHAIN;
	}
	return id;
}

// ct_regs_stack is ct_user_stack for the current task at a syscall
// tracepoint, whose regs are the user registers saved at kernel entry.
static __always_inline __s32 ct_regs_stack(void *ctx, void *cache, struct pt_regs *regs)
{
	return ct_user_stack(ctx, cache, bpf_get_current_task_btf(), regs->ip, regs->sp, regs->bp,
			     regs->cs);
}

// ct_start_done and ct_start_set end and begin a reused start entry (see
// ct_futex_start): the entry is marked done (ts 0) before its other fields
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

// ct_send_window copies the user registers and up to CT_WINDOW_MAX bytes of
// user stack from sp to the ring buffer, for the collector to unwind with
// .eh_frame and name stack_id. Skipped when stack_id is already named;
// rate-limited by the window bucket.
static __always_inline void ct_send_window(__u32 family, __u32 tid, __s32 stack_id, __u64 ts,
					   __u64 now, __u64 ip, __u64 sp, __u64 bp)
{
	if (stack_id >= 0 && bpf_map_lookup_elem(&ct_named, &stack_id)) {
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
	w->h.tid = tid;
	w->h.stack_id = stack_id;
	w->h._pad = 0;
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

// ct_in_target reports whether the current task belongs to the target and
// returns its pid_tgid.
static __always_inline bool ct_in_target(__u64 *pid_tgid)
{
	*pid_tgid = bpf_get_current_pid_tgid();
	return (__u32)(*pid_tgid >> 32) == target_tgid;
}

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

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#endif
