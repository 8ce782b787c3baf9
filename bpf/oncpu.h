//go:build ignore

// Types of the on-CPU sampling probe family shared with the Go collector.
#ifndef CT_ONCPU_H
#define CT_ONCPU_H

struct ct_oncpu_key {
	__u64 ustack;  // user stack hash, CT_STACK_LOST when none
	__u64 kstack;  // kernel stack hash, CT_STACK_NONE for samples in user mode
	__u32 pid;
	__u32 tid;
};

struct ct_oncpu_val {
	__u64 count;
	__u64 period_ns;  // sum of the sample periods (cpu-clock: nanoseconds)
};

#endif
