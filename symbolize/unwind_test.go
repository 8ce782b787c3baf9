package symbolize

import (
	"slices"
	"strings"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// Names glibc gives pthread_mutex_lock; which one shows depends on the
// symbol tables available (.dynsym exports pthread_mutex_lock, the debug
// file's .symtab adds the internal aliases, all at one address).
var mutexLockNames = []string{"pthread_mutex_lock", "__pthread_mutex_lock", "___pthread_mutex_lock"}

// physical returns the frames that are not inline expansions.
func physical(frames []recording.Frame) []recording.Frame {
	var out []recording.Frame
	for _, f := range frames {
		if !f.Inlined {
			out = append(out, f)
		}
	}
	return out
}

// libcHasDebugFile reports whether p found a separate debug file for libc.
func libcHasDebugFile(p *Process) bool {
	p.impl.mu.Lock()
	defer p.impl.mu.Unlock()
	for _, o := range p.impl.objects {
		if o != nil && strings.HasPrefix(o.name, "libc.so") && o.dbg != nil {
			return true
		}
	}
	return false
}

// TestUnwindGlibcMutexWait is the reason this unwinder exists: a thread
// blocked in pthread_mutex_lock sits in glibc, which Debian builds without
// frame pointers. Unwinding the copied stack with .eh_frame must still
// reach the caller of pthread_mutex_lock and beyond, whether the program
// itself keeps frame pointers or not, and whether or not glibc's debug
// file is installed.
func TestUnwindGlibcMutexWait(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	builds := []struct {
		name  string
		flags []string
	}{
		{"frame-pointers", []string{"-O2", "-g", "-fno-omit-frame-pointer"}},
		{"no-frame-pointers", []string{"-O2", "-g", "-fomit-frame-pointer"}},
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			bin := buildC(t, dir, "ledger.c", "ledger-"+b.name, b.flags...)
			tg := startTarget(t, bin, "4")
			lock := tg.fields(t)["lock"]
			c := captureBlocked(t, tg.pid(), lock)
			t.Logf("thread %d: ip=0x%x sp=0x%x bp=0x%x, %d bytes of stack", c.tid, c.regs.IP, c.regs.SP, c.regs.BP, len(c.window))

			for _, mode := range []struct {
				name string
				opts Options
			}{
				{"without-debug-files", Options{DebugDirs: []string{}}},
				{"default-debug-dirs", Options{}},
			} {
				t.Run(mode.name, func(t *testing.T) {
					p, st, complete := unwindCaptured(t, tg.pid(), mode.opts, c)
					checkMutexWaitStack(t, st.Frames, libcHasDebugFile(p))
					if !complete {
						t.Errorf("walk did not reach the outermost frame (thread start)")
					}

					checkTruncatedWindows(t, p, c)

					fpcs, fcomplete := p.impl.unwindWith(c.regs, c.window, methodFramePointer)
					t.Logf("for comparison, the frame-pointer walk (complete=%v):\n%s", fcomplete, describe(p.Stack(fpcs).Frames))
				})
			}
		})
	}
}

// checkTruncatedWindows unwinds the captured stack from every shorter
// window (in 8-byte steps): each walk must stop honestly, giving a prefix
// of the full walk, complete only when it is the full walk.
func checkTruncatedWindows(t *testing.T, p *Process, c *captured) {
	t.Helper()
	full, _ := p.Unwind(c.regs, c.window)
	for n := 0; n <= len(c.window); n += 8 {
		pcs, complete := p.Unwind(c.regs, c.window[:n])
		if len(pcs) > len(full) || !slices.Equal(pcs, full[:len(pcs)]) {
			t.Fatalf("window of %d bytes: %x is not a prefix of the full walk %x", n, pcs, full)
		}
		if complete && len(pcs) != len(full) {
			t.Fatalf("window of %d bytes: complete with %d of %d frames", n, len(pcs), len(full))
		}
	}
}

