package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// sample is a result as the analyzer builds it, with long names that
// must wrap.
func sample() *analyzer.Result {
	stack := []recording.Frame{
		{Func: "sync.(*Mutex).Lock", File: "/usr/local/go/src/sync/mutex.go", Line: 46, Inlined: true},
		{Func: "github.com/example/service/internal/relay.(*subscription).onIncomingMessage", File: "/src/service/internal/relay/subscription.go", Line: 159},
		{Func: "github.com/example/service/internal/relay.relayWorker", File: "/src/service/internal/relay/worker.go", Line: 240},
	}
	rel := analyzer.ProgramPoint{Function: stack[1].Func, File: stack[1].File, Line: 166, Stack: []recording.Frame{
		{Func: "sync.(*Mutex).Unlock", File: "/usr/local/go/src/sync/mutex.go", Line: 65},
		{Func: stack[1].Func, File: stack[1].File, Line: 166},
	}, PointIndex: 1}
	return &analyzer.Result{
		Schema: analyzer.SchemaVersion,
		Target: analyzer.Target{Source: "files", Inputs: []string{"mutex.pb.gz", "block.pb.gz", "goroutine.txt"}, Duration: 4 * time.Second, Population: 196, Unit: "goroutines"},
		Findings: []analyzer.Finding{{
			Kind:         analyzer.KindLockConvoy,
			Headline:     "179 of 196 goroutines wait at ONE program point: sync.Mutex.Lock in relay.(*subscription).onIncomingMessage (subscription.go:159)",
			Point:        analyzer.ProgramPoint{Function: stack[1].Func, File: stack[1].File, Line: 159, Stack: stack, PointIndex: 1},
			Lock:         &analyzer.LockID{Name: "sync.Mutex locked at relay.(*subscription).onIncomingMessage (subscription.go:159), released at relay.(*subscription).onIncomingMessage (subscription.go:166)"},
			Releaser:     &rel,
			Participants: 179, Population: 196, Unit: "goroutines",
			WaitSeconds: 276.4, WaitShare: 0.386, CPUSeconds: 1.24,
			Evidence: []analyzer.Evidence{
				{Source: "goroutines", Text: "179 of 196 goroutines were waiting for this lock when the goroutine dump (debug=2) was taken: 179 runnable"},
				{Source: "go-block", Text: "1,732,268 contended acquisitions at the Lock sites waited 276 s in total (159 µs each on average)"},
			},
			Confidence: analyzer.ConfidenceHigh,
			Suggestion: analyzer.Suggestion{Action: "Stripe the lock: guard the state with a fixed array of 32 mutexes indexed by a hash of the key.", Reasoning: "179 distinct goroutines wait for one lock whose critical section is short.", ExpectedGain: "about 32× less waiting"},
			Score:      277.64,
		}},
		Idle: []analyzer.IdleGroup{
			{Reason: "sync.Cond.Wait: waiting for work", Point: analyzer.ProgramPoint{Function: "app.(*Pool).get", File: "/src/pool.go", Line: 22}, Count: 4, Unit: "goroutines"},
			{Reason: "blocked in select", Point: analyzer.ProgramPoint{Function: "app.serve", File: "/src/serve.go", Line: 9}, WaitSeconds: 3.9, Unit: "goroutines"},
		},
		Notes: []string{"2 goroutine dumps given: the latest one with wait states is used"},
	}
}

