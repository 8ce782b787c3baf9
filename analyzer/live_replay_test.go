package analyzer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/fixtures/expect"
	"github.com/contend-dev/contend/recording"
)

// Replay tests over live recordings of the fixtures and of CPython, kept
// in testdata/live/<name>. They are recorded by `make capture-live`
// (fixtures/cmd/capturelive), which runs each fixture variant exactly as
// make validate does and keeps each recording whole, event log included.

// liveCase is what one replayed recording must give.
type liveCase struct {
	// fixture and variant name the fixture run the recording holds; it is
	// judged as make validate judges it (package expect), a fixed variant
	// against the recording of its bad variant.
	fixture, variant string
	// kind, when set instead, is the first finding's kind for a recording
	// of something other than a fixture.
	kind analyzer.Kind
	// lock, when set, must prefix the first finding's lock name; with
	// foldAll, the lock must fold every futex word of that name that
	// threads waited on (a condition variable's sequence words and its
	// mutex are one lock).
	lock    string
	foldAll bool
	// kernel marks a recording of a fixture that waits in the kernel,
	// which package expect does not judge yet: TestKernelWaitReplay
	// checks it.
	kernel bool
	// notKind, when set instead of fixture and kind, is a kind no finding
	// may have.
	notKind analyzer.Kind
}

var liveCases = map[string]liveCase{
	"c-spin-bad":                  {fixture: "c/spin", variant: "bad"},
	"c-spin-fixed":                {fixture: "c/spin", variant: "fixed"},
	"c-stripe-bad":                {fixture: "c/stripe", variant: "bad", lock: "table_lock"},
	"c-stripe-fixed":              {fixture: "c/stripe", variant: "fixed"},
	"c-iolock-bad":                {fixture: "c/iolock", variant: "bad", lock: "manager_mu"},
	"c-iolock-fixed":              {fixture: "c/iolock", variant: "fixed"},
	"c-writer-bad":                {fixture: "c/writer", variant: "bad", lock: "conn"},
	"c-writer-fixed":              {fixture: "c/writer", variant: "fixed"},
	"c-idle-bad":                  {fixture: "c/idle", variant: "bad"},
	"c-shmlock-processes-bad":     {fixture: "c/shmlock", variant: "bad"},
	"c-shmlock-processes-fixed":   {fixture: "c/shmlock", variant: "fixed"},
	"go-spin-bad":                 {fixture: "go/spin", variant: "bad"},
	"go-spin-fixed":               {fixture: "go/spin", variant: "fixed"},
	"go-stripe-bad":               {fixture: "go/stripe", variant: "bad"},
	"go-stripe-fixed":             {fixture: "go/stripe", variant: "fixed"},
	"go-iolock-bad":               {fixture: "go/iolock", variant: "bad"},
	"go-iolock-fixed":             {fixture: "go/iolock", variant: "fixed"},
	"go-lockedspin-threads-bad":   {fixture: "go/lockedspin", variant: "bad"},
	"go-lockedspin-threads-fixed": {fixture: "go/lockedspin", variant: "fixed"},
	"go-idle-threads-bad":         {fixture: "go/idle", variant: "bad"},
	"python-gil":                  {kind: analyzer.KindContention, lock: "_PyRuntime+", foldAll: true},
	// rwstarve over 12 s (readers wait behind the few writes that get
	// in), over validate's 3 s (no reader waits at all) and with 64
	// readers per CPU (none ever waits). Its fixed recording is of the
	// writer-preference design (fixtures/HOLDERS.md), which keeps reader
	// stalls that expect's fixed-variant bound does not allow.
	"c-rwstarve-bad":            {kind: analyzer.KindWriterStarvation, lock: "table_rw (rwstarve)"},
	"c-rwstarve-bad-3s":         {fixture: "c/rwstarve", variant: "bad", lock: "table_rw (rwstarve)"},
	"c-rwstarve-bad-128threads": {fixture: "c/rwstarve", variant: "bad", lock: "table_rw (rwstarve)"},
	"c-rwstarve-fixed":          {notKind: analyzer.KindWriterStarvation},
	// semlock's recordings at other thread counts (TestSemlockReplay).
	"c-semlock-bad":   {kind: analyzer.KindIOUnderLock, lock: "log_sem (semlock)"},
	"c-semlock-fixed": {notKind: analyzer.KindIOUnderLock},
	// The same at 2 and at 64 threads per CPU.
	"c-semlock-bad-4threads":     {kind: analyzer.KindIOUnderLock, lock: "log_sem (semlock)"},
	"c-semlock-bad-128threads":   {kind: analyzer.KindIOUnderLock, lock: "log_sem (semlock)"},
	"c-semlock-fixed-128threads": {notKind: analyzer.KindIOUnderLock},
	// JVM fixtures, recorded with --jvm-dumps 3: the dumps name the lock
	// objects; the spin recording carries the compiled code of its loop.
	"jvm-spin-bad":   {fixture: "jvm/spin", variant: "bad"},
	"jvm-stripe-bad": {fixture: "jvm/stripe", variant: "bad", lock: "java.lang.Object"},
	"jvm-iolock-bad": {fixture: "jvm/iolock", variant: "bad", lock: "java.lang.Object"},
	"jvm-writer-bad": {fixture: "jvm/writer", variant: "bad", lock: "java.util.concurrent.locks.ReentrantLock"},
	"jvm-idle-bad":   {fixture: "jvm/idle", variant: "bad"},
	// Fixtures that wait in the kernel (TestKernelWaitReplay).
	"c-flockconvoy-bad":   {kernel: true},
	"c-flockconvoy-fixed": {kernel: true},
	"c-lockretry-bad":     {kernel: true},
	"c-lockretry-fixed":   {kernel: true},
	"c-mmapstorm-bad":     {kernel: true},
	"c-mmapstorm-fixed":   {kernel: true},
	"c-filewriters-bad":   {kernel: true},
	"c-filewriters-fixed": {kernel: true},
	"c-logpipe-bad":       {kernel: true},
	"c-logpipe-fixed":     {kernel: true},
}

