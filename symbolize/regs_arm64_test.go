package symbolize

import "golang.org/x/sys/unix"

// regsOf returns a stopped thread's unwind registers, its syscall number
// (x8) and the syscall's first argument (x0); the frame pointer is x29.
func regsOf(r *unix.PtraceRegs) (Regs, uint64, uint64) {
	return Regs{IP: r.Pc, SP: r.Sp, BP: r.Regs[29]}, r.Regs[8], r.Regs[0]
}
