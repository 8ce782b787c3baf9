package analyzer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// Replay tests of the fixtures that wait in the kernel (fixtures/c:
// flockconvoy, lockretry, mmapstorm, filewriters, logpipe), recorded with
// `contend record -p PID -d 4s` while each ran with -variant bad or fixed
// -duration 8. Each bad recording must give its lock: the kind, the
// program point and the lock key; each fixed one none of the new kinds
// beyond what its design keeps (fixtures/c/README.md).

// kernelCase is what one kernel-wait recording must give.
type kernelCase struct {
	// kind, fn and key describe the finding the lock must get: its kind,
	// its program point's function, and a prefix of its lock key. rank is
	// its place among the findings (0 first): on the 2-CPU recording
	// machine, loaded by other builds, some bad variants also saturate the
	// CPUs, and CPU saturation weighs more than the lock there.
	kind analyzer.Kind
	fn   string
	key  string
	rank int
	// idleFree names a program point that must not be listed as idle.
	idleFree string
	// fixedAllows is a kind the fixed variant may keep on the same object
	// above the quarter bound.
	fixedAllows analyzer.Kind
}

var kernelCases = map[string]kernelCase{
	"c-flockconvoy-bad": {kind: analyzer.KindKernelObjectLock, fn: "locked_append", key: "flock /tmp/contend-flock-"},
	"c-lockretry-bad": {kind: analyzer.KindPolledLock, fn: "lock_header", key: "record-lock /tmp/contend-lockretry-", idleFree: "lock_header",
		// The fixed variant waits in F_SETLKW and fsyncs after the
		// release, but its pwrite under the lock sleeps for the page the
		// previous holder's fdatasync still has under writeback
		// (__filemap_get_folio): I/O under the lock, truly, and no
		// longer polled.
		fixedAllows: analyzer.KindIOUnderLock},
	// Both recorded beside a busy build: the run queue they show is
	// mostly other processes', which ranks no saturation above the lock
	// (satRankSeconds).
	"c-mmapstorm-bad":   {kind: analyzer.KindKernelObjectLock, fn: "touch_slice.constprop.0", key: "mmap-lock mmapstorm"},
	"c-filewriters-bad": {kind: analyzer.KindKernelObjectLock, fn: "write_chunk", key: "inode-lock /tmp/contend-filewriters-"},
	// logpipe's convoy is on its futex, log_mu, whose holder sleeps in
	// the pipe: the futex finding leads, the pipe follows.
	"c-logpipe-bad": {kind: analyzer.KindKernelObjectLock, fn: "write_all.constprop.0", key: "pipe written at write_all", rank: 1},
}

// newKinds are the verdicts of waits in the kernel.
var newKinds = map[analyzer.Kind]bool{analyzer.KindKernelObjectLock: true, analyzer.KindPolledLock: true}

func analyzeDir(t *testing.T, name string) *analyzer.Result {
	t.Helper()
	rec, err := recording.Open(filepath.Join("testdata", "live", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := analyzer.Analyze(rec, analyzer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestKernelWaitReplay(t *testing.T) {
	for name, want := range kernelCases {
		t.Run(name, func(t *testing.T) {
			res := analyzeDir(t, name)
			if len(res.Findings) <= want.rank {
				t.Fatalf("%d findings, want the lock at rank %d", len(res.Findings), want.rank)
			}
			f := res.Findings[want.rank]
			if f.Kind != want.kind {
				t.Fatalf("finding %d is %s (%s), want %s", want.rank, f.Kind, f.Headline, want.kind)
			}
			if f.Point.Function != want.fn {
				t.Errorf("point %s, want %s", f.Point.Function, want.fn)
			}
			if f.Lock == nil || !strings.HasPrefix(f.Lock.Key, want.key) {
				t.Errorf("lock %+v, want key %s…", f.Lock, want.key)
			}
			if len(f.Evidence) < 2 || f.Suggestion.Action == "" || f.Participants < 2 || f.WaitSeconds <= 0 {
				t.Errorf("finding not filled: %+v", f)
			}
			for _, g := range res.Idle {
				if want.idleFree != "" && g.Point.Function == want.idleFree {
					t.Errorf("the polled sleeps at %s are listed as idle: %s", want.idleFree, g.Reason)
				}
			}
			fixed := strings.TrimSuffix(name, "bad") + "fixed"
			checkFixed(t, fixed, f, want.fixedAllows)
		})
	}
}

// checkFixed checks a fixed variant against its bad variant's lock: no
// finding of the new kinds on the same program point with more than a
// quarter of the bad variant's waiting per second (the bound make
// validate puts on a fixed variant).
func checkFixed(t *testing.T, name string, bad analyzer.Finding, allows analyzer.Kind) {
	t.Helper()
	res := analyzeDir(t, name)
	for _, f := range res.Findings {
		if !newKinds[f.Kind] && (f.Lock == nil || !strings.HasPrefix(f.Lock.Key, keyKind(bad.Lock.Key))) {
			continue
		}
		if f.Lock != nil && bad.Lock != nil && keyKind(f.Lock.Key) != keyKind(bad.Lock.Key) {
			continue
		}
		if f.Kind == bad.Kind {
			t.Errorf("%s keeps the bad variant's verdict: %s", name, f.Headline)
		}
		if f.Kind == allows {
			continue
		}
		badRate := bad.WaitSeconds / res.Target.Duration.Seconds()
		if r := f.WaitSeconds / res.Target.Duration.Seconds(); r > badRate/4 {
			t.Errorf("%s: %s (%s) keeps %.2f threads waiting, more than a quarter of the bad variant's %.2f", name, f.Kind, f.Headline, r, badRate)
		}
	}
}

// keyKind is the object kind of a kernel lock key ("flock", "mmap-lock").
func keyKind(key string) string {
	k, _, _ := strings.Cut(key, " ")
	return k
}

// TestSleepLoopWithoutFailureStaysIdle: lockretry's fixed variant waits in
// F_SETLKW, and fixtures that sleep in a loop without a failing attempt
// (flockconvoy's main thread in usleep) keep their sleeps idle: no polled
// lock without a failed try.
func TestSleepLoopWithoutFailureStaysIdle(t *testing.T) {
	for _, name := range []string{"c-lockretry-fixed", "c-flockconvoy-bad", "c-filewriters-fixed"} {
		res := analyzeDir(t, name)
		for _, f := range res.Findings {
			if f.Kind == analyzer.KindPolledLock {
				t.Errorf("%s: polled lock without failed tries: %s", name, f.Headline)
			}
		}
		idle := false
		for _, g := range res.Idle {
			if strings.Contains(g.Reason, "sleeping") {
				idle = true
			}
		}
		if !idle {
			t.Errorf("%s: no sleeping thread listed as idle, want the sleep loops there", name)
		}
	}
}
