//go:build linux && amd64

package collector

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// goVersionsTested are the Go releases the park/wake probes are checked
// against besides the installed toolchain: the oldest supported one and
// the last before sync.Mutex moved into internal/sync (Go 1.24).
var goVersionsTested = []string{"go1.21.13", "go1.23.12"}

// TestGoProbesGoVersions records collector/testdata/gorwlocks built by
// each tested Go release, and by the installed one with -trimpath and
// without symbol table (-ldflags=-s -w): the park/wake probes are placed
// and the go-lockwaits view has the waits of all three sides, each under
// its slow path (Mutex, RWMutex readers, RWMutex writer waiting for the
// readers), and none of the program's WaitGroup waits. A release whose toolchain cannot be fetched (no module proxy)
// is skipped with the reason.
func TestGoProbesGoVersions(t *testing.T) {
	requireRoot(t)
	type build struct {
		name, toolchain string
		flags           []string
	}
	builds := []build{{name: "local", toolchain: "local"}, {name: "local-stripped", toolchain: "local", flags: []string{"-trimpath", "-ldflags=-s -w"}}}
	for _, v := range goVersionsTested {
		builds = append(builds, build{name: v, toolchain: v})
	}
	src, err := filepath.Abs("testdata/gorwlocks")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "gorwlocks")
			cmd := exec.Command("go", append(append([]string{"build"}, b.flags...), "-o", bin, ".")...)
			cmd.Dir = src
			cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+b.toolchain, "GOFLAGS=-mod=mod", "GOWORK=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				if b.toolchain != "local" {
					// A toolchain the module proxy does not serve here
					// skips on a workstation and fails in CI.
					testbin.Skip(t, fmt.Sprintf("build with %s: %v\n%s", b.toolchain, err, out))
				}
				t.Fatalf("build: %v\n%s", err, out)
			}
			checkGoLockSides(t, bin)
		})
	}
}

// checkGoLockSides records the gorwlocks binary bin until the park/wake
// probes come off past their budget (the program parks far more often
// than the budget allows) and checks the waits of each side.
func checkGoLockSides(t *testing.T, bin string) {
	t.Helper()
	fx := exec.Command(bin, "60s")
	testbin.StartCmd(t, fx)
	testbin.WaitUntil(t, "the Go runtime started", func() bool { return goBuildVersion("/proc/"+strconv.Itoa(fx.Process.Pid)+"/exe") != "" })
	_, links0 := testbin.BPFObjects(t, os.Getpid())
	s, err := Start(context.Background(), Options{PID: fx.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	_, links1 := testbin.BPFObjects(t, os.Getpid())
	if got := goSyncLinks(t, minus(links1, links0)); got != 2 {
		t.Errorf("%d links of the Go lock probes, want the park and wake probes", got)
	}
	waitUntil(t, "the Go lock probes taken off past their budget", func() bool {
		_, l := testbin.BPFObjects(t, os.Getpid())
		return goSyncLinks(t, minus(l, links0)) == 0
	})
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if u := rec.Meta.GoData.Uprobes; u == nil || !strings.Contains(strings.Join(u.Functions, ","), goParkFunc) {
		t.Errorf("go_data uprobes %+v, want the park/wake probes", u)
	}
	p := rec.Profile(recording.ViewGoLockWaits)
	if p == nil {
		t.Fatal("no go-lockwaits view")
	}
	// The leaf is the slow path, the next frame that does not belong to
	// package sync the program's function that waited.
	want := map[string]string{
		"lockSlow":                        "main.mutexWorker",
		"sync.runtime_SemacquireRWMutexR": "main.reader",
		"sync.runtime_SemacquireRWMutex":  "main.writer",
	}
	got := map[string]int64{}
	for _, smp := range p.Sample {
		var names []string
		for _, loc := range smp.Location {
			for _, l := range loc.Line {
				names = append(names, l.Function.Name)
			}
		}
		if len(names) == 0 {
			continue
		}
		if slices.Contains(names, "main.waiter") {
			t.Errorf("a WaitGroup wait in go-lockwaits: %q", names)
		}
		for leaf, caller := range want {
			if strings.HasSuffix(names[0], leaf) && slices.Contains(names, caller) {
				got[leaf] += smp.Value[0]
			}
		}
	}
	for leaf, caller := range want {
		if got[leaf] == 0 {
			t.Errorf("no wait under %s from %s in go-lockwaits (%d samples)", leaf, caller, len(p.Sample))
		}
	}
}
