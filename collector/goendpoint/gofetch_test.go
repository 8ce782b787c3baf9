package goendpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof" // the helper target serves the standard endpoints
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/collector/goendpoint/goendpointtest"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// goFetchTarget is the Go target of the fetch tests (a helper process,
// see TestMain): it turns on the mutex and block profiles, contends on a
// sync.Mutex from four goroutines, serves net/http/pprof on loopback,
// prints its URL and runs until its input closes.
func goFetchTarget() int {
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	var mu sync.Mutex
	var shared int
	for range 4 {
		go contendedWork(&mu, &shared)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	go http.Serve(ln, nil)
	fmt.Printf("http://%s\n", ln.Addr())
	bufio.NewScanner(os.Stdin).Scan()
	return 0
}

// contendedWork holds mu for a little work, over and over: the function
// the mutex and block profiles must name.
func contendedWork(mu *sync.Mutex, shared *int) {
	for {
		mu.Lock()
		for i := 0; i < 20000; i++ {
			*shared += i
		}
		mu.Unlock()
	}
}

// startGoTarget runs the helper target and returns its pprof URL.
func startGoTarget(t *testing.T) string {
	t.Helper()
	out := startHelper(t, "gofetch-target")
	if !out.Scan() || !strings.HasPrefix(out.Text(), "http://") {
		t.Fatalf("helper target did not print its URL: %q", out.Text())
	}
	return out.Text()
}

// hasFunc reports whether a sample of p has a frame of a function whose
// name contains name.
func hasFunc(p *profile.Profile, name string) bool {
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil && strings.Contains(l.Function.Name, name) {
					return true
				}
			}
		}
	}
	return false
}

func checkGoProfiles(t *testing.T, res *Profiles, wantCPU bool) {
	t.Helper()
	for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock} {
		p := res.Profiles[v]
		if p == nil {
			t.Errorf("%s: missing (warnings: %q)", v, res.Warnings)
			continue
		}
		if err := p.CheckValid(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		if !hasFunc(p, "contendedWork") {
			t.Errorf("%s: no sample in contendedWork", v)
		}
	}
	if p := res.Profiles[recording.ViewGoCPU]; wantCPU {
		if p == nil || !hasFunc(p, "contendedWork") {
			t.Errorf("cpu profile missing or without contendedWork (warnings: %q)", res.Warnings)
		}
	}
}

func TestGoFetchKnownDuration(t *testing.T) {
	url := startGoTarget(t)
	g, err := Start(t.Context(), Options{URL: url, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	res := g.Stop()
	checkGoProfiles(t, res, true)
	// The deltas came from ?seconds=1: about one second of contention,
	// while the target's cumulative profile covers its whole life.
	if d := res.Profiles[recording.ViewGoMutex].DurationNanos; d != 0 && (d < int64(500*time.Millisecond) || d > int64(5*time.Second)) {
		t.Errorf("mutex delta covers %v, want about 1s", time.Duration(d))
	}
	if len(res.Goroutines) != 2 {
		t.Fatalf("got %d goroutine dumps, want 2 (at 1/3 and 2/3)", len(res.Goroutines))
	}
	for i, d := range res.Goroutines {
		if !bytes.Contains(d.Raw, []byte("contendedWork")) || d.Taken.IsZero() {
			t.Errorf("dump %d: no contendedWork in its text or no time taken", i)
		}
	}
	if len(res.Warnings) > 0 && !strings.Contains(strings.Join(res.Warnings, "\n"), "goroutine dump") {
		t.Errorf("warnings: %q", res.Warnings)
	}
	// Stop again: the same result.
	if g.Stop() != res {
		t.Error("second Stop returned another result")
	}
	var r recording.Recording
	res.Apply(&r)
	if r.Profile(recording.ViewGoMutex) == nil || len(r.Goroutines) != 2 {
		t.Error("Apply did not store the profiles and dumps")
	}
}

func TestGoFetchUntilStopped(t *testing.T) {
	url := startGoTarget(t)
	g, err := newGoFetch(t.Context(), Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	g.cpuChunk, g.dumpEvery = time.Second, 400*time.Millisecond
	// The subtraction only shows when the base taken at the start already
	// holds contention: wait until the target has some.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		base, err := g.fetchProfile(context.Background(), "mutex", 10*time.Second, "")
		if err != nil {
			t.Fatal(err)
		}
		if totalValue(base, 1) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the target's mutex profile stayed empty for 10s")
		}
	}
	g.run()
	// Two 1s CPU parts completed, however late their fetches run.
	testbin.WaitUntil(t, "two CPU parts", func() bool {
		cpu := g.Window(g.start, time.Now()).Profiles[recording.ViewGoCPU]
		return cpu != nil && cpu.DurationNanos >= int64(1500*time.Millisecond)
	})
	res := g.Stop()
	checkGoProfiles(t, res, true)
	// Deltas by subtraction: less than the cumulative profile now.
	cum, err := g.fetchProfile(context.Background(), "mutex", 10*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, all := totalValue(res.Profiles[recording.ViewGoMutex], 1), totalValue(cum, 1); got <= 0 || got >= all {
		t.Errorf("mutex delay over the recording = %d, want between 0 and the cumulative %d", got, all)
	}
	if n := len(res.Goroutines); n < 2 || n > goMaxDumps {
		t.Errorf("got %d dumps, want 2..%d", n, goMaxDumps)
	}
	if cpu := res.Profiles[recording.ViewGoCPU]; cpu != nil && cpu.DurationNanos < int64(1500*time.Millisecond) {
		t.Errorf("cpu profile covers %v, want two 1s parts merged", time.Duration(cpu.DurationNanos))
	}
}

func totalValue(p *profile.Profile, i int) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[i]
	}
	return n
}

