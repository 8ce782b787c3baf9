package goprof_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/goprof"
)

func parseDumpFile(t *testing.T, name string) *goprof.Dump {
	t.Helper()
	d, err := goprof.ParseDump(readTestdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// groupAt returns the groups whose first non-runtime frame (skipping
// runtime, sync and internal/sync) is fn.
func groupsAt(d *goprof.Dump, fn string) []*goprof.Group {
	var out []*goprof.Group
	for _, g := range d.Groups {
		for _, f := range g.Frames {
			if strings.HasPrefix(f.Func, "runtime.") || strings.HasPrefix(f.Func, "sync.") || strings.HasPrefix(f.Func, "internal/sync.") {
				continue
			}
			if f.Func == fn {
				out = append(out, g)
			}
			break
		}
	}
	return out
}

func one(t *testing.T, gs []*goprof.Group, what string) *goprof.Group {
	t.Helper()
	if len(gs) != 1 {
		t.Fatalf("%s: %d groups, want 1", what, len(gs))
	}
	return gs[0]
}

func totalCount(d *goprof.Dump) int {
	n := 0
	for _, g := range d.Groups {
		n += g.Count
	}
	return n
}

func TestParseDumpDebug2Go126(t *testing.T) {
	d := parseDumpFile(t, "go126-debug2.txt")
	if d.Kind != goprof.KindGoroutineDump {
		t.Errorf("kind %s", d.Kind)
	}
	if d.Total != 14 || totalCount(d) != 14 {
		t.Errorf("total %d, groups count %d, want 14", d.Total, totalCount(d))
	}
	// Three goroutines wait at one sync.Mutex.Lock: one merged group.
	g := one(t, groupsAt(d, "main.(*box[...]).wait"), "box.wait")
	want := &goprof.Group{
		Count: 3,
		IDs:   []int64{3, 4, 5},
		State: "sync.Mutex.Lock",
		Frames: []goprof.Frame{
			{Func: "internal/sync.runtime_SemacquireMutex", File: "runtime/sema.go", Line: 95, Args: "0x0?, 0x0?, 0x0?"},
			{Func: "internal/sync.(*Mutex).lockSlow", File: "internal/sync/mutex.go", Line: 149, Args: "0x3bcf1a790020"},
			{Func: "internal/sync.(*Mutex).Lock", File: "internal/sync/mutex.go", Line: 70, Args: "..."},
			{Func: "sync.(*Mutex).Lock", File: "sync/mutex.go", Line: 46, Args: "..."},
			{Func: "main.(*box[...]).wait", File: "dumpgen/main.go", Line: 15, Args: "0x0?"},
		},
		CreatedBy: &goprof.Frame{Func: "main.main", File: "dumpgen/main.go", Line: 43},
		CreatorID: 1,
	}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("box.wait group (-want +got):\n%s", diff)
	}
	for fn, state := range map[string]string{
		"main.(*svc).reader":                 "sync.RWMutex.RLock",
		"main.(*svc).writer":                 "sync.Mutex.Lock",
		"main.selectLoop":                    "select",
		"main.condWait":                      "sync.Cond.Wait",
		"main.wgWait":                        "sync.WaitGroup.Wait",
		"main.locked":                        "chan receive",
		"runtime/pprof.writeGoroutineStacks": "running",
		"time.Sleep":                         "sleep",
	} {
		if g := one(t, groupsAt(d, fn), fn); g.State != state {
			t.Errorf("%s: state %q, want %q", fn, g.State, state)
		}
	}
	if g := one(t, groupsAt(d, "main.locked"), "locked"); !g.LockedToThread {
		t.Error("main.locked: not locked to thread")
	}
	deep := one(t, groupsAt(d, "main.deep"), "deep")
	if !deep.Elided || len(deep.Frames) != 100 {
		t.Errorf("deep: elided %v with %d frames, want elided with 100", deep.Elided, len(deep.Frames))
	}
	// Two recvLoop goroutines with different creators stay apart.
	if gs := groupsAt(d, "main.recvLoop"); len(gs) != 2 {
		t.Errorf("recvLoop: %d groups, want 2 (different creators)", len(gs))
	}
}

func TestParseDumpLabels(t *testing.T) {
	d := parseDumpFile(t, "go126-labels-debug2.txt")
	var labelled []*goprof.Group
	for _, g := range d.Groups {
		if g.Labels != nil {
			labelled = append(labelled, g)
		}
	}
	g := one(t, labelled, "labelled")
	if diff := cmp.Diff(map[string]string{"relay": "r1", "sub": "s9"}, g.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if g.State != "chan receive" {
		t.Errorf("state %q, want %q", g.State, "chan receive")
	}
}

func TestParseDumpDebug1(t *testing.T) {
	d := parseDumpFile(t, "go126-debug1.txt")
	if d.Kind != goprof.KindGoroutineText || d.Total != 14 || totalCount(d) != 14 {
		t.Errorf("kind %s total %d count %d, want goroutine-text 14 14", d.Kind, d.Total, totalCount(d))
	}
	g := one(t, groupsAt(d, "main.(*box[...]).wait"), "box.wait")
	if g.Count != 3 || g.State != "" || g.IDs != nil {
		t.Errorf("box.wait: count %d state %q ids %v, want 3 goroutines without state or ids", g.Count, g.State, g.IDs)
	}
	wantLeaf := goprof.Frame{Func: "internal/sync.runtime_SemacquireMutex", File: "runtime/sema.go", Line: 95, PC: 0x480ca4}
	if diff := cmp.Diff(wantLeaf, g.Frames[0]); diff != "" {
		t.Errorf("leaf frame (-want +got):\n%s", diff)
	}
	labelled := 0
	for _, g := range d.Groups {
		if g.Labels != nil {
			labelled++
			if g.Labels["relay"] != "r1" || g.Labels["sub"] != "s9" {
				t.Errorf("labels %v", g.Labels)
			}
		}
	}
	if labelled != 1 {
		t.Errorf("%d labelled groups, want 1", labelled)
	}
}

func TestParseDumpGo120(t *testing.T) {
	d := parseDumpFile(t, "go120-debug2.txt")
	if d.Total != 10 {
		t.Errorf("total %d, want 10", d.Total)
	}
	g := one(t, groupsAt(d, "example.com/relayd/pool.(*Subscription).onIncomingMessage"), "onIncomingMessage")
	if g.Count != 3 || g.State != "semacquire" || g.WaitMinutes != 3 {
		t.Errorf("convoy group: count %d state %q minutes %d, want 3 semacquire 3", g.Count, g.State, g.WaitMinutes)
	}
	if diff := cmp.Diff([]int64{18, 19, 20}, g.IDs); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if g.CreatorID != 0 || g.CreatedBy == nil || g.CreatedBy.Func != "example.com/relayd/pool.(*Pool).connect" {
		t.Errorf("creator %+v id %d, want (*Pool).connect without id", g.CreatedBy, g.CreatorID)
	}
	// Arguments that differ between members are dropped, common ones kept.
	if g.Frames[1].Args != "0xc0001a2000" || g.Frames[3].Args != "" {
		t.Errorf("merged args: lockSlow %q, onIncomingMessage %q", g.Frames[1].Args, g.Frames[3].Args)
	}
	gc := one(t, groupsAt(d, "example.com/relayd/internal/mem.(*Trimmer).loop"), "gc")
	if gc.State != "semacquire" || gc.Frames[0].Func != "runtime.GC" {
		t.Errorf("runtime-internal semacquire: state %q leaf %q", gc.State, gc.Frames[0].Func)
	}
	pinned := one(t, groupsAt(d, "example.com/relayd/internal/sched.pinned"), "pinned")
	if !pinned.LockedToThread || pinned.WaitMinutes != 12 || pinned.State != "chan receive" {
		t.Errorf("pinned: locked %v minutes %d state %q", pinned.LockedToThread, pinned.WaitMinutes, pinned.State)
	}
	walk := one(t, groupsAt(d, "example.com/relayd/parse.walk"), "walk")
	if !walk.Elided || len(walk.Frames) != 3 {
		t.Errorf("walk: elided %v frames %d", walk.Elided, len(walk.Frames))
	}
	var unavailable *goprof.Group
	for _, g := range d.Groups {
		if len(g.IDs) == 1 && g.IDs[0] == 36 {
			unavailable = g
		}
	}
	if unavailable == nil || unavailable.State != "running" || len(unavailable.Frames) != 0 || unavailable.CreatedBy == nil {
		t.Errorf("goroutine 36 (stack unavailable): %+v", unavailable)
	}
}

func TestParseDumpSigquit(t *testing.T) {
	d := parseDumpFile(t, "go126-sigquit.txt")
	// GOTRACEBACK=system shows runtime goroutines too, with gp=/m=
	// fields in the header and a register dump at the end.
	var idle, block *goprof.Group
	for _, g := range d.Groups {
		switch g.State {
		case "idle":
			idle = g
		case "select (no cases)":
			block = g
		}
	}
	if idle == nil || idle.IDs[0] != 0 || idle.Frames[0].Func != "runtime.futex" {
		t.Errorf("goroutine 0: %+v", idle)
	}
	if block == nil || block.Frames[1].Func != "runtime.block" {
		t.Errorf("main goroutine in select{}: %+v", block)
	}
	if d.Total < 15 {
		t.Errorf("total %d, want at least the 15 goroutines of the program", d.Total)
	}
}

func TestParseDumpPanic(t *testing.T) {
	d := parseDumpFile(t, "go126-panic.txt")
	if d.Total != 3 || len(d.Groups) != 2 {
		t.Fatalf("total %d in %d groups, want 3 in 2", d.Total, len(d.Groups))
	}
	g := one(t, groupsAt(d, "main.(*cache).get"), "cache.get")
	if g.Count != 2 || g.Frames[0].Args != "" || g.Frames[1].Args != "0x3878a8698010" {
		t.Errorf("merged group: count %d, leaf args %q, lockSlow args %q", g.Count, g.Frames[0].Args, g.Frames[1].Args)
	}
}

func TestParseDumpHeaders(t *testing.T) {
	tests := []struct {
		header string
		want   goprof.Group
	}{
		{"goroutine 7 [chan receive]:", goprof.Group{State: "chan receive"}},
		{"goroutine 7 gp=0xc000003c00 m=nil [chan receive]:", goprof.Group{State: "chan receive"}},
		{"goroutine 1 gp=0xc000002380 m=0 mp=0x5c6e20 [running]:", goprof.Group{State: "running"}},
		{"goroutine 18 [sync.Mutex.Lock, 2 minutes]:", goprof.Group{State: "sync.Mutex.Lock", WaitMinutes: 2}},
		{"goroutine 18 [semacquire, 1 minutes, locked to thread]:", goprof.Group{State: "semacquire", WaitMinutes: 1, LockedToThread: true}},
		{"goroutine 9 [select (no cases), 5 minutes]:", goprof.Group{State: "select (no cases)", WaitMinutes: 5}},
		{"goroutine 9 [chan receive (nil chan)]:", goprof.Group{State: "chan receive (nil chan)"}},
		{"goroutine 9 [chan receive (scan)]:", goprof.Group{State: "chan receive"}},
		{"goroutine 9 [sync.WaitGroup.Wait (leaked), 3 minutes]:", goprof.Group{State: "sync.WaitGroup.Wait", Leaked: true, WaitMinutes: 3}},
		{"goroutine 9 [select (durable), synctest bubble 4]:", goprof.Group{State: "select (durable)"}},
		{`goroutine 9 [IO wait, 4 minutes labels:{"a]:": "b, c", "k": "v\"q"}]:`, goprof.Group{State: "IO wait", WaitMinutes: 4, Labels: map[string]string{"a]:": "b, c", "k": `v"q`}}},
	}
	for _, tt := range tests {
		d, err := goprof.ParseDump([]byte(tt.header + "\nmain.f(...)\n\t/x/main.go:3\n"))
		if err != nil {
			t.Errorf("%s: %v", tt.header, err)
			continue
		}
		g := *d.Groups[0]
		g.Count, g.IDs, g.Frames = 0, nil, nil
		if diff := cmp.Diff(tt.want, g); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.header, diff)
		}
	}
}

