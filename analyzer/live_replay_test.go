package analyzer

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/recording"
)

// Replay tests over live recordings of the fixtures and of CPython, kept
// in testdata/live/<name>. They were recorded with `make validate -keep`
// (or `contend record`) and slimmed for the repository with
//
//	go test ./analyzer -run TestSlimLiveRecording -slim DIR -slim-name NAME [-slim-exe]
//
// which keeps every view, locks.json and the timeline, and from the event
// log the first second of what the lock verdicts correlate (waits, wakes,
// I/O, uninterruptible sleeps, the run-queue intervals of lock owners and
// the wakeups of waiters) with the stacks of the I/O only, then checks that the slimmed recording gives the
// same findings as the original. -slim-exe copies the target's executable
// beside the recording so the spin detector can disassemble it; otherwise
// the executable is forgotten and the detector works from samples alone.

var (
	slimSrc  = flag.String("slim", "", "live recording directory to slim into testdata/live")
	slimName = flag.String("slim-name", "", "name of the slimmed recording under testdata/live")
	slimExe  = flag.Bool("slim-exe", false, "copy the target's executable beside the slimmed recording")
)

// liveCase is what one replayed recording must give.
type liveCase struct {
	// kind and fn: the first finding's kind and a function at its point
	// (its own or one it is inlined in). An empty kind means no finding.
	kind Kind
	fn   string
	// lock, when set, must prefix the first finding's lock name, and
	// words is how many futex words it must fold.
	lock  string
	words int
	// noConvoy allows findings of plain contention (a fixed variant's
	// remaining contention) but none of the convoy kinds.
	noConvoy bool
}

var liveCases = map[string]liveCase{
	"c-spin-bad":        {kind: KindSpinConvoy, fn: "relay_on_message"},
	"c-spin-fixed":      {noConvoy: true},
	"c-stripe-bad":      {kind: KindLockConvoy, fn: "conn_on_message", lock: "table_lock"},
	"c-stripe-fixed":    {noConvoy: true},
	"c-iolock-bad":      {kind: KindIOUnderLock, fn: "dataplane_lookup", lock: "manager_mu"},
	"c-writer-bad":      {kind: KindSerializedWriter, fn: "frame_write", lock: "conn"},
	"c-writer-fixed":    {noConvoy: true},
	"c-idle-bad":        {},
	"go-lockedspin-bad": {kind: KindSpinConvoy, fn: "lockedspin.(*spinLock).lock"},
	"go-idle-threads":   {},
	"python-gil":        {kind: KindContention, lock: "_PyRuntime+", words: 6},
	// JVM fixtures, recorded with --jvm-dumps 3: the dumps name the lock
	// objects; the spin recording carries the compiled code of its loop.
	"jvm-spin-bad":   {kind: KindSpinConvoy, fn: "fixtures.Spin.onMessage"},
	"jvm-stripe-bad": {kind: KindLockConvoy, fn: "fixtures.Stripe.onMessage", lock: "java.lang.Object"},
	"jvm-iolock-bad": {kind: KindIOUnderLock, fn: "fixtures.IoLock.lookup", lock: "java.lang.Object"},
	"jvm-writer-bad": {kind: KindSerializedWriter, fn: "fixtures.Writer.frameWrite", lock: "java.util.concurrent.locks.ReentrantLock"},
	"jvm-idle-bad":   {},
}

func TestLiveReplay(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "live", "*"))
	if len(dirs) == 0 {
		t.Fatal("no live recordings under testdata/live")
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		want, ok := liveCases[name]
		if !ok {
			t.Errorf("testdata/live/%s has no expectation in liveCases", name)
			continue
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			rec, err := recording.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			res := analyze(t, rec)
			checkLiveRows(t, res)
			if want.kind == "" {
				for _, f := range res.Findings {
					if !want.noConvoy || f.Kind != KindContention {
						t.Errorf("finding %s (%s), want none%s", f.Kind, f.Headline, map[bool]string{true: " but plain contention"}[want.noConvoy])
					}
				}
				return
			}
			if len(res.Findings) == 0 {
				t.Fatalf("no finding, want %s", want.kind)
			}
			f := res.Findings[0]
			if f.Kind != want.kind {
				t.Errorf("first finding %s (%s), want %s", f.Kind, f.Headline, want.kind)
			}
			if want.fn != "" && !PointInFunction(f.Point, want.fn) {
				t.Errorf("first finding at %s, want %s", f.Point.Function, want.fn)
			}
			if want.lock != "" && (f.Lock == nil || !strings.HasPrefix(f.Lock.Name, want.lock)) {
				t.Errorf("first finding's lock %+v, want %s…", f.Lock, want.lock)
			}
			if want.words > 0 && (f.Lock == nil || len(f.Lock.Words) != want.words) {
				t.Errorf("first finding's lock %+v, want %d folded words", f.Lock, want.words)
			}
			checkFinding(t, res, f)
		})
	}
	for name := range liveCases {
		if !seen[name] {
			t.Errorf("liveCases names %s, which testdata/live lacks", name)
		}
	}
}

