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

// ct_emit sends e to the event log if the event bucket has a token.
static __always_inline void ct_emit(struct ct_event *e, __u64 now)
{
	if (!ct_take(CT_BUCKET_EVENT, now)) {
		ct_count(CT_DROP_RATELIMIT_EVENT);
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
		ct_count(CT_DROP_RATELIMIT_WINDOW);
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
