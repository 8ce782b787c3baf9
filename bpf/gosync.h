//go:build ignore

// Types of the Go lock probe family shared with the Go collector.
#ifndef CT_GOSYNC_H
#define CT_GOSYNC_H

// What a probed Go function waits for: the attach cookie of its uprobes,
// and ct_gosync_key.kind.
enum ct_gosync_kind {
	CT_GOSYNC_MUTEX = 1,     // sync.Mutex (internal/sync.(*Mutex).lockSlow)
	CT_GOSYNC_RLOCK = 2,     // sync.RWMutex read side (sync.runtime_SemacquireRWMutexR)
	CT_GOSYNC_WLOCK = 3,     // sync.RWMutex writer waiting for readers (sync.runtime_SemacquireRWMutex)
};

// ct_gosync_g names one goroutine: its g pointer in process pid.
struct ct_gosync_g {
	__u64 g;
	__u32 pid;
	__u32 _pad;
};

// ct_gosync_start is a goroutine inside a probed slow path, or parked on
// a lock's semaphore: since when, from which stack, on which lock, and
// (parked) the sudog it queued, which names the wait its wake-up ends.
struct ct_gosync_start {
	__u64 ts;
	__u64 stack;
	__u64 addr;
	__u64 sudog;
	__u32 kind;
	__u32 _pad;
};

// ct_gosync_caller names a return address in process pid: one after a
// CALL in a runtime function that parks a goroutine for a lock.
struct ct_gosync_caller {
	__u64 ret;
	__u32 pid;
	__u32 _pad;
};

// ct_gosync_key: Go lock waits per process, user stack (taken at the slow
// path's entry), lock and kind.
struct ct_gosync_key {
	__u64 stack;
	__u64 addr;   // the lock: the *Mutex lockSlow runs on, or the RWMutex's semaphore word
	__u32 pid;
	__u32 kind;   // enum ct_gosync_kind
};

#endif