// liveDirs returns the committed recordings by name.
func liveDirs(t *testing.T) map[string]string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("testdata", "live", "*"))
	if len(dirs) == 0 {
		t.Fatal("no live recordings under testdata/live")
	}
	out := map[string]string{}
	for _, d := range dirs {
		out[filepath.Base(d)] = d
	}
	return out
}

func TestLiveReplay(t *testing.T) {
	dirs := liveDirs(t)
	for name := range dirs {
		if _, ok := liveCases[name]; !ok {
			t.Errorf("testdata/live/%s has no expectation in liveCases", name)
		}
	}
	results := map[string]*analyzer.Result{}
	recs := map[string]*recording.Recording{}
	analyzeLive := func(t *testing.T, name string) *analyzer.Result {
		t.Helper()
		if res, ok := results[name]; ok {
			return res
		}
		dir, ok := dirs[name]
		if !ok {
			t.Fatalf("liveCases names %s, which testdata/live lacks", name)
		}
		rec, err := recording.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := analyzer.Analyze(rec, analyzer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		results[name], recs[name] = res, rec
		return res
	}
	names := make([]string, 0, len(liveCases))
	for name := range liveCases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want := liveCases[name]
		t.Run(name, func(t *testing.T) {
			res := analyzeLive(t, name)
			checkLiveRows(t, res)
			if want.kernel {
				return
			}
			if want.notKind != "" {
				for _, f := range res.Findings {
					if f.Kind == want.notKind {
						t.Fatalf("findings %s, want none %s", expect.Summary(expect.FromResult(res).Findings), want.notKind)
					}
				}
				return
			}
			if want.kind != "" {
				if len(res.Findings) == 0 || res.Findings[0].Kind != want.kind {
					t.Fatalf("findings %s, want first %s", expect.Summary(expect.FromResult(res).Findings), want.kind)
				}
			} else {
				c, ok := expect.Lookup(want.fixture)
				if !ok {
					t.Fatalf("no expectation for %s", want.fixture)
				}
				run := expect.FromResult(res)
				var v expect.Verdict
				if want.variant == "bad" {
					v = expect.JudgeBad(c, run)
				} else {
					bad := strings.TrimSuffix(name, "fixed") + "bad"
					v = expect.JudgeFixed(c, expect.FromResult(analyzeLive(t, bad)), run)
				}
				if !v.Pass {
					t.Fatalf("%s (findings: %s)", v.Why, v.Got)
				}
				if want.variant != "bad" || c.Control {
					return
				}
			}
			f := res.Findings[0]
			if want.lock != "" && (f.Lock == nil || !strings.HasPrefix(f.Lock.Name, want.lock)) {
				t.Errorf("first finding's lock %+v, want %s…", f.Lock, want.lock)
			}
			if want.foldAll {
				checkFolded(t, recs[name], f, want.lock)
			}
			checkFinding(t, f)
		})
	}
}

