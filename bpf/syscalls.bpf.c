//go:build ignore

// syscalls object: the futex and io probe families. Both hook the raw
// syscall tracepoints (sys_enter, sys_exit), so they share one program on
// each: every program attached there runs for every syscall of every
// process on the machine, and a second pair of programs measured 170 ns
// more per futex call here (retpolines and return-stack mitigations make
// each program invocation dear). Each family's maps and handlers live in
// futex.bpf.h and io.bpf.h; futex_enabled and io_enabled select them.
#include "helpers.bpf.h"
#include "futex.bpf.h"
#include "io.bpf.h"

// Families enabled, set by the collector before load (a disabled family's
// code is removed by the verifier as dead).
const volatile bool futex_enabled = true;
const volatile bool io_enabled = true;

SEC("tp_btf/sys_enter")
int BPF_PROG(ct_sys_enter, struct pt_regs *regs, long nr)
{
	__u64 pid_tgid;
	if (!ct_in_target(&pid_tgid))
		return 0;
	if (futex_enabled)
		ct_futex_enter(regs, nr, pid_tgid);
	if (io_enabled)
		ct_io_enter(regs, nr, pid_tgid);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ct_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 pid_tgid;
	if (!ct_in_target(&pid_tgid))
		return 0;
	long nr = regs->orig_ax;
	if (futex_enabled)
		ct_futex_exit(ctx, regs, nr, pid_tgid, ret);
	if (io_enabled)
		ct_io_exit(ctx, regs, nr, pid_tgid);
	return 0;
}
