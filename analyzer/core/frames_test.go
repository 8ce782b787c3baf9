package core

import (
	"testing"

	"github.com/contend-dev/contend/recording"
	"github.com/google/go-cmp/cmp"
)

func TestGoPackage(t *testing.T) {
	for fn, want := range map[string]string{
		"sync.(*Mutex).Lock":                        "sync",
		"internal/sync.(*Mutex).lockSlow":           "internal/sync",
		"github.com/a/b.(*T).M":                     "github.com/a/b",
		"github.com/a/b.v2.F":                       "github.com/a/b",
		"main.main.func1":                           "main",
		"example.com/x.F[go.shape.int]":             "example.com/x",
		"example.com/x.(*T[go.shape.*uint8]).M":     "example.com/x",
		"pthread_mutex_lock":                        "",
		"std::mutex::lock":                          "",
		"libc.so.6+0x1f00":                          "",
		"internal/runtime/maps.(*Map).putSlotSmall": "internal/runtime/maps",
		"__new_sem_wait_slow64.constprop.0":         "",
		"do_lookup.isra.0":                          "",
		"main.init.0":                               "main",
	} {
		if got := GoPackage(fn); got != want {
			t.Errorf("goPackage(%q) = %q, want %q", fn, got, want)
		}
	}
}

func TestNormNative(t *testing.T) {
	for fn, want := range map[string]string{
		"__new_sem_wait_slow64.constprop.0": "new_sem_wait_slow64",
		"__pthread_mutex_lock@GLIBC_2.2.5":  "pthread_mutex_lock",
		"__GI___lll_lock_wait":              "lll_lock_wait",
		"flush_frames.part.0.cold":          "flush_frames",
		"pthread_cond_wait":                 "pthread_cond_wait",
	} {
		if got := NormNative(fn); got != want {
			t.Errorf("normNative(%q) = %q, want %q", fn, got, want)
		}
	}
	if !IsLockMachinery(recording.Frame{Func: "__new_sem_wait_slow64.constprop.0"}) {
		t.Error("a clone of glibc's semaphore wait is not lock machinery")
	}
}

func TestReceiverAndEnclosing(t *testing.T) {
	for fn, want := range map[string]string{
		"app.(*Manager).claim":         "app.(*Manager)",
		"app.(*Manager).claim.func1":   "app.(*Manager)",
		"app.Store.Get":                "app.Store",
		"app.worker":                   "",
		"app.worker.func1":             "",
		"app.(*T[go.shape.int]).M":     "app.(*T[go.shape.int])",
		"github.com/x/y.(*Srv).handle": "github.com/x/y.(*Srv)",
	} {
		if got := ReceiverType(fn); got != want {
			t.Errorf("receiverType(%q) = %q, want %q", fn, got, want)
		}
	}
	for fn, want := range map[string]string{
		"app.(*M).op.func1.2": "app.(*M).op",
		"app.main.gowrap1":    "app.main",
		"app.f":               "app.f",
	} {
		if got := EnclosingFunc(fn); got != want {
			t.Errorf("enclosingFunc(%q) = %q, want %q", fn, got, want)
		}
	}
}

func frames(fns ...string) []recording.Frame {
	out := make([]recording.Frame, len(fns))
	for i, f := range fns {
		out[i] = recording.Frame{Func: f}
	}
	return out
}

