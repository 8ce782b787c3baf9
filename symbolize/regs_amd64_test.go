package symbolize

import "golang.org/x/sys/unix"

// regsOf returns a stopped thread's unwind registers, its syscall number
// and the syscall's first argument.
func regsOf(r *unix.PtraceRegs) (Regs, uint64, uint64) {
	return Regs{IP: r.Rip, SP: r.Rsp, BP: r.Rbp}, r.Orig_rax, r.Rdi
}
