//go:build ignore

// sched probe family: off-CPU time of the target's threads per (thread,
// state left in, user stack), the part of it spent runnable but not
// running, and wake edges waker -> wakee with the waker's context and
// stack. The same object holds what every family needs from the
// scheduler: the switch-out probe times the traced syscalls (futex waits,
// I/O calls) that leave the CPU, and the lifecycle probes keep the target
// set and the per-thread state current as threads and processes come and
// go. It also records each sleep of a target thread in the kernel
// (uninterruptible, or in a syscall other than a futex) of at least the
// stack threshold, with its kernel stack, file and waker (CT_K_SLEEP),
// and the failed non-blocking file lock attempts (CT_K_TRYFAIL). The
// collector attaches only the programs the selected families need.
#include "helpers.bpf.h"
#include "calls.bpf.h"
#include "sched.h"

#define CT_TASK_RUNNING 0x0
#define CT_TASK_INTERRUPTIBLE 0x1
#define CT_TASK_UNINTERRUPTIBLE 0x2
#define CT_TASK_DEAD 0x80
#define CT_TASK_REPORT 0x7f

// Families enabled, set by the collector before load: sched_enabled for
// the off-CPU and wake views, futex_enabled and io_enabled for the calls
// the switch-out probe times.
const volatile bool sched_enabled = true;
const volatile bool futex_enabled = true;
const volatile bool io_enabled = true;

// Intervals at least this long go to the event log: runnable-but-not-running
// (runq) and uninterruptible sleep (dsleep). Set by the collector.
const volatile __u64 runq_event_ns = 100000;
const volatile __u64 dsleep_event_ns = 10000;

// Sleeps in the kernel (uninterruptible, or inside a system call other
// than a futex) at least this long carry a kernel stack and a CT_K_SLEEP
// record: the futex family's stack threshold, so that one setting says
// which waits pay for a stack. kstack_enabled turns the records off.
// Set by the collector.
const volatile __u64 stack_threshold_ns = 10000;
const volatile bool kstack_enabled = true;

// Target selection (enum ct_target_mode) and, in CT_TARGET_COMM mode, the
// name matched against a task's comm after exec. Set by the collector.
const volatile __u32 target_mode = CT_TARGET_PIDS;
const volatile char target_comm[16] = {};

// ct_cgroup: index 0 holds the target cgroup (CT_TARGET_CGROUP mode);
// exec checks the exec'ing task against it and its descendants. Writer:
// the collector.
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ct_cgroup SEC(".maps");

// ct_sched_start: key a target thread (task storage, freed with the
// task), value struct ct_sched_start; written at switch-out, marked
// runnable by sched_waking, consumed at switch-in (off_ts set to 0).
// Task storage rather than a hash map keyed by pid_tgid: its lookup is a
// pointer chase from the task, and it goes with the thread. Reader: these
// programs only.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ct_sched_start);
} ct_sched_start SEC(".maps");

// ct_sched_pcs_st: key a target thread (task storage), value struct
// ct_sched_pcs: written at an uninterruptible sleep's switch-out, read at
// its switch-in when the sleep gets a CT_K_SLEEP record. Reader: these
// programs only.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ct_sched_pcs);
} ct_sched_pcs_st SEC(".maps");

// ct_offcpu: key struct ct_offcpu_key, value struct ct_offcpu_val (two
// generations, see ct_gen).
CT_AGG_MAP(ct_offcpu, struct ct_offcpu_key, struct ct_offcpu_val, 32768);

// ct_offcpu_spill: ct_offcpu's overflow. A key that finds ct_offcpu full
// is kept here with stack CT_STACK_SPILLED, so a thread's off-CPU time by
// state survives when its stacks no longer fit in one drain period. One
// entry per thread and state.
CT_AGG_MAP(ct_offcpu_spill, struct ct_offcpu_key, struct ct_offcpu_val, 16384);

