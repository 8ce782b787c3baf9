//go:build linux && amd64

package collector

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// TestGoProbesAttachAndDetach records the Go stripe fixture (no pprof
// endpoint) through a session, with each way of placing the Go lock
// probes: the park/wake probes (two links, at the entries of queue and
// releaseSudog) and the entry/return ones (one link at each slow path's
// entry and one at each of its RETs). Past their budget they come off,
// and are put back after a pause; the go-lockwaits view holds the
// fixture's waits at the function that takes the lock, under the slow
// path, and Stop leaves none of the links behind.
func TestGoProbesAttachAndDetach(t *testing.T) {
	requireRoot(t)
	for _, mode := range []string{"park-wake", "entry-return"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(goProbesEnv, mode)
			testGoProbes(t, mode == "park-wake")
		})
	}
}

func testGoProbes(t *testing.T, parkWake bool) {
	// The fixture outlives the longest pause the test allows (2 minutes)
	// and the 30 s after it: a pause of 58 s once outlasted a fixture of
	// 60 s, and the probes had no process to go back into.
	fx := exec.Command(testbin.Go(t, "fixtures/cmd/gofixture"), "stripe", "-variant", "bad", "-duration", "200s")
	testbin.StartCmd(t, fx)
	time.Sleep(300 * time.Millisecond) // past the runtime's start
	found, err := findGoFuncs("/proc/" + strconv.Itoa(fx.Process.Pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	want := 2
	if !parkWake {
		want = 0
		for _, f := range found.funcs {
			want += 1 + len(f.Rets)
		}
	}
	progs0, links0 := testbin.BPFObjects(t, os.Getpid())
	s, err := Start(context.Background(), Options{PID: fx.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	progs1, links1 := testbin.BPFObjects(t, os.Getpid())
	newProgs, newLinks := minus(progs1, progs0), minus(links1, links0)
	if got := goSyncLinks(t, newLinks); got != want {
		t.Errorf("%d links of the Go lock probes, want %d", got, want)
	}
	// The stripe fixture parks thousands of times a second, past
	// goProbeBudget with either probes: the probes come off after
	// goProbeJudgeAfter, while the other probes stay. Waited for, not
	// timed: on a busy machine the judgement runs late.
	var linksMid []uint32
	waitUntil(t, "the Go lock probes taken off past their budget", func() bool {
		_, linksMid = testbin.BPFObjects(t, os.Getpid())
		return goSyncLinks(t, minus(linksMid, links0)) == 0
	})
	if len(minus(linksMid, links0)) == 0 {
		t.Error("every probe came off with the Go lock probes")
	}
	// After a pause that brings their average cost to the budget, they
	// are put back, the same links again. The pause grows with what the
	// probes cost over their first second: the entry/return ones, 30 µs a
	// hit, chose 7 to 30 s on this fixture (more the faster it ran).
	// It is waited for from the time the session set, with the usual
	// margin after it.
	s.goUp.mu.Lock()
	resumeAt := s.goUp.resumeAt
	s.goUp.mu.Unlock()
	pause := max(resumeAt-s.elapsed(), 0)
	if pause > 2*time.Minute {
		t.Fatalf("the Go lock probes paused for %s more, want at most 2m on this fixture", pause)
	}
	t.Logf("paused for %s more", pause)
	deadline := time.Now().Add(pause + 30*time.Second)
	for {
		_, l := testbin.BPFObjects(t, os.Getpid())
		if goSyncLinks(t, minus(l, links0)) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Go lock probes not put back within 30s of the end of their %s pause", pause)
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	testbin.CheckBPFGone(t, newProgs, newLinks)
	u := rec.Meta.GoData.Uprobes
	if !u.Have() {
		t.Errorf("go_data uprobes %+v, want the functions probed", u)
	}
	if !strings.HasPrefix(u.Detached, "taken off after") {
		t.Errorf("go_data uprobes detached = %q, want why they were taken off", u.Detached)
	}
	p := rec.Profile(recording.ViewGoLockWaits)
	if p == nil {
		t.Fatal("no go-lockwaits view")
	}
	if d := time.Duration(p.DurationNanos); d < goProbeJudgeAfter || d >= rec.Meta.Duration {
		t.Errorf("go-lockwaits covers %s of a %s recording, want the time the probes were attached", d, rec.Meta.Duration)
	}
	var waits int64
	for _, smp := range p.Sample {
		if leaf := smp.Location[0].Line; len(leaf) == 0 || leaf[0].Function.Name != "internal/sync.(*Mutex).lockSlow" {
			continue
		}
		for _, loc := range smp.Location {
			if slices.ContainsFunc(loc.Line, func(l profile.Line) bool {
				return strings.HasSuffix(l.Function.Name, "stripe.(*subscription).onIncomingMessage")
			}) {
				waits += smp.Value[0]
				break
			}
		}
	}
	if waits == 0 {
		t.Errorf("no lock wait under lockSlow at stripe.(*subscription).onIncomingMessage in the go-lockwaits view (%d samples)", len(p.Sample))
	}
	checkRoundTrip(t, rec)
}

// goSyncLinks counts the links among ids whose program is one of the Go
// lock probes.
func goSyncLinks(t *testing.T, ids []uint32) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		l, err := link.NewFromID(link.ID(id))
		if err != nil {
			continue
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			continue
		}
		prog, err := ebpf.NewProgramFromID(info.Program)
		if err != nil {
			continue
		}
		pi, err := prog.Info()
		prog.Close()
		if err == nil && strings.HasPrefix(pi.Name, "ct_gosync_") {
			n++
		}
	}
	return n
}
