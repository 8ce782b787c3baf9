package analyzer

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
	"github.com/google/go-cmp/cmp"
)

// The rwcommit fixture's debug=2 dumps (fixtures/HOLDERS.md): 64 readers
// queue in RLock under (*store).lookup while goroutine 88 holds the write
// side in (*tx).commit, [syscall] in write. No frame of the holder is a
// method of *store and the dump prints no mutex address the holder's
// frames could contain, so only its package ties it to the lock.
func rwcommitDump(t *testing.T, name string) *core.Result {
	t.Helper()
	rec, err := recording.Open(filepath.Join("..", "fixtures", "testdata", "dumps", name))
	if err != nil {
		t.Fatal(err)
	}
	return analyze(t, rec)
}

const rwcommitLookup = "github.com/contend-dev/contend/fixtures/rwcommit.(*store).lookup"

func TestDumpWriteHolderOfAnotherType(t *testing.T) {
	res := rwcommitDump(t, "rwmutex-holder-syscall.txt")
	if diff := cmp.Diff([]string{"io-under-lock@" + rwcommitLookup}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	f := res.Findings[0]
	if !hasFact(f, core.EvDumpHolderIO, "goroutines", 1, "call", "os.(*File).Write", "state", "syscall",
		"at", "rwcommit.(*tx).commit (rwcommit.go:96)") {
		t.Errorf("evidence lacks the holder in write under (*tx).commit:\n%s", evidenceData(f))
	}
	if !strings.HasPrefix(f.Suggestion.Action, "Move the I/O off the lock") {
		t.Errorf("suggestion %q, want moving the I/O off the lock", f.Suggestion.Action)
	}
}

func TestDumpWriteHolderFixed(t *testing.T) {
	res := rwcommitDump(t, "rwmutex-holder-syscall-fixed.txt")
	if len(res.Findings) != 0 {
		t.Fatalf("findings %v, want none: the committer writes after unlocking", kinds(res))
	}
}

// The fixture's first layout, where the commit is a method of *store: the
// holder is found by its type, as before the package rule existed.
func TestDumpWriteHolderSameReceiver(t *testing.T) {
	res := rwcommitDump(t, "rwmutex-holder-syscall-samerecv.txt")
	if diff := cmp.Diff([]string{"io-under-lock@" + rwcommitLookup}, kinds(res)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if f := res.Findings[0]; !hasFact(f, core.EvDumpHolderIO, "how", core.HolderByType) {
		t.Errorf("holder not found by its type:\n%s", evidenceData(f))
	}
}

// The package rule names a holder only where nothing else can hold the
// lock: with a writer waiting for the write side (the readers may be
// queued behind it while other readers hold), or with two goroutines of
// the package in I/O (either could write under another lock), the verdict
// stays what the waiting shows.
func TestDumpPackageHolderAmbiguous(t *testing.T) {
	readers := stack(fr("sync.runtime_SemacquireRWMutexR@/go/src/runtime/sema.go:100",
		"sync.(*RWMutex).RLock@/go/src/sync/rwmutex.go:74",
		"app.(*store).lookup@/src/app/store.go:67"), fr("app.reader@/src/app/main.go:20"))
	writer := stack(fr("syscall.Syscall@/go/src/syscall/syscall_linux.go:74",
		"syscall.write@/go/src/syscall/zsyscall_linux_amd64.go:964",
		"os.(*File).Write@/go/src/os/file.go:215",
		"app.(*commitLog).append@/src/app/log.go:17",
		"app.(*tx).commit@/src/app/tx.go:96"), fr("app.committer@/src/app/main.go:40"))
	pendingWriter := stack(fr("sync.runtime_SemacquireRWMutex@/go/src/runtime/sema.go:105",
		"sync.(*RWMutex).Lock@/go/src/sync/rwmutex.go:150",
		"app.(*store).put@/src/app/store.go:80"), fr("app.committer@/src/app/main.go:44"))
	for name, tc := range map[string]struct {
		holders int
		pending bool
		io      bool
	}{
		"one holder":     {holders: 1, io: true},
		"two in I/O":     {holders: 2},
		"writer waiting": {holders: 1, pending: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := newDump(t).add(64, "sync.RWMutex.RLock", readers...).add(tc.holders, "syscall", writer...)
			if tc.pending {
				b.add(1, "sync.RWMutex.Lock", pendingWriter...)
			}
			res := analyze(t, rec(nil, b.build()))
			io := false
			for _, f := range res.Findings {
				io = io || f.Kind == core.KindIOUnderLock
			}
			if io != tc.io {
				t.Errorf("io-under-lock %v, want %v; findings %v", io, tc.io, kinds(res))
			}
		})
	}
}