func TestTextLayout(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, sample(), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes without Color")
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "[1/1] 179 of 196 goroutines wait at ONE program point:") {
		t.Errorf("first line %q is not the headline", lines[0])
	}
	for i, l := range lines {
		// A longer line is only right when it holds a label and one
		// unbreakable token (a long function name or path).
		if n := utf8.RuneCountInString(l); n > 80 && len(strings.Fields(l)) > 2 {
			t.Errorf("line %d has %d runes and could have wrapped: %q", i+1, n, l)
		}
	}
	for _, want := range []string{
		"  kind        lock-convoy (confidence high)",
		"  released    github.com/example/service/internal/relay.(*subscription).onIncomingMessage",
		"    - [go-block] 1,732,268 contended acquisitions",
		"    why: 179 distinct goroutines",
		"    expected: about 32× less waiting",
		"    > github.com/example/service/internal/relay.(*subscription).onIncomingMessage",
		"Not contention: 4 goroutines wait without contention (4 sync.Cond.Wait:",
		"1 idle wait in the block profile (3.9 s). --show-idle lists them.",
		"  - 2 goroutine dumps given",
		"1 finding · 3 inputs · 4 s profiled · 196 goroutines",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The stack's file:line sits beside the function or on the next line.
	if !strings.Contains(out, "subscription.go:159") || !strings.Contains(out, "mutex.go:46") {
		t.Errorf("stack locations missing:\n%s", out)
	}
}

func TestTextShowIdleAndColor(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, sample(), TextOptions{ShowIdle: true, Color: true, Width: 100}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "\x1b[1m") {
		t.Errorf("no bold with Color")
	}
	plain := ansi.Strip(out)
	for _, want := range []string{"Not contention (idle waits, never reported as findings)", "4 goroutines: sync.Cond.Wait: waiting for work", "at app.(*Pool).get /src/pool.go:22", "blocked in select (3.9 s waited)"} {
		if !strings.Contains(plain, want) {
			t.Errorf("output lacks %q:\n%s", want, plain)
		}
	}
}

