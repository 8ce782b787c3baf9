//go:build ignore

// Types of the I/O syscall probe family shared with the Go collector.
#ifndef CT_IO_H
#define CT_IO_H

struct ct_io_key {
	__u64 stack;     // CT_STACK_NONE below the I/O threshold
	__u32 pid;
	__u32 tid;
	__u32 nr;        // x86_64 syscall number
	__u32 _pad;
};

#endif