// checkMutexWaitStack checks lock wait -> pthread_mutex_lock ->
// account_transfer -> teller -> thread start, on physical frames.
func checkMutexWaitStack(t *testing.T, frames []recording.Frame, libcDebug bool) {
	t.Helper()
	ph := physical(frames)
	if len(ph) < 5 {
		t.Fatalf("only %d physical frames:\n%s", len(ph), describe(frames))
	}
	isLibc := func(f recording.Frame) bool { return strings.HasPrefix(f.Module, "libc.so") }
	if !isLibc(ph[0]) {
		t.Errorf("leaf frame %q is in %q, want glibc's lock wait", ph[0].Func, ph[0].Module)
	}
	if libcDebug && ph[0].Func != "__lll_lock_wait" {
		t.Errorf("leaf frame = %q, want __lll_lock_wait (glibc's debug file is installed)", ph[0].Func)
	}
	if !libcDebug && !strings.HasPrefix(ph[0].Func, "libc.so.6+0x") {
		// __lll_lock_wait is not exported: without a debug file it has no
		// name, and must not borrow a neighbour's.
		t.Errorf("leaf frame = %q, want libc.so.6+0x… (no symbol covers __lll_lock_wait without a debug file)", ph[0].Func)
	}
	if !slices.Contains(mutexLockNames, ph[1].Func) || !isLibc(ph[1]) {
		t.Errorf("frame 1 = %q (%s), want pthread_mutex_lock in libc", ph[1].Func, ph[1].Module)
	}
	if ph[2].Func != "account_transfer" {
		t.Errorf("frame 2 = %q, want account_transfer (the caller of pthread_mutex_lock)", ph[2].Func)
	}
	if ph[3].Func != "teller" {
		t.Errorf("frame 3 = %q, want teller (the caller of account_transfer)", ph[3].Func)
	}
	if !isLibc(ph[4]) {
		t.Errorf("frame 4 = %q (%s), want glibc's start_thread", ph[4].Func, ph[4].Module)
	}
	if libcDebug && ph[4].Func != "start_thread" {
		t.Errorf("frame 4 = %q, want start_thread", ph[4].Func)
	}
	if ph[2].File == "" || !strings.HasSuffix(ph[2].File, "ledger.c") || ph[2].Line == 0 {
		t.Errorf("account_transfer frame has no source position: %s:%d", ph[2].File, ph[2].Line)
	}
}

// TestUnwindThroughSignalFrame unwinds a thread blocked inside a signal
// handler: the walk must cross glibc's signal trampoline (its CFI reads the
// interrupted registers out of the ucontext on the stack) and continue in
// the interrupted function.
func TestUnwindThroughSignalFrame(t *testing.T) {
	requireRoot(t)
	bin := buildC(t, t.TempDir(), "sigwait.c", "sigwait", "-O2", "-g")
	tg := startTarget(t, bin)
	c := captureBlocked(t, tg.pid(), tg.fields(t)["lock"])
	p, st, complete := unwindCaptured(t, tg.pid(), Options{}, c)
	var names []string
	for _, f := range physical(st.Frames) {
		names = append(names, f.Func)
	}
	i := slices.Index(names, "on_signal")
	if i < 1 || !slices.Contains(mutexLockNames, names[i-1]) {
		t.Fatalf("no pthread_mutex_lock -> on_signal in %q", names)
	}
	// Next: the trampoline (named __restore_rt with glibc's debug file,
	// libc.so.6+0x… without), then the interrupted function and its
	// callers.
	rest := names[i+1:]
	if len(rest) < 3 || rest[1] != "spin_victim" || rest[2] != "victim" {
		t.Errorf("after on_signal: %q, want [trampoline spin_victim victim …]", rest)
	}
	if libcHasDebugFile(p) && (len(rest) == 0 || rest[0] != "__restore_rt") {
		t.Errorf("trampoline frame = %q, want __restore_rt", rest)
	}
	if !complete {
		t.Errorf("walk did not reach the thread's start")
	}
}