func TestTextNoFindings(t *testing.T) {
	r := &analyzer.Result{Schema: analyzer.SchemaVersion, Findings: []analyzer.Finding{}, Locks: []analyzer.LockRow{{}}, Points: []analyzer.PointRow{{}, {}}}
	var b bytes.Buffer
	if err := Text(&b, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "No lock contention found. Looked at 1 lock below the thresholds and 2 program points."; !strings.HasPrefix(strings.ReplaceAll(b.String(), "\n", " "), want) {
		t.Errorf("output %q, want prefix %q", b.String(), want)
	}
}

// Threads of a live recording can idle in several places; the summary
// counts each thread once.
func TestIdleSummaryCountsThreadsOnce(t *testing.T) {
	r := &analyzer.Result{Schema: analyzer.SchemaVersion, Findings: []analyzer.Finding{},
		Target: analyzer.Target{Source: "live", Population: 9, Unit: "threads"},
		Idle: []analyzer.IdleGroup{
			{Reason: "sleeping (clock_nanosleep)", Count: 4, Unit: "threads", TIDs: []int{11, 12, 13, 14}},
			{Reason: "idle threads parked on a condition variable", Count: 4, Unit: "threads", TIDs: []int{11, 12, 13, 14}},
			{Reason: "waiting for a thread to exit (pthread_join)", Count: 1, Unit: "threads", TIDs: []int{10}},
		}}
	var b bytes.Buffer
	if err := Text(&b, r, TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	if want := "Not contention: 5 threads wait without contention (4 idle threads parked"; !strings.Contains(b.String(), want) {
		t.Errorf("output %q, want %q", b.String(), want)
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc ddd\nee", 9, 2, 0)
	want := []string{"aaa bbb", "ccc ddd", "ee"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wrap (-want +got):\n%s", diff)
	}
	if got := wrap("a-very-long-unbreakable-token x", 10, 0, 0); got[0] != "a-very-long-unbreakable-token" {
		t.Errorf("long token split: %q", got)
	}
	// Escape sequences take no width: bold text wraps where plain text
	// does.
	plain := wrap("aaa bbb ccc ddd eee", 9, 0, 0)
	bold := wrap("\x1b[1maaa bbb ccc ddd eee\x1b[0m", 9, 0, 0)
	for i := range bold {
		bold[i] = ansi.Strip(bold[i])
	}
	if diff := cmp.Diff(plain, bold); diff != "" {
		t.Errorf("bold text wraps elsewhere than plain text (-plain +bold):\n%s", diff)
	}
	// Kinds and paths are never split at their hyphens.
	if diff := cmp.Diff([]string{"a", "lock-convoy", "b"}, wrap("a lock-convoy b", 8, 0, 0)); diff != "" {
		t.Errorf("hyphenated word split (-want +got):\n%s", diff)
	}
	// A figure and its unit stay together.
	if diff := cmp.Diff([]string{"waited", "4 s in", "total"}, wrap("waited 4 s in total", 7, 0, 0)); diff != "" {
		t.Errorf("unit split (-want +got):\n%s", diff)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	in := sample()
	var b bytes.Buffer
	if err := JSON(&b, in); err != nil {
		t.Fatal(err)
	}
	var out analyzer.Result
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if diff := cmp.Diff(*in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	var raw map[string]any
	json.Unmarshal(b.Bytes(), &raw)
	if raw["schema"] != analyzer.SchemaVersion {
		t.Errorf("schema %v", raw["schema"])
	}
	f := raw["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"kind", "headline", "point", "lock", "participants", "population", "unit", "wait_seconds", "wait_share", "evidence", "confidence", "suggestion", "score"} {
		if _, ok := f[k]; !ok {
			t.Errorf("finding lacks %q", k)
		}
	}
	// No findings still gives an empty list, never null.
	b.Reset()
	JSON(&b, &analyzer.Result{})
	if !strings.Contains(b.String(), `"findings": []`) {
		t.Errorf("empty result: %s", b.String())
	}
}

func TestPprofRoundTrip(t *testing.T) {
	in := sample()
	var b bytes.Buffer
	if err := Pprof(&b, in); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatalf("parse written profile: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if diff := cmp.Diff([]string{"wait/nanoseconds", "cpu/nanoseconds"}, types); diff != "" {
		t.Errorf("sample types (-want +got):\n%s", diff)
	}
	if len(p.Sample) != 2 {
		t.Fatalf("%d samples, want point and releaser", len(p.Sample))
	}
	s := p.Sample[0]
	if diff := cmp.Diff([]int64{276_400_000_000, 1_240_000_000}, s.Value); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if !s.HasLabel(LabelKind, "lock-convoy") || !s.HasLabel(LabelFinding, "1") || !s.HasLabel(LabelRole, "point") {
		t.Errorf("labels %v", s.Label)
	}
	var fns []string
	for _, l := range s.Location {
		fns = append(fns, l.Line[0].Function.Name)
	}
	want := []string{"sync.(*Mutex).Lock", "github.com/example/service/internal/relay.(*subscription).onIncomingMessage", "github.com/example/service/internal/relay.relayWorker"}
	if diff := cmp.Diff(want, fns); diff != "" {
		t.Errorf("stack (-want +got):\n%s", diff)
	}
	if !p.Sample[1].HasLabel(LabelRole, "releaser") || p.Sample[1].Value[0] != 0 {
		t.Errorf("releaser sample %v %v", p.Sample[1].Label, p.Sample[1].Value)
	}
	// A result without findings still gives a valid, empty profile.
	b.Reset()
	if err := Pprof(&b, &analyzer.Result{}); err != nil {
		t.Fatal(err)
	}
	if p, err := profile.Parse(&b); err != nil || len(p.Sample) != 0 {
		t.Errorf("empty profile: %v, %v", p, err)
	}
}

// TestTextEscapesHostileNames: names from the target (the process and
// its functions, frames, locks, idle reasons, notes) reach the text
// report escaped, with and without colour, while the JSON report keeps
// them exact.
func TestTextEscapesHostileNames(t *testing.T) {
	const hostile = "\x1b]0;PWNED\x07\x1b[2J"
	r := sample()
	r.Target.Comm, r.Target.PID = hostile, 7
	f := &r.Findings[0]
	f.Headline += hostile
	f.Point.Function = hostile
	f.Point.Stack[1].Func = hostile + "fn"
	f.Point.Stack[1].File = "/src/" + hostile + ".go"
	f.Lock.Name = hostile
	f.Evidence[0].Text += hostile
	r.Idle[0].Reason = hostile
	r.Notes = append(r.Notes, hostile)
	for _, color := range []bool{false, true} {
		var b bytes.Buffer
		if err := Text(&b, r, TextOptions{Color: color, ShowIdle: true}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if color {
			// The renderer's own colour codes are the only escapes.
			out = ansi.Strip(out)
		}
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("colour %v: a control character reached the text:\n%q", color, out)
		}
		if n := strings.Count(out, `\x1b]0;PWNED\x07\x1b[2J`); n < 8 {
			t.Errorf("colour %v: the names show escaped %d times, want every one:\n%s", color, n, out)
		}
	}
	if f.Point.Function != hostile {
		t.Error("Text changed the result it rendered")
	}
	var j bytes.Buffer
	if err := JSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var back analyzer.Result
	if err := json.Unmarshal(j.Bytes(), &back); err != nil || back.Target.Comm != hostile || back.Findings[0].Point.Function != hostile {
		t.Errorf("JSON does not keep the names exact: %v", err)
	}
}

// A lock is named by one address. A key that names the lock line's symbol
// in the same module again, with the structure's offset instead of the
// word's (CPython's GIL: _PyRuntime+0x1b0 on the line, +0x188 in the
// key), is left to the JSON; a data-symbol key beside a description (a
// queue of per-thread words) becomes the line, without the raw address of
// one of the words; any other key is shown below the line.
func TestLockKeyAgreesWithLine(t *testing.T) {
	const addr = "0x7f2230b4e6f0"
	for _, c := range []struct {
		key, name string
		line      string
		keyShown  bool
	}{
		{"libpython3.11.so.1.0:_PyRuntime+0x188", "_PyRuntime+0x1b0 (libpython3.11.so.1.0)", addr + " _PyRuntime+0x1b0 (libpython3.11.so.1.0)", false},
		{"spin:sub", "sub+0x8 (spin)", addr + " sub+0x8 (spin)", false},
		{"stripe:table_lock", "table_lock (stripe)", addr + " table_lock (stripe)", false},
		{"libfoo.so:ns::lock+0x10", "ns::lock+0x18 (libfoo.so)", addr + " ns::lock+0x18 (libfoo.so)", false},
		{"libpython3.11.so.1.0:_PyRuntime+0x188", "a queue of 7 per-thread wait words", "_PyRuntime+0x188 (libpython3.11.so.1.0): a queue of 7 per-thread wait words", false},
		{"other.so:_PyRuntime+0x188", "_PyRuntime+0x1b0 (libpython3.11.so.1.0)", "_PyRuntime+0x188 (other.so): _PyRuntime+0x1b0 (libpython3.11.so.1.0)", false},
		{"latch lock waited at shmlock!row_lock_acquire", "the lock row_lock_acquire waits for", addr + " the lock row_lock_acquire waits for", true},
		{"/dev/shm/pool+0x40", "", addr, true},
		{"", "table_lock (stripe)", addr + " table_lock (stripe)", false},
	} {
		r := sample()
		r.Findings[0].Lock = &analyzer.LockID{Key: c.key, Address: addr, Name: c.name}
		var b bytes.Buffer
		if err := Text(&b, r, TextOptions{Width: 200}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "  lock        "+c.line+"\n") {
			t.Errorf("key %q, name %q: want the line %q:\n%s", c.key, c.name, c.line, out)
		}
		if got := strings.Contains(out, "lock key"); got != c.keyShown {
			t.Errorf("key %q beside %q: key line shown %v, want %v", c.key, c.name, got, c.keyShown)
		}
	}
}