func TestParseDumpFrames(t *testing.T) {
	text := "goroutine 1 [running]:\n" +
		"main.(*Map[...]).Get(0xc000010000, {0x4a1310, 0x1})\n" +
		"\t/home/me/my project/map.go:12 +0x1d\n" +
		"main.noargs()\n" +
		"\tC:/src/app/main.go:7 +0x5 fp=0xc00004ff58 sp=0xc00004ff48 pc=0x45d8a5\n" +
		"panic({0x4a0e00?, 0x4d5e10?})\n" +
		"\t/usr/local/go/src/runtime/panic.go:770 +0x132\n"
	d, err := goprof.ParseDump([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []goprof.Frame{
		{Func: "main.(*Map[...]).Get", File: "/home/me/my project/map.go", Line: 12, Args: "0xc000010000, {0x4a1310, 0x1}"},
		{Func: "main.noargs", File: "C:/src/app/main.go", Line: 7},
		{Func: "panic", File: "/usr/local/go/src/runtime/panic.go", Line: 770, Args: "{0x4a0e00?, 0x4d5e10?}"},
	}
	if diff := cmp.Diff(want, d.Groups[0].Frames); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestParseDumpCRLF(t *testing.T) {
	d, err := goprof.ParseDump([]byte("goroutine 3 [select]:\r\nmain.loop()\r\n\t/x/main.go:9 +0x1\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Groups[0].Frames[0]; f.File != "/x/main.go" || f.Line != 9 {
		t.Errorf("frame %+v", f)
	}
}

func TestParseDumpErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "empty goroutine dump"},
		{"blank", "\n\n  \n", "empty goroutine dump"},
		{"not a dump", "hello\n", `line 1: expected "goroutine profile: total N" or "goroutine N [state]:"`},
		{"bad header", "goroutine x [running]:\n", "line 1: expected goroutine header"},
		{"no state", "goroutine 1 []:\nmain.f()\n\t/a.go:1\n", "line 1: goroutine 1 has an empty state"},
		{"missing file line", "goroutine 1 [running]:\nmain.f()\nmain.g()\n", "line 3: expected frame file:line"},
		{"end after call", "goroutine 1 [running]:\nmain.f()\n", "line 2: expected frame file:line after a function call, got end of input"},
		{"file line first", "goroutine 1 [running]:\n\t/a.go:3\n", "line 2: expected function call"},
		{"bad line number", "goroutine 1 [running]:\nmain.f()\n\t/a.go:x\n", "line 3: expected frame file:line"},
		{"created by without file", "goroutine 1 [running]:\ncreated by main.main\n", "expected frame file:line"},
		{"junk between goroutines", "goroutine 1 [running]:\nmain.f()\n\t/a.go:1\n\nnonsense here\n", "line 5: expected goroutine header"},
		{"bad labels", "goroutine 1 [running labels:{\"a\" \"b\"}]:\n", "line 1: bad labels"},
		{"traceback without goroutines", "panic: boom\n\nexit status 2\n", "traceback without any goroutine header"},
		{"debug1 total", "goroutine profile: total 3\n1 @ 0x1\n#\t0x1\tmain.f+0x1\t/a.go:1\n", "header says total 3 but the stacks count 1"},
		{"debug1 frame before stack", "goroutine profile: total 1\n#\t0x1\tmain.f+0x1\t/a.go:1\n", "line 2: frame outside a stack"},
		{"debug1 bad frame", "goroutine profile: total 1\n1 @ 0x1\n#\t0x1\tmain.f+0x1\n", "line 3: expected frame"},
		{"debug1 bad pc", "goroutine profile: total 1\n1 @ 0x1\n#\tzz\tmain.f+0x1\t/a.go:1\n", "line 3: bad frame PC"},
		{"debug1 bad count line", "goroutine profile: total 1\nseven @ 0x1\n", "line 2: expected \"N @ 0x…\""},
		{"debug1 labels twice", "goroutine profile: total 1\n1 @ 0x1\n# labels: {\"a\":\"b\"}\n# labels: {\"a\":\"b\"}\n", "line 4: labels outside a stack header"},
		{"debug1 bad header", "goroutine profile: total many\n", "line 1: expected \"goroutine profile: total N\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := goprof.ParseDump([]byte(tt.text))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, goprof.ErrBadProfile) {
				t.Errorf("%q does not wrap ErrBadProfile", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

func TestParseDumpTracebackEnds(t *testing.T) {
	// `go run` appends the exit status after the last goroutine.
	text := "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\nexit status 2\n"
	d, err := goprof.ParseDump([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if d.Total != 1 || d.Groups[0].Frames[0].Func != "main.main" {
		t.Errorf("dump %+v", d.Groups[0])
	}
}

func TestLockAddr(t *testing.T) {
	for _, tt := range []struct {
		frames []goprof.Frame
		want   string
	}{
		{[]goprof.Frame{{Func: "internal/sync.runtime_SemacquireMutex", Args: "0x70?, 0x0?, 0x455501?"}, {Func: "internal/sync.(*Mutex).lockSlow", Args: "0x3878a8698010"}}, "0x3878a8698010"},
		{[]goprof.Frame{{Func: "sync.runtime_SemacquireRWMutexR", Args: "0xc000012348, 0x0, 0x0"}}, "0xc000012348"},
		{[]goprof.Frame{{Func: "internal/sync.(*Mutex).lockSlow", Args: "..."}}, ""},
		{[]goprof.Frame{{Func: "runtime.chanrecv1", Args: "0xc000012348, 0x0"}}, ""},
	} {
		if got := goprof.LockAddr(tt.frames); got != tt.want {
			t.Errorf("LockAddr(%+v) = %q, want %q", tt.frames, got, tt.want)
		}
	}
}
