//go:build ignore

// Types of the on-CPU sampling probe family shared with the Go collector.
#ifndef CT_ONCPU_H
#define CT_ONCPU_H

struct ct_oncpu_key {
	__u32 tid;
	__s32 ustack;  // user stack id, CT_STACK_LOST when none
	__s32 kstack;  // kernel stack id, CT_STACK_NONE for samples in user mode
	__u32 _pad;
};

struct ct_oncpu_val {
	__u64 count;
	__u64 period_ns;  // sum of the sample periods (cpu-clock: nanoseconds)
};

#endif
