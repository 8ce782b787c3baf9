package live

import (
	"testing"

	"github.com/contend-dev/contend/recording"
)

// Keys never carry a raw address: a global lock is keyed by its symbol
// and the offset of its structure's base, a shared one by its mapping, a
// heap lock by the point that waits for it, module-relative.
func TestLockKeys(t *testing.T) {
	waiter := &liveSample{tid: 7, frames: []recording.Frame{
		{Func: "__lll_lock_wait", Module: "libc.so.6"},
		{Func: "pthread_mutex_lock", Module: "libc.so.6"},
		{Func: "update", Module: "app"},
		{Func: "main", Module: "app"},
	}}
	word := func(addr uint64, name string, st recording.LockStat) *futexWord {
		st.Addr = addr
		return &futexWord{addr: addr, name: name, stat: st, role: roleMutex, waitS: []*liveSample{waiter},
			waiters: map[int]bool{7: true}, wakers: map[int]bool{}, wokeWaiters: map[int]bool{}}
	}
	for _, c := range []struct {
		name string
		w    *futexWord
		want string
	}{
		{"global", word(0x55d0a000, "table_lock+0x10 (app)", recording.LockStat{}), "app:table_lock+0x10"},
		{"shared", word(0x7f0000001000, "", recording.LockStat{Shared: &recording.SharedLock{Dev: "00:01", Inode: 71, Offset: 0x40, Path: "/dev/shm/pool"}}), "shared /dev/shm/pool+0x40"},
		{"heap", word(0x5600dead0, "", recording.LockStat{}), "waited at app!update"},
	} {
		ld := &Data{rec: &recording.Recording{}, threads: map[int]*liveThread{}, ev: indexEvents(nil)}
		g := &LockGroup{words: []*futexWord{c.w}, waiters: map[int]bool{7: true}, wakers: map[int]bool{}, owners: map[int]uint64{}}
		ld.waits = c.w.waitS
		if got := ld.liveLockKey(g); got != c.want {
			t.Errorf("%s: key %q, want %q", c.name, got, c.want)
		}
	}
}