// ct_wakes: key struct ct_wakes_key, value the number of wakeups (two
// generations).
CT_AGG_MAP(ct_wakes, struct ct_wakes_key, __u64, 16384);


static __always_inline __u8 ct_state_of(bool preempt, unsigned int prev_state)
{
	if (preempt || (prev_state & CT_TASK_REPORT) == CT_TASK_RUNNING)
		return CT_ST_RUNNABLE;
	if (prev_state & CT_TASK_UNINTERRUPTIBLE)
		return CT_ST_UNINTERRUPTIBLE;
	if (prev_state & CT_TASK_INTERRUPTIBLE)
		return CT_ST_SLEEPING;
	return CT_ST_OTHER;
}

// ct_call_switch_out starts timing the traced syscall prev (the current
// task, going to sleep at now) is in, if it is in one and the call has no
// start yet. ur holds prev's user registers, u what the stack walks start
// from (ct_syscall_nr tells which call it is in). The call's user stack
// is walked here, while prev's memory is the current one, and kept in the
// entry: the switch-in that ends the call runs in another task. *stack
// receives it (0 when no call started), for the off-CPU view to reuse.
static __always_inline void ct_call_switch_out(struct task_struct *prev, struct pt_regs *ur,
					       struct ct_uregs u, long nr, __u64 now, __u64 *stack)
{
	bool fut = futex_enabled && ct_is_futex(nr);
	if (!fut && !(io_enabled && ct_is_io(nr)))
		return;
	__u64 key = ct_task_key(prev);
	struct ct_call_start *cur = bpf_map_lookup_elem(&ct_call_start, &key);
	if (cur && cur->ts && cur->nr == nr && cur->sp == u.sp) {
		// Seeded at attach and not yet ended: the same call, whose
		// stack nobody could walk until now.
		if (cur->stack < CT_STACK_FIRST) {
			cur->stack = ct_user_stack(CT_FAM_SCHED, prev->tgid, u);
			ct_send_window(CT_FAM_SCHED, prev->tgid, prev->pid, cur->stack, now, now, u);
		}
		*stack = cur->stack;
		return;
	}
	struct ct_call_start s = {};
	s.nr = nr;
	if (fut) {
		struct ct_futex_call c = ct_decode_futex(ur, nr);
		if (c.op == 0 || c.op > CT_OP_LAST_WAIT)
			return;
		s.op = c.op;
		s.addr = c.addr;
		s.shared = c.shared;
		__u32 owner = 0;
		if (c.op == CT_OP_LOCK_PI || c.op == CT_OP_LOCK_PI2) {
			// PI futexes hold the owner's tid in the word itself.
			if (!bpf_probe_read_user(&owner, sizeof(owner), (void *)c.addr))
				owner &= FUTEX_TID_MASK;
		} else if (nr == NR_futex && (__u32)BPF_CORE_READ(ur, dx) == CT_GLIBC_LOCKED_WAITERS &&
			   (c.op == CT_OP_WAIT || c.op == CT_OP_WAIT_BITSET)) {
			// A glibc lock waits for the word to leave 2 (locked,
			// with waiters): only then is the word a
			// pthread_mutex_t's, with its holder beside it. Any
			// other word's neighbour is someone else's data,
			// perhaps a counter that differs at every wait, and
			// each value would be an aggregate of its own.
			if (bpf_probe_read_user(&owner, sizeof(owner),
						(void *)(c.addr + CT_GLIBC_OWNER_OFFSET)))
				owner = 0;
		}
		s.owner = owner;
	}
	__u32 pid = prev->tgid;
	s.ip = u.ip;
	s.sp = u.sp;
	s.bp = u.bp;
	s.stack = ct_user_stack(CT_FAM_SCHED, pid, u);
	*stack = s.stack;
	ct_send_window(CT_FAM_SCHED, pid, prev->pid, s.stack, now, now, u);
	if (!cur) {
		s.ts = now;
		if (!bpf_map_update_elem(&ct_call_start, &key, &s, BPF_NOEXIST))
			return;
		// The sleep's wake wrote an entry since the lookup
		// (ct_mark_woken, from another CPU): fill that one in,
		// keeping its marks.
		cur = bpf_map_lookup_elem(&ct_call_start, &key);
		if (!cur) {
			ct_count(CT_DROP_START_UPDATE);
			return;
		}
	}
	ct_start_done(&cur->ts);
	cur->addr = s.addr;
	cur->ip = s.ip;
	cur->sp = s.sp;
	cur->bp = s.bp;
	cur->nr = s.nr;
	cur->owner = s.owner;
	cur->op = s.op;
	cur->shared = s.shared;
	// cur->timeout and cur->woken_ts are left as they are: the
	// sleep's wake can come first, from another CPU between the
	// scheduler taking prev off its run queue and this tracepoint
	// (ct_mark_woken).
	cur->stack = s.stack;
	ct_start_set(&cur->ts, now);
}

