package goendpoint

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/collector/goendpoint/goendpointtest"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// childCommand runs fetches in this test binary as a fetch child.
func childCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), testbin.HelperEnv+"=gofetch-child")
	return cmd
}

// fetchWith runs a one-second fetch against url, in process or in child
// processes.
func fetchWith(t *testing.T, url string, child bool, profileLimit int64) *Profiles {
	t.Helper()
	opts := Options{URL: url, Duration: time.Second}
	if child {
		opts.Command = childCommand
	}
	g, err := newGoFetch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Every server here answers at once or refuses: the timeouts only
	// bound a child process's start and parse, which on a machine whose
	// CPUs are busy with other work can take several seconds.
	g.snapshotTimeout, g.deltaGrace = 15*time.Second, 15*time.Second
	g.profileLimit, g.dumpLimit = profileLimit, 1<<20
	g.run()
	time.Sleep(time.Second)
	return g.Stop()
}

// TestGoFetchBodiesNotQuoted: what an endpoint answers is the target's;
// none of it reaches the warnings (they go into meta.json and onto the
// terminal), only the status and what contend concluded.
func TestGoFetchBodiesNotQuoted(t *testing.T) {
	const secret = "\x1b]0;owned\x07 token=hunter2"
	for _, h := range []http.HandlerFunc{
		func(w http.ResponseWriter, r *http.Request) { http.Error(w, secret, http.StatusForbidden) },
		func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(secret)) },
	} {
		srv := httptest.NewServer(h)
		res := fetchFor(t, srv.URL)
		srv.Close()
		all := strings.Join(res.Warnings, "\n")
		if len(res.Warnings) == 0 || strings.Contains(all, "hunter2") || strings.Contains(all, "owned") || strings.Contains(all, "\x1b") {
			t.Errorf("warnings quote the answer's body:\n%q", all)
		}
	}
}

// TestGoFetchRedirects: an endpoint may redirect within its own host, but
// a redirect to another host is refused before it is followed.
func TestGoFetchRedirects(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write(profileBytes(goendpointtest.Profile(1, 5)))
	}))
	defer other.Close()
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer away.Close()
	res := fetchFor(t, away.URL)
	all := strings.Join(res.Warnings, "\n")
	if n := elsewhere.Load(); n != 0 || len(res.Profiles) != 0 || !strings.Contains(all, "redirect to another host refused") {
		t.Errorf("cross-host redirect: %d requests reached the other host, profiles %v, warnings:\n%s", n, res.Profiles, all)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/moved/", func(w http.ResponseWriter, r *http.Request) { w.Write(profileBytes(goendpointtest.Profile(1, 5))) })
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusFound)
	})
	same := httptest.NewServer(mux)
	defer same.Close()
	if res := fetchFor(t, same.URL); res.Profiles[recording.ViewGoMutex] == nil {
		t.Errorf("same-host redirect not followed: warnings %q", res.Warnings)
	}
}

// TestGoFetchBombs: an endpoint that answers with a small gzip stream
// inflating to gigabytes (or a stream inside a stream) is refused at the
// budget, in process and in a fetch child. The body limit applies to the
// compressed answer; without the budget the inflation had none.
func TestGoFetchBombs(t *testing.T) {
	defer goprof.SetMaxDecoded(goprof.SetMaxDecoded(8 << 20))
	for name, body := range map[string][]byte{
		"bomb":   testbin.GzipZeros(256),
		"nested": testbin.Gzip(testbin.GzipZeros(2048)),
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
		for _, child := range []bool{false, true} {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			res := fetchWith(t, srv.URL, child, 4<<20)
			runtime.ReadMemStats(&ms)
			all := strings.Join(res.Warnings, "\n")
			want := "over the size budget"
			if name == "nested" {
				want = "nested compression is refused"
			}
			if len(res.Profiles) != 0 || !strings.Contains(all, "mutex profile: not a profile") || !strings.Contains(all, want) {
				t.Errorf("%s (child %v): profiles %v, warnings:\n%s", name, child, res.Profiles, all)
			}
			// Four fetches of the answer, each stopping at the 8 MiB
			// budget, and the test server's copies.
			if alloc := ms.TotalAlloc - before; !child && alloc > 200<<20 {
				t.Errorf("%s: fetching allocated %d MiB", name, alloc>>20)
			}
		}
		srv.Close()
	}
}

// TestGoFetchChild: fetches run in child processes give what fetches in
// process give, errors included.
func TestGoFetchChild(t *testing.T) {
	url := startGoTarget(t)
	res := fetchWith(t, url, true, maxGoProfileBytes)
	checkGoProfiles(t, res, true)
	if len(res.Goroutines) == 0 || len(res.Goroutines[0].Groups) == 0 || len(res.Goroutines[0].Raw) == 0 {
		t.Errorf("no parsed goroutine dump from the child: %d dumps; warnings %q", len(res.Goroutines), res.Warnings)
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	res = fetchWith(t, srv.URL, true, 1<<20)
	if all := strings.Join(res.Warnings, "\n"); !strings.Contains(all, "mutex profile: 404 Not Found — is net/http/pprof imported?") {
		t.Errorf("404 through a child:\n%s", all)
	}
	gone := srv.URL
	srv.Close()
	res = fetchWith(t, gone, true, 1<<20)
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "connection refused") {
		t.Errorf("unreachable through a child: %q, want one warning", res.Warnings)
	}
}

// profileBytes encodes p as the runtime does (gzipped protobuf).
func profileBytes(p *profile.Profile) []byte {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}