func TestPointIndexAndClass(t *testing.T) {
	tests := []struct {
		name   string
		stack  []recording.Frame
		state  string
		point  int
		class  WaitClass
		flavor LockFlavor
	}{
		{"go mutex wait", frames("runtime.gopark", "internal/sync.runtime_SemacquireMutex", "internal/sync.(*Mutex).lockSlow", "sync.(*Mutex).Lock", "app.f", "app.main"), "", 4, ClassLock, flavorMutex},
		{"rwmutex read", frames("sync.runtime_SemacquireRWMutexR", "sync.(*RWMutex).RLock", "app.get"), "sync.RWMutex.RLock", 2, ClassLock, FlavorRWRead},
		{"unlock", frames("sync.(*Mutex).Unlock", "app.f"), "", 1, ClassUnlock, flavorMutex},
		{"runtime lock under sync", frames("runtime.unlock", "runtime.semrelease1", "sync.(*Mutex).Unlock", "app.f"), "", 3, ClassRuntimeLock, flavorRuntime},
		{"select", frames("runtime.gopark", "runtime.selectgo", "app.handler"), "", 2, ClassIdle, FlavorNone},
		{"select state, frames elided", frames("app.handler"), "select", 0, ClassIdle, FlavorNone},
		{"lock inside select case", frames("sync.(*Mutex).Lock", "app.f"), "select", 1, ClassLock, flavorMutex},
		{"cond wait", frames("sync.runtime_notifyListWait", "sync.(*Cond).Wait", "app.pool"), "sync.Cond.Wait", 2, ClassIdle, FlavorNone},
		{"semacquire no sync frame", frames("runtime.semacquire1", "runtime.gcStart", "runtime.mallocgc", "app.alloc"), "semacquire", 3, ClassRuntimeWait, FlavorNone},
		{"gc assist", frames("app.alloc"), "GC assist wait", 0, ClassRuntimeWait, FlavorNone},
		{"chan send", frames("runtime.chansend1", "app.produce"), "chan send", 1, ClassOtherWait, FlavorNone},
		{"syscall plumbing skipped", frames("syscall.Syscall", "syscall.Fsync", "internal/poll.(*FD).Fsync", "os.(*File).Sync", "app.save"), "syscall", 3, ClassNone, FlavorNone},
		{"glibc mutex", frames("futex_wait", "__lll_lock_wait", "__pthread_mutex_lock@GLIBC_2.2.5", "worker_loop"), "", 3, ClassLock, flavorNative},
		{"epoll", frames("epoll_wait", "event_loop"), "", 1, ClassIdle, FlavorNone},
		{"runtime only", frames("runtime.mcall", "runtime.park_m"), "", -1, ClassNone, FlavorNone},
		{"sleep", frames("time.Sleep", "app.poll"), "sleep", 1, ClassIdle, FlavorNone},
		{"signal loop in syscall", frames("os/signal.signal_recv", "os/signal.loop"), "syscall", 0, ClassIdle, FlavorNone},
		{"kernel frames", []recording.Frame{{Func: "schedule", Kernel: true}, {Func: "futex_wait"}, {Func: "app_main"}}, "", 2, ClassNone, FlavorNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pi := PointIndex(tc.stack)
			if pi != tc.point {
				t.Errorf("pointIndex = %d, want %d", pi, tc.point)
			}
			sc := ClassifyGoroutine(tc.state, tc.stack, pi)
			if sc.Class != tc.class || sc.Flavor != tc.flavor {
				t.Errorf("class %d/%d, want %d/%d (%+v)", sc.Class, sc.Flavor, tc.class, tc.flavor, sc)
			}
			if (sc.Class == ClassIdle || sc.Class == ClassRuntimeWait || sc.Class == ClassOtherWait) && sc.Reason == "" {
				t.Errorf("no reason for class %d", sc.Class)
			}
		})
	}
}

func TestIOFrames(t *testing.T) {
	st := frames("syscall.Syscall", "syscall.Fsync", "internal/poll.(*FD).Fsync", "os.(*File).Sync", "app.(*j).save", "app.(*M).claim")
	if got := IOIndex(st, 5); got != 3 {
		t.Errorf("ioIndex = %d, want 3 (os.(*File).Sync, the outermost I/O frame)", got)
	}
	if got := IOIndex(st, 0); got != -1 {
		t.Errorf("ioIndex with end 0 = %d", got)
	}
	var got []bool
	for _, f := range []recording.Frame{{Func: "__libc_pwrite64"}, {Func: "fsync"}, {Func: "vfs_fsync_range", Kernel: true}, {Func: "os.Rename"}, {Func: "app.write"}, {Func: "memcpy"}} {
		got = append(got, isIOFrame(f))
	}
	if diff := cmp.Diff([]bool{true, true, true, true, false, false}, got); diff != "" {
		t.Errorf("isIOFrame (-want +got):\n%s", diff)
	}
}

func TestShortFunc(t *testing.T) {
	if got := ShortFuncName("github.com/contend-dev/contend/fixtures/stripe.(*sub).on"); got != "stripe.(*sub).on" {
		t.Errorf("shortFunc = %q", got)
	}
}

// TestCloneAtMatchesTheExpression: the word prefilter answers as the
// expression does, on clones, near misses and plain names.
func TestCloneAtMatchesTheExpression(t *testing.T) {
	for _, fn := range []string{
		"f.constprop.0", "g.isra.12", "h.part.3.cold", "k.lto_priv.0", "m.llvm.1234", "a.constprop.0.isra.1",
		"f.constprop.", "f.part.x", "part.3", "java.util.concurrent.locks.LockSupport.park",
		"github.com/x/y.(*T).m", "pthread_mutex_lock", "x.llvm.", "", "a.b.part.7",
	} {
		want := -1
		if loc := cloneSuffix.FindStringIndex(fn); loc != nil {
			want = loc[0]
		}
		if got := cloneAt(fn); got != want {
			t.Errorf("cloneAt(%q) = %d, the expression says %d", fn, got, want)
		}
	}
}