// ct_sleep_object fills in s the object of the call nr that prev (the
// current task, whose user registers are ur) goes to sleep in: its first
// two arguments and, for an fcntl record lock, the struct flock it points
// to, which only the current task can read. Calls that take no fd leave
// s->fd -1.
static __always_inline void ct_sleep_object(struct ct_sched_start *s, struct pt_regs *ur, long nr)
{
	if (!ct_fd_call(nr))
		return;
	s->fd = (__s32)BPF_CORE_READ(ur, di);
	s->cmd = (__u32)BPF_CORE_READ(ur, si);
	if (nr != NR_fcntl || !ct_fcntl_lock_cmd(s->cmd))
		return;
	struct ct_user_flock fl;
	if (bpf_probe_read_user(&fl, sizeof(fl), (void *)BPF_CORE_READ(ur, dx)))
		return;
	s->l_type = fl.l_type;
	s->l_whence = fl.l_whence;
	s->l_start = fl.l_start;
	s->l_len = fl.l_len;
}

// ct_offcpu_out records prev's switch-out for the off-CPU view. stack is
// prev's user stack when ct_call_switch_out walked it, else 0; nr the
// syscall prev sleeps in (-1: none, or prev was preempted).
static __always_inline void ct_offcpu_out(void *ctx, struct task_struct *prev, struct pt_regs *ur,
					  struct ct_uregs u, __u64 stack, long nr, bool preempt,
					  unsigned int prev_state, __u64 now)
{
	ct_count(CT_EV_SWITCH);
	__u32 pid = prev->tgid, tid = prev->pid;
	struct ct_sched_start s = {};
	s.off_ts = now;
	s.state = ct_state_of(preempt, prev_state);
	if (s.state == CT_ST_RUNNABLE)
		s.runnable_ts = now;
	s.nr = nr;
	s.fd = -1;
	s.l_type = -1;
	if (kstack_enabled && nr >= 0 && ur)
		ct_sleep_object(&s, ur, nr);
	// prev is the current task: its user stack is at hand.
	s.stack = stack ? stack : ct_user_stack(CT_FAM_SCHED, pid, u);
	struct ct_sched_start *st = bpf_task_storage_get(&ct_sched_start, prev, 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st) {
		// An entry still open: the switch-in that ended it was not seen,
		// and its time off CPU is lost. On the test machine the kernel
		// traces no switch away from the threads of the VM's init
		// process (ftrace neither), so a thread they preempted comes
		// back unseen; see also ct_queued_ns.
		if (st->off_ts)
			ct_count(CT_DROP_SWITCH_IN_UNSEEN);
		*st = s;
	} else {
		ct_count(CT_DROP_START_UPDATE);
	}
	if (ur && !stack)
		ct_send_window(CT_FAM_SCHED, pid, tid, s.stack, now, now, u);
	// An uninterruptible sleep: its innermost kernel frames now, while
	// the scheduler's functions and the one that waited are on the
	// stack (a walk at the switch-in skips them). Bounded to
	// CT_SCHED_PCS frames; interruptible sleeps (a futex, a pipe, a file
	// lock) wait in functions the switch-in walk shows.
	if (kstack_enabled && s.state == CT_ST_UNINTERRUPTIBLE) {
		struct ct_sched_pcs *p = bpf_task_storage_get(&ct_sched_pcs_st, prev, 0,
							      BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (p) {
			long len = bpf_get_stack(ctx, p->pcs, sizeof(p->pcs), 0);
			p->n = len > 0 ? (__u32)len / 8 : 0;
		}
	}
}

// ct_sleep_emit sends the CT_K_SLEEP record of next's sleep s, which
// ended (next was woken) at end, with next's kernel stack: next has not
// run since it went to sleep, so its stack is the one it slept on. The
// record's token is taken first: a sleep the rate limit leaves out costs
// no stack walk.
static __always_inline void ct_sleep_emit(struct task_struct *next, struct ct_sched_start *s, __u64 end,
					  __u64 now)
{
	ct_count(CT_EV_KSLEEP);
	if (!ct_take(CT_BUCKET_EVENT, now)) {
		ct_count(CT_SAMPLED_EVENT);
		return;
	}
	struct ct_sleep e = {};
	e.e.kind = CT_K_SLEEP;
	e.e.op = s->state;
	e.e.sys = s->nr >= 0 ? (__u16)s->nr : CT_SYS_NONE;
	e.e.pid = next->tgid;
	e.e.tid = next->pid;
	e.e.peer = s->waker;
	e.e.stack = s->stack;
	e.e.ts = s->off_ts;
	e.e.dur = end - s->off_ts;
	e.e.addr = ct_task_kernel_stack(next, CT_FAM_SCHED);
	e.waker_pid = s->waker_pid;
	e.fd = s->fd;
	e.cmd = s->cmd;
	e.l_type = s->l_type;
	e.l_whence = s->l_whence;
	e.l_start = s->l_start;
	e.l_len = s->l_len;
	ct_fd_inode(next, s->fd, &e.dev, &e.ino);
	if (s->state == CT_ST_UNINTERRUPTIBLE) {
		struct ct_sched_pcs *p = bpf_task_storage_get(&ct_sched_pcs_st, next, 0, 0);
		if (p && p->n <= CT_SCHED_PCS) {
			e.nspcs = p->n;
			__builtin_memcpy(e.spcs, p->pcs, sizeof(e.spcs));
			p->n = 0;
		}
	}
	if (bpf_ringbuf_output(&ct_events, &e, sizeof(e), BPF_RB_NO_WAKEUP))
		ct_count(CT_DROP_RINGBUF_EVENT);
}

// ct_offcpu_in accounts next's time off CPU at its switch-in at now.
static __always_inline void ct_offcpu_in(struct task_struct *next, __u64 now)
{
	struct ct_sched_start *sp = bpf_task_storage_get(&ct_sched_start, next, 0, 0);
	if (!sp || !sp->off_ts) {
		ct_count(CT_INFO_NO_START);
		return;
	}
	struct ct_sched_start s = *sp;
	sp->off_ts = 0;
	if (now < s.off_ts)
		return;

	__u64 runq = 0;
	if (s.runnable_ts && s.runnable_ts <= now) {
		runq = now - s.runnable_ts;
	} else if (!s.runnable_ts && ct_queued_ns(next, &runq)) {
		// A sleep whose wake ct_sched_waking did not see (it came
		// before the switch-out, or where no BPF program runs, see
		// ct_queued_ns): its run-queue time is the scheduler's record,
		// which starts at the enqueue, a little after the wake.
		ct_count(CT_INFO_WAKE_SCHED_OFFCPU);
		if (runq > now - s.off_ts)
			runq = now - s.off_ts;
		s.runnable_ts = now - runq;
	}
	__u32 pid = next->tgid, tid = next->pid;
	struct ct_offcpu_key k = {};
	k.pid = pid;
	k.tid = tid;
	k.stack = s.stack;
	k.state = s.state;
	__u32 gen = ct_gen_now();
	struct ct_offcpu_val *v = CT_AGG(ct_offcpu, gen, &k, struct ct_offcpu_val,
					 CT_INFO_OFFCPU_SPILLED);
	if (!v) {
		k.stack = CT_STACK_SPILLED;
		v = CT_AGG(ct_offcpu_spill, gen, &k, struct ct_offcpu_val, CT_DROP_MAP_FULL_OFFCPU);
	}
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, now - s.off_ts);
		if (runq)
			__sync_fetch_and_add(&v->runq_ns, runq);
	}

	if (runq >= runq_event_ns) {
		struct ct_event e = {};
		e.kind = CT_K_RUNQ;
		e.op = s.state;
		e.pid = pid;
		e.tid = tid;
		e.stack = s.stack;
		e.ts = s.runnable_ts;
		e.dur = runq;
		ct_emit(&e, now);
	}
	if (s.state == CT_ST_UNINTERRUPTIBLE) {
		__u64 end = s.runnable_ts ? s.runnable_ts : now;
		if (end - s.off_ts >= dsleep_event_ns) {
			struct ct_event e = {};
			e.kind = CT_K_DSLEEP;
			e.op = s.state;
			e.pid = pid;
			e.tid = tid;
			e.stack = s.stack;
			e.ts = s.off_ts;
			e.dur = end - s.off_ts;
			ct_emit(&e, now);
		}
	}
	// A sleep in the kernel: uninterruptible (a lock the kernel holds: an
	// rwsem, an inode's mutex, a page being read), or inside a system
	// call that is not a futex (a file lock, a pipe, a socket). A futex
	// sleep is interruptible and the futex family names it; short
	// sleeps carry nothing, as short futex waits carry no stack.
	if (kstack_enabled && (s.state == CT_ST_UNINTERRUPTIBLE ||
			       (s.state == CT_ST_SLEEPING && s.nr >= 0 && !ct_is_futex(s.nr)))) {
		__u64 end = s.runnable_ts ? s.runnable_ts : now;
		if (end >= s.off_ts && end - s.off_ts >= stack_threshold_ns)
			ct_sleep_emit(next, &s, end, now);
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ct_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = 0;
	if (ct_is_target(prev->tgid) && !(prev_state & CT_TASK_DEAD)) {
		now = bpf_ktime_get_ns();
		struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(prev);
		struct ct_uregs u = ct_read_uregs(ur);
		__u64 stack = 0;
		// A call is timed while its thread sleeps: a thread preempted
		// inside one is runnable, waiting for a CPU and not for the
		// call (the off-CPU view counts that time as run-queue time).
		bool asleep = !preempt && (prev_state & CT_TASK_REPORT) != CT_TASK_RUNNING;
		long nr = asleep ? ct_syscall_nr(ur) : -1;
		if (ur && asleep && (futex_enabled || io_enabled))
			ct_call_switch_out(prev, ur, u, nr, now, &stack);
		if (sched_enabled)
			ct_offcpu_out(ctx, prev, ur, u, stack, nr, preempt, prev_state, now);
	}
	if (!sched_enabled || !ct_is_target(next->tgid))
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	ct_offcpu_in(next, now);
	return 0;
}