// fetchFor fetches from srvURL with small limits for a one-second
// recording and returns the result.
func fetchFor(t *testing.T, srvURL string) *Profiles {
	t.Helper()
	g := shortFetch(t, srvURL, time.Second)
	time.Sleep(time.Second)
	return g.Stop()
}

// shortFetch starts a fetch against srv with small limits and timeouts.
func shortFetch(t *testing.T, srvURL string, dur time.Duration) *Fetcher {
	t.Helper()
	g, err := newGoFetch(t.Context(), Options{URL: srvURL, Duration: dur})
	if err != nil {
		t.Fatal(err)
	}
	// A second answers a test server even on a loaded 2-CPU machine
	// running other packages' tests at the same time.
	g.snapshotTimeout, g.deltaGrace = time.Second, time.Second
	g.profileLimit, g.dumpLimit = 1024, 1024
	g.run()
	return g
}

func TestGoFetchErrors(t *testing.T) {
	bigProfile := func() []byte {
		p := goendpointtest.Profile(1, 5)
		for i := range 200 {
			fn := &profile.Function{ID: uint64(i + 10), Name: fmt.Sprintf("pkg.function%d", i)}
			p.Function = append(p.Function, fn)
			loc := &profile.Location{ID: uint64(i + 10), Line: []profile.Line{{Function: fn}}}
			p.Location = append(p.Location, loc)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, 1}})
		}
		var buf bytes.Buffer
		p.Write(&buf)
		return buf.Bytes()
	}()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"404", http.NotFound, []string{
			"pprof endpoint: mutex profile: 404 Not Found — is net/http/pprof imported?",
			"pprof endpoint: block profile: 404 Not Found — is net/http/pprof imported?",
			"pprof endpoint: cpu profile: 404 Not Found — is net/http/pprof imported?",
		}},
		{"slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, []string{
			"mutex profile: no complete answer in time",
			"cpu profile: no complete answer in time",
		}},
		{"oversized", func(w http.ResponseWriter, r *http.Request) { w.Write(bigProfile) }, []string{
			"mutex profile: response too large",
			"cpu profile: response too large",
		}},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello, world")) }, []string{
			`mutex profile: not a profile`,
			`block profile: not a profile`,
		}},
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Could not enable CPU profiling: cpu profiling already in use", http.StatusInternalServerError)
		}, []string{"cpu profile: 500 Internal Server Error: the target's CPU profiler is already in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			res := fetchFor(t, srv.URL)
			if len(res.Profiles) != 0 {
				t.Errorf("got profiles %v from a broken endpoint", res.Profiles)
			}
			all := strings.Join(res.Warnings, "\n")
			t.Logf("warnings:\n%s", all)
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestGoFetchUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	g := shortFetch(t, url, time.Second)
	res := g.Stop()
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "connection refused") || !strings.Contains(res.Warnings[0], url) {
		t.Errorf("warnings = %q, want one naming %s and the refused connection", res.Warnings, url)
	}
}

func TestGoFetchOldGoCumulative(t *testing.T) {
	// A target whose runtime ignores ?seconds= answers at once with the
	// cumulative profile; the fetch must fall back to end minus start.
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/mutex") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		calls++
		n := int64(calls)
		mu.Unlock()
		p := goendpointtest.Profile(10*n, 1000*n)
		p.TimeNanos = time.Now().UnixNano()
		p.Write(w)
	}))
	defer srv.Close()
	res := fetchFor(t, srv.URL)
	p := res.Profiles[recording.ViewGoMutex]
	if p == nil {
		t.Fatalf("no mutex profile; warnings %q", res.Warnings)
	}
	// Three answers: base and the ignored ?seconds= in some order, then
	// the end snapshot (call 3). The delta is end minus base.
	if len(p.Sample) != 1 || p.Sample[0].Value[0] <= 0 || p.Sample[0].Value[0] > 20 || p.Sample[0].Value[0]*100 != p.Sample[0].Value[1] {
		t.Errorf("delta sample = %v, want end minus base of the cumulative counts", p.Sample)
	}
}

