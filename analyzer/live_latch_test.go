package analyzer

import (
	"slices"
	"testing"

	"github.com/contend-dev/contend/recording"
)

func pgFrames(names ...string) []recording.Frame {
	out := make([]recording.Frame, len(names))
	for i, n := range names {
		out[i] = recording.Frame{Func: n, Module: "postgres"}
	}
	return out
}

func TestNameWords(t *testing.T) {
	for name, want := range map[string][]string{
		"XactLockTableWait":     {"xact", "lock", "table", "wait"},
		"LWLockAcquire":         {"lwlock", "acquire"},
		"row_lock_acquire":      {"row", "lock", "acquire"},
		"WaitEventSetWaitBlock": {"wait", "event", "set", "wait", "block"},
	} {
		if got := nameWords(name); !slices.Equal(got, want) {
			t.Errorf("nameWords(%q) = %q, want %q", name, got, want)
		}
	}
}

// A PostgreSQL backend waiting for a row's transaction lock sleeps in
// epoll_wait under LockAcquireExtended: its point is the acquisition
// path's outermost frame, XactLockTableWait. The same backend idle, waiting for its client, sleeps
// in the same call under no lock-named frame ("Block" is no lock).
func TestLatchPoint(t *testing.T) {
	lockWait := pgFrames("epoll_wait", "WaitEventSetWaitBlock", "WaitEventSetWait", "WaitLatch", "ProcSleep",
		"WaitOnLock", "LockAcquireExtended", "XactLockTableWait", "heap_update", "ExecUpdate", "PostgresMain")
	pi, call, ok := latchPoint(lockWait)
	if !ok || lockWait[pi].Func != "XactLockTableWait" || call != "epoll_wait" {
		t.Errorf("lock wait: point %d, call %q, ok %v", pi, call, ok)
	}
	idle := pgFrames("epoll_wait", "WaitEventSetWaitBlock", "WaitEventSetWait", "secure_read", "pq_recvbuf",
		"pq_getbyte", "SocketBackend", "ReadCommand", "PostgresMain", "BackendRun", "main")
	if _, _, ok := latchPoint(idle); ok {
		t.Error("an idle backend's wait for its client taken for a latch wait")
	}
	// A lock-named frame right under the thread's entry names no point.
	if _, _, ok := latchPoint(pgFrames("epoll_wait", "lock_loop", "main")); ok {
		t.Error("a wait under main's own lock-named loop has no caller to point at")
	}
	if _, _, ok := latchPoint(pgFrames("nanosleep", "row_lock_acquire", "update_row")); ok {
		t.Error("a timed sleep taken for a latch wait")
	}
}