// ct_wake_context classifies the context sched_waking fired in: inside a
// hard interrupt or a softirq by the depth counters, else the idle task or
// an ordinary task. (The stack the program runs on cannot tell: interrupts
// from user mode run on the task's own kernel stack, and the kernel may
// run tracing programs on a private stack.)
static __always_inline __u8 ct_wake_context(struct task_struct *cur)
{
	if (ct_irq_depth_of(CT_IRQ_HARD) > 0)
		return CT_CTX_HARDIRQ;
	if (ct_irq_depth_of(CT_IRQ_SOFT) > 0)
		return CT_CTX_SOFTIRQ;
	if (cur->pid == 0)
		return CT_CTX_IDLE;
	return CT_CTX_TASK;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(ct_sched_waking, struct task_struct *p)
{
	if (!ct_is_target(p->tgid))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	ct_count(CT_EV_WAKEUP);
	struct task_struct *cur = bpf_get_current_task_btf();
	struct ct_wakes_key k = {};
	k.wakee_pid = p->tgid;
	k.wakee = p->pid;
	k.ctx = ct_wake_context(cur);
	struct ct_sched_start *sp = bpf_task_storage_get(&ct_sched_start, p, 0, 0);
	if (sp && sp->off_ts && !sp->runnable_ts) {
		sp->runnable_ts = now;
		// The sleep's waker, kept for its CT_K_SLEEP record: the
		// thread whose release (an unlock, a write into a pipe) ended
		// the sleep.
		if (k.ctx == CT_CTX_TASK) {
			sp->waker = cur->pid;
			sp->waker_pid = cur->tgid;
		}
	}

	k.stack = CT_STACK_NONE;
	if (k.ctx == CT_CTX_TASK) {
		k.waker_pid = cur->tgid;
		k.waker = cur->pid;
		if (ct_is_target(cur->tgid)) {
			struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(cur);
			if (ur)
				k.stack = ct_user_stack(CT_FAM_SCHED, cur->tgid, ct_read_uregs(ur));
		}
	}
	__u32 gen = ct_gen_now();
	__u64 *v = CT_AGG(ct_wakes, gen, &k, __u64, CT_DROP_MAP_FULL_WAKES);
	if (v)
		__sync_fetch_and_add(v, 1);

	struct ct_event e = {};
	e.kind = CT_K_WAKEUP;
	e.op = k.ctx;
	e.pid = k.waker_pid;
	e.tid = k.waker;
	e.peer = p->pid;
	e.stack = k.stack;
	e.ts = now;
	e.addr = p->tgid;
	ct_emit(&e, now);
	return 0;
}

#define CT_EAGAIN 11
#define CT_EACCES 13
#define CT_LOCK_SH 1
#define CT_LOCK_EX 2
#define CT_LOCK_NB 4
#define CT_F_WRLCK 1
#define CT_FL_SLEEP 128     // a blocking request (F_SETLKW, flock without LOCK_NB)
#define CT_FL_OFDLCK 1024   // an open file description lock (F_OFD_*)
#define CT_OFFSET_MAX 0x7fffffffffffffffLL

// struct file_lock as of Linux 6.9 (its common part in c, struct
// file_lock_core) and before; only the fields read (CO-RE flavors, see
// helpers.bpf.h).
struct file_lock_core___ct {
	unsigned int flc_flags;
	unsigned char flc_type;
} __attribute__((preserve_access_index));

struct file_lock___new {
	struct file_lock_core___ct c;
	long long fl_start;
	long long fl_end;
} __attribute__((preserve_access_index));

struct file_lock___old {
	unsigned int fl_flags;
	unsigned char fl_type;
	long long fl_start;
	long long fl_end;
} __attribute__((preserve_access_index));

// ct_try_fail records a failed non-blocking lock attempt of the current
// task: fcntl(F_SETLK or F_OFD_SETLK) or flock(LOCK_NB) on inode in that
// returned ret, EAGAIN or EACCES (fcntl's two answers for a lock held by
// another), with the lock asked for (fl: its type and absolute range),
// the call's descriptor and the user stack. Every such failure is
// counted; the records are rate-limited as the other events.
static __always_inline void ct_try_fail(void *in, void *fl, int ret, long nr)
{
	if ((ret != -CT_EAGAIN && ret != -CT_EACCES) || !in || !fl)
		return;
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 pid = pt >> 32, tid = (__u32)pt;
	if (!kstack_enabled || !ct_is_target(pid))
		return;
	struct file_lock___new *fn = fl;
	struct file_lock___old *fo = fl;
	bool core = bpf_core_field_exists(fn->c);
	unsigned int flags = core ? BPF_CORE_READ(fn, c.flc_flags) : BPF_CORE_READ(fo, fl_flags);
	if (flags & CT_FL_SLEEP)
		return;
	ct_count(CT_EV_LOCK_TRY_FAIL);
	__u64 now = bpf_ktime_get_ns();
	if (!ct_take(CT_BUCKET_EVENT, now)) {
		ct_count(CT_SAMPLED_EVENT);
		return;
	}
	struct task_struct *cur = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(cur);
	struct ct_uregs u = ct_read_uregs(regs);
	__u8 type = core ? BPF_CORE_READ(fn, c.flc_type) : BPF_CORE_READ(fo, fl_type);
	struct ct_sleep e = {};
	e.e.kind = CT_K_TRYFAIL;
	e.e.sys = nr;
	e.e.pid = pid;
	e.e.tid = tid;
	e.e.ts = now;
	e.e.stack = ct_user_stack(CT_FAM_TRY, pid, u);
	e.e.addr = CT_STACK_NONE;
	e.err = -ret;
	e.fd = -1;
	if (regs && ct_syscall_nr(regs) == nr)
		e.fd = (__s32)BPF_CORE_READ(regs, di);
	ct_inode_id(in, &e.dev, &e.ino);
	e.l_type = -1;
	if (nr == NR_fcntl) {
		e.cmd = (flags & CT_FL_OFDLCK) ? CT_F_OFD_SETLK : CT_F_SETLK;
		__s64 start = core ? BPF_CORE_READ(fn, fl_start) : BPF_CORE_READ(fo, fl_start);
		__s64 end = core ? BPF_CORE_READ(fn, fl_end) : BPF_CORE_READ(fo, fl_end);
		e.l_type = type;
		e.l_whence = 0; // the kernel's range is absolute: SEEK_SET
		e.l_start = start;
		e.l_len = end == CT_OFFSET_MAX ? 0 : end - start + 1;
	} else {
		e.cmd = (type == CT_F_WRLCK ? CT_LOCK_EX : CT_LOCK_SH) | CT_LOCK_NB;
	}
	ct_send_window(CT_FAM_TRY, pid, tid, e.e.stack, now, now, u);
	if (bpf_ringbuf_output(&ct_events, &e, sizeof(e), BPF_RB_NO_WAKEUP))
		ct_count(CT_DROP_RINGBUF_EVENT);
}

// ct_fcntl_setlk and ct_flock_try see the results of the file locking
// code's requests: a failed non-blocking attempt never sleeps, so the
// scheduler probes cannot see it. Tracepoints of fs/locks.c rather than a
// hook on the syscalls: only lock requests pass through them (those of
// other processes for the target test), while a syscall tracepoint slows
// every syscall of every process, and return probes need kprobe events
// or BPF trampolines that some kernels lack (the test machine's has
// neither). Optional: a kernel without them records the rest, with a
// note.
SEC("tp_btf/fcntl_setlk")
int BPF_PROG(ct_fcntl_setlk, void *inode, void *fl, int ret)
{
	ct_try_fail(inode, fl, ret, NR_fcntl);
	return 0;
}

SEC("tp_btf/flock_lock_inode")
int BPF_PROG(ct_flock_try, void *inode, void *fl, int ret)
{
	ct_try_fail(inode, fl, ret, NR_flock);
	return 0;
}

static __always_inline void ct_irq_depth(__u32 key, bool enter)
{
	__u32 *depth = bpf_map_lookup_elem(&ct_irq, &key);
	if (!depth)
		return;
	if (enter)
		*depth += 1;
	else if (*depth > 0) // attached in the middle of one: exit without entry
		*depth -= 1;
}

// CT_IRQ_PROGS defines the entry and exit programs of one interrupt kind.
#define CT_IRQ_PROGS(tp, key)                                    \
	SEC("tp_btf/" #tp "_entry")                              \
	int ct_##tp##_in(void *ctx) { ct_irq_depth(key, true); return 0; } \
	SEC("tp_btf/" #tp "_exit")                               \
	int ct_##tp##_out(void *ctx) { ct_irq_depth(key, false); return 0; }

CT_IRQ_PROGS(irq_handler, CT_IRQ_HARD)
CT_IRQ_PROGS(local_timer, CT_IRQ_HARD)
CT_IRQ_PROGS(irq_work, CT_IRQ_HARD)
CT_IRQ_PROGS(call_function, CT_IRQ_HARD)
CT_IRQ_PROGS(call_function_single, CT_IRQ_HARD)
CT_IRQ_PROGS(softirq, CT_IRQ_SOFT)

// Lifecycle of the target set.

// ct_proc_exit frees a target thread's call entry as it exits and tells
// the collector, which folds the exited thread's aggregates; the last
// thread of a process takes the process out of the target set (its pid
// may be reused by a process nobody asked for).
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ct_proc_exit, struct task_struct *p)
{
	__u32 pid = p->tgid, tid = p->pid;
	if (!ct_is_target(pid))
		return 0;
	__u64 key = ((__u64)pid << 32) | tid;
	bpf_map_delete_elem(&ct_call_start, &key);
	ct_emit_task(CT_TASK_THREAD_EXIT, pid, tid);
	// The exiting thread has already left the count of live threads
	// (do_exit decrements signal->live before this tracepoint).
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		ct_set_target(pid, false);
		ct_emit_task(CT_TASK_PROC_EXIT, pid, tid);
	}
	return 0;
}

// ct_proc_fork adds the forked children of target processes in --comm
// and --cgroup modes: a child inherits its parent's name and cgroup.
SEC("tp_btf/sched_process_fork")
int BPF_PROG(ct_proc_fork, struct task_struct *parent, struct task_struct *child)
{
	if (target_mode == CT_TARGET_PIDS || child->pid != child->tgid)
		return 0;
	if (!ct_is_target(parent->tgid))
		return 0;
	if (ct_set_target(child->tgid, true))
		ct_emit_task(CT_TASK_PROC_JOIN, child->tgid, child->pid);
	return 0;
}

// ct_comm_matches compares a task's comm with target_comm.
static __always_inline bool ct_comm_matches(struct task_struct *p)
{
	char comm[16];
	BPF_CORE_READ_STR_INTO(&comm, p, comm);
	for (int i = 0; i < 16; i++) {
		if (comm[i] != target_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

// ct_proc_exec adds a process that exec'd into the target name (--comm)
// or inside the target cgroup (--cgroup), and takes out one that exec'd
// into something else.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ct_proc_exec, struct task_struct *p)
{
	if (target_mode == CT_TARGET_PIDS)
		return 0;
	bool match;
	if (target_mode == CT_TARGET_COMM)
		match = ct_comm_matches(p);
	else
		match = bpf_current_task_under_cgroup(&ct_cgroup, 0) == 1;
	if (ct_set_target(p->tgid, match))
		ct_emit_task(match ? CT_TASK_PROC_JOIN : CT_TASK_PROC_LEAVE, p->tgid, p->pid);
	return 0;
}

// ct_target_update adds a process to the target set or removes it, for the
// collector (run with BPF_PROG_TEST_RUN): the bits are changed with the
// same atomic operations as the lifecycle probes use, so neither side can
// undo the other's change.
SEC("syscall")
int ct_target_update(struct ct_target_arg *a)
{
	ct_set_target(a->pid, a->on);
	return 0;
}