func TestSubtractProfile(t *testing.T) {
	base, end := goendpointtest.Profile(3, 300), goendpointtest.Profile(10, 1000)
	extra := goendpointtest.Profile(4, 40)
	extra.Function[0].Name = "main.cold"
	end, err := profile.Merge([]*profile.Profile{end, extra})
	if err != nil {
		t.Fatal(err)
	}
	d, err := subtractProfile(end, base)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for _, s := range d.Sample {
		got[s.Location[0].Line[0].Function.Name] = s.Value
	}
	if fmt.Sprint(got) != "map[main.cold:[4 40] main.hot:[7 700]]" {
		t.Errorf("end - base = %v", got)
	}
	// An unchanged sample vanishes.
	d, err = subtractProfile(base, base)
	if err != nil || len(d.Sample) != 0 {
		t.Errorf("base - base = %v, %v; want no samples", d.Sample, err)
	}
}

func TestPprofBase(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:6060":               "http://127.0.0.1:6060/debug/pprof",
		"127.0.0.1:6060":                      "http://127.0.0.1:6060/debug/pprof",
		"http://h:1/debug/pprof/":             "http://h:1/debug/pprof",
		"https://h/app/debug/pprof?x=1":       "https://h/app/debug/pprof",
		"http://[::1]:6060/prefix/":           "http://[::1]:6060/prefix/debug/pprof",
		"  http://localhost:6060/debug/pprof": "http://localhost:6060/debug/pprof",
	} {
		got, err := BaseURL(in)
		if err != nil || got != want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ftp://h/x", "http://", "http://h:bad port/"} {
		if got, err := BaseURL(in); err == nil {
			t.Errorf("BaseURL(%q) = %q, want an error", in, got)
		}
	}
	if _, err := Start(t.Context(), Options{URL: "ftp://x"}); err == nil {
		t.Error("Start accepted an ftp URL")
	}
}

func TestGoFetchStoppedEarly(t *testing.T) {
	url := startGoTarget(t)
	g, err := Start(t.Context(), Options{URL: url, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	t0 := time.Now()
	res := g.Stop()
	if waited := time.Since(t0); waited > 10*time.Second {
		t.Errorf("early Stop waited %v for the 30s requests", waited)
	}
	// Mutex and block come from snapshots; the CPU profile's first part
	// had not completed.
	checkGoProfiles(t, res, false)
	if res.Profiles[recording.ViewGoCPU] != nil {
		t.Error("a CPU profile after 1.2s, before its first 5s part ended")
	}
	// The time it ended after is 1.2s or, on a busy machine, a little
	// more.
	if all := strings.Join(res.Warnings, "\n"); !regexp.MustCompile(`cpu profile: the recording ended after [0-9.]+s, before the first 5s part completed`).MatchString(all) {
		t.Errorf("warnings lack the lost CPU profile:\n%s", all)
	}
}

func TestGoFetchEmptyProfiles(t *testing.T) {
	// A program that never enabled the mutex and block profiles serves
	// them empty.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := goendpointtest.Profile(0, 0)
		p.Sample = nil
		p.TimeNanos = time.Now().UnixNano()
		p.Write(w)
	}))
	defer srv.Close()
	res := fetchFor(t, srv.URL)
	all := strings.Join(res.Warnings, "\n")
	for _, w := range []string{"never called runtime.SetMutexProfileFraction", "never called runtime.SetBlockProfileRate"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	if p := res.Profiles[recording.ViewGoMutex]; p == nil || len(p.Sample) != 0 {
		t.Error("the empty mutex profile is not kept")
	}
}

// A fetch child that writes more than its limit is refused, and what it
// wrote is not kept past the limit: os/exec copies into the buffer with
// io.Copy, which must go through the capped Write.
func TestFetchChildOutputCapped(t *testing.T) {
	const limit = 1 << 20
	child := func(ctx context.Context, _ ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "head", "-c", strconv.Itoa(8*limit), "/dev/zero")
	}
	_, err := runFetchChild(context.Background(), child, childKindProfile, "http://127.0.0.1:1/", limit, limit)
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("child writing 8 MiB with a 1 MiB limit: err %v, want errTooLarge", err)
	}
}
