//go:build ignore

// Types of the I/O syscall probe family shared with the Go collector.
#ifndef CT_IO_H
#define CT_IO_H

// ct_io_start: an I/O syscall in progress, from sys_enter to sys_exit (ts
// 0 once it ended), with the user registers at sys_enter (see
// ct_futex_start).
struct ct_io_start {
	__u64 ts;
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 nr;
	__u32 _pad;
};

struct ct_io_key {
	__u32 tid;
	__u32 nr;        // x86_64 syscall number
	__s32 stack_id;  // CT_STACK_NONE below the I/O threshold
	__u32 _pad;
};

#endif