// TestLiveRecordingsCoverTheirDuration refuses a committed recording whose
// event log or /proc timeline covers less than expect.MinCoverage of the
// duration it states, unless it says it was cut short: a recording that
// claims seconds but holds a fraction of one makes every "nothing found"
// check over it pass for want of data.
func TestLiveRecordingsCoverTheirDuration(t *testing.T) {
	for name, dir := range liveDirs(t) {
		rec, err := recording.Read(dir)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if rec.Meta.Partial {
			t.Logf("%s: partial (%s), coverage not required", name, rec.Meta.PartialReason)
			continue
		}
		c := rec.Coverage()
		if c.Events < expect.MinCoverage || c.Timeline < expect.MinCoverage {
			t.Errorf("%s states %s but its event log covers %.0f%% of it (%d events) and its /proc timeline %.0f%%; want %.0f%% of each (re-record with make capture-live, or mark it partial)",
				name, rec.Meta.Duration, c.Events*100, len(rec.Events), c.Timeline*100, expect.MinCoverage*100)
		}
	}
}

// TestLiveRecordingsAreSelfContained checks that a committed recording
// names no file outside the repository: an executable it names is kept
// beside it, so that the replay does not depend on what this machine has
// built.
func TestLiveRecordingsAreSelfContained(t *testing.T) {
	for name, dir := range liveDirs(t) {
		rec, err := recording.Read(dir)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if exe := rec.Meta.Exe; exe != "" {
			if filepath.Dir(exe) != filepath.Join("testdata", "live", name) {
				t.Errorf("%s names the executable %s, outside its directory", name, exe)
			} else if _, err := os.Stat(exe); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if len(rec.Meta.Cmdline) > 0 {
			t.Errorf("%s keeps the target's command line %q", name, rec.Meta.Cmdline)
		}
	}
}

// checkFolded checks that finding f's lock folds every futex word named
// with prefix that threads blocked on, and that there are several.
func checkFolded(t *testing.T, rec *recording.Recording, f analyzer.Finding, prefix string) {
	t.Helper()
	if f.Lock == nil {
		t.Fatal("no lock")
	}
	folded := map[string]bool{}
	for _, w := range f.Lock.Words {
		folded[w] = true
	}
	var words []string
	for _, l := range rec.Locks {
		if strings.HasPrefix(l.Name, prefix) && l.Blocked > 0 {
			words = append(words, fmt.Sprintf("0x%x", l.Addr))
		}
	}
	if len(words) < 2 {
		t.Fatalf("%d futex words named %s… with blocked waits, want a lock of several", len(words), prefix)
	}
	for _, w := range words {
		if !folded[w] {
			t.Errorf("word %s of %s… is not folded into the lock %+v", w, prefix, f.Lock)
		}
	}
}

// checkFinding checks that a live finding fills every field.
func checkFinding(t *testing.T, f analyzer.Finding) {
	t.Helper()
	switch {
	case f.Headline == "" || !strings.Contains(f.Headline, "ONE"):
		t.Errorf("headline %q", f.Headline)
	case f.Point.Function == "" || len(f.Point.Stack) == 0:
		t.Errorf("point %+v", f.Point)
	case f.Participants < 2 || f.Population < f.Participants || f.Unit == "":
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
	if f.Kind != analyzer.KindSpinConvoy && f.Lock == nil {
		t.Error("lock verdict without a lock")
	}
	if f.WaitShare < 0 || f.WaitShare > 1 {
		t.Errorf("wait share %v", f.WaitShare)
	}
}

// checkLiveRows checks the rows every live recording gives.
func checkLiveRows(t *testing.T, res *analyzer.Result) {
	t.Helper()
	if res.Target.Unit == "" || res.Target.Population == 0 {
		t.Errorf("target %+v", res.Target)
	}
	if res.Target.Unit == "threads" && len(res.Threads) != res.Target.Population {
		t.Errorf("%d thread rows for %d threads", len(res.Threads), res.Target.Population)
	}
	if len(res.Points) == 0 {
		t.Error("no program point rows")
	}
	for _, l := range res.Locks {
		if l.P50 > l.P99 || l.WaitSeconds < 0 || l.DistinctWaiters < 0 {
			t.Errorf("lock row %+v", l)
		}
		// A futex has an address; a Go mutex, known from the runtime's
		// profiles, has none but a description.
		if l.Lock.Address == "" && l.Lock.Name == "" {
			t.Errorf("lock row without an address or a name: %+v", l.Lock)
		}
	}
	for _, g := range res.Idle {
		// Goroutines counted in a dump, or waits summed from the block
		// profile.
		if g.Reason == "" || (g.Count <= 0 && g.WaitSeconds <= 0) {
			t.Errorf("idle group %q: %d %s, %v s", g.Reason, g.Count, g.Unit, g.WaitSeconds)
		}
	}
}