// checkFinding checks that a live finding fills every field.
func checkFinding(t *testing.T, res *Result, f Finding) {
	t.Helper()
	switch {
	case f.Headline == "" || !strings.Contains(f.Headline, "ONE"):
		t.Errorf("headline %q", f.Headline)
	case f.Point.Function == "" || len(f.Point.Stack) == 0:
		t.Errorf("point %+v", f.Point)
	case f.Participants < 2 || f.Population < f.Participants || f.Unit != "threads":
		t.Errorf("participants %d of %d %s", f.Participants, f.Population, f.Unit)
	case f.WaitSeconds+f.CPUSeconds <= 0 || f.Score != f.WaitSeconds+f.CPUSeconds:
		t.Errorf("cost: wait %v cpu %v score %v", f.WaitSeconds, f.CPUSeconds, f.Score)
	case len(f.Evidence) < 3:
		t.Errorf("only %d pieces of evidence", len(f.Evidence))
	case f.Confidence == "":
		t.Error("no confidence")
	case f.Suggestion.Action == "" || f.Suggestion.Reasoning == "":
		t.Errorf("suggestion %+v", f.Suggestion)
	}
	for _, e := range f.Evidence {
		if e.Source == "" || e.Kind == "" || len(e.Figures)+len(e.Names)+len(e.Items) == 0 {
			t.Errorf("evidence %+v", e)
		}
	}
	if f.Kind != KindSpinConvoy && f.Lock == nil {
		t.Error("lock verdict without a lock")
	}
	if f.WaitShare < 0 || f.WaitShare > 1 {
		t.Errorf("wait share %v", f.WaitShare)
	}
}

// checkLiveRows checks the rows every live recording gives.
func checkLiveRows(t *testing.T, res *Result) {
	t.Helper()
	if res.Target.Unit != "threads" || res.Target.Population == 0 {
		t.Errorf("target %+v", res.Target)
	}
	if len(res.Threads) != res.Target.Population {
		t.Errorf("%d thread rows for %d threads", len(res.Threads), res.Target.Population)
	}
	if len(res.Points) == 0 {
		t.Error("no program point rows")
	}
	for _, l := range res.Locks {
		if l.P50 > l.P99 || l.WaitSeconds < 0 || l.DistinctWaiters < 0 {
			t.Errorf("lock row %+v", l)
		}
		if l.Lock.Address == "" && l.Lock.Name == "" {
			t.Errorf("lock row without an address or a name: %+v", l.Lock)
		}
	}
	for _, g := range res.Idle {
		if g.Reason == "" || g.Count <= 0 {
			t.Errorf("idle group %+v", g)
		}
	}
}

// TestSlimLiveRecording writes a slimmed copy of a live recording into
// testdata/live (see the comment at the top of this file). It runs only
// when -slim is given.
func TestSlimLiveRecording(t *testing.T) {
	if *slimSrc == "" {
		t.Skip("give -slim DIR -slim-name NAME to slim a recording into testdata/live")
	}
	if *slimName == "" {
		t.Fatal("-slim-name is required")
	}
	rec, err := recording.Read(*slimSrc)
	if err != nil {
		t.Fatal(err)
	}
	before := analyze(t, rec)
	dst := filepath.Join("testdata", "live", *slimName)
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	slimEvents(rec)
	exe := rec.Meta.Exe
	rec.Meta.Exe = ""
	if *slimExe && exe != "" {
		rec.Meta.Exe = filepath.Join(dst, filepath.Base(exe))
	}
	rec.Meta.Cmdline = nil
	if err := recording.Write(dst, rec); err != nil {
		t.Fatal(err)
	}
	if *slimExe && exe != "" {
		if err := copyFile(exe, rec.Meta.Exe); err != nil {
			t.Fatal(err)
		}
	}
	back, err := recording.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	after := analyze(t, back)
	if b, a := summaryOf(before), summaryOf(after); b != a {
		t.Errorf("slimming changed the findings:\nbefore: %s\nafter:  %s", b, a)
	}
	t.Logf("wrote %s: %s", dst, summaryOf(after))
}

func summaryOf(r *Result) string {
	var parts []string
	for _, f := range r.Findings {
		parts = append(parts, string(f.Kind)+"@"+f.Point.Function)
	}
	return strings.Join(parts, ", ")
}

// slimEventSpan is how much of the event log a slimmed recording keeps:
// the log is a sample already, and its shares (I/O during waits, p50 and
// p99) hold over a second as well as over the whole recording.
const slimEventSpan = time.Second

// slimEvents keeps the events the lock verdicts correlate and the stacks
// they refer to.
func slimEvents(rec *recording.Recording) {
	// Wakeups name the holder only where the lock word has no owner
	// beside it: keep those of waiters that saw none.
	ownerless, owners := map[int]bool{}, map[int]bool{}
	for _, e := range rec.Events {
		if e.Kind == recording.EventWait {
			if e.Peer == 0 {
				ownerless[e.TID] = true
			}
			owners[e.Peer] = true
		}
	}
	index := map[int]int{}
	var stacks []recording.Stack
	var kept []recording.Event
	var first int64 = -1
	for _, e := range rec.Events {
		if first < 0 {
			first = e.T
		}
		if e.T-first > int64(slimEventSpan) {
			break
		}
		switch e.Kind {
		case recording.EventWait, recording.EventWake, recording.EventIO, recording.EventDSleep:
		case recording.EventRunq:
			if !owners[e.TID] {
				continue
			}
		case recording.EventWakeup:
			if !ownerless[e.Peer] {
				continue
			}
		default:
			continue
		}
		// Only the I/O events' stacks are read (to name the I/O site
		// inside a critical section); the views carry the others.
		if e.Kind == recording.EventIO && e.Stack >= 0 && e.Stack < len(rec.Stacks) {
			i, ok := index[e.Stack]
			if !ok {
				i = len(stacks)
				index[e.Stack] = i
				st := rec.Stacks[e.Stack]
				st.Frames = cutJunk(st.Frames)
				stacks = append(stacks, st)
			}
			e.Stack = i
		} else {
			e.Stack = -1
		}
		kept = append(kept, e)
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].T < kept[j].T })
	rec.Events, rec.Stacks = kept, stacks
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
