// Package goendpointtest serves fake net/http/pprof endpoints for the
// tests of the packages that fetch from one.
package goendpointtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// Growing is a fake net/http/pprof endpoint whose cumulative
// mutex and block profiles grow by one contention (of 1 µs) per
// millisecond since it started, whose CPU profile answers ?seconds=N
// after N seconds with N seconds of samples, and which serves a goroutine
// dump.
type Growing struct {
	start time.Time
	mu    sync.Mutex
	hits  map[string]int
}

// NewGrowing starts a Growing endpoint, closed when the test ends, and
// returns it with its URL.
func NewGrowing(t testing.TB) (*Growing, string) {
	e := &Growing{start: time.Now(), hits: map[string]int{}}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv.URL
}

// Count says how many times the endpoint served the profile named path
// ("mutex", "goroutine", ...).
func (e *Growing) Count(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[path]
}

func (e *Growing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
	e.mu.Lock()
	e.hits[name]++
	e.mu.Unlock()
	switch name {
	case "mutex", "block":
		now := time.Now()
		n := int64(now.Sub(e.start) / time.Millisecond)
		p := Profile(n, 1000*n)
		p.TimeNanos = now.UnixNano()
		p.Write(w)
	case "profile":
		secs, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
		t0 := time.Now()
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
			return
		}
		p := Profile(int64(secs)*100, int64(secs)*int64(time.Second))
		p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
		p.TimeNanos, p.DurationNanos = t0.UnixNano(), int64(time.Since(t0))
		p.Write(w)
	case "goroutine":
		fmt.Fprintf(w, "goroutine 1 [running]:\nmain.main()\n\t/src/main.go:%d +0x1d\n", time.Since(e.start).Milliseconds())
	default:
		http.NotFound(w, r)
	}
}

// Profile is a contention profile of one stack (main.hot) with count
// contentions and delay nanoseconds, as a mutex or block profile is.
func Profile(count, delay int64) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.hot"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:     1,
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{count, delay}}},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
	}
}
