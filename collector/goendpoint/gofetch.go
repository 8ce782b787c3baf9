package goendpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/recording"
)

// Limits of the live Go profile fetches, with the reasoning behind each.
const (
	// goDialTimeout bounds connecting to the endpoint: it is local or on
	// the same network, so a connect that takes longer is a wrong address
	// or a filtered port.
	goDialTimeout = 5 * time.Second
	// goSnapshotTimeout bounds a fetch answered at once (a cumulative mutex
	// or block profile, a goroutine dump). The runtime builds these in
	// milliseconds; a debug=2 dump stops the world while it walks every
	// goroutine, about a second for 100k goroutines. Ten seconds covers a
	// loaded target and never holds the end of a recording for long.
	goSnapshotTimeout = 10 * time.Second
	// goDeltaGrace is allowed beyond N seconds for a ?seconds=N request:
	// the server sleeps N seconds, then computes the delta or stops the
	// CPU profiler and writes the profile.
	goDeltaGrace = 10 * time.Second
	// maxGoProfileBytes bounds a protobuf profile's (gzipped) size. Mutex,
	// block and CPU profiles of large services are a few MB; parsing
	// needs about ten times the compressed size in memory, so 32 MiB keeps
	// a runaway response from costing more than a few hundred MB.
	maxGoProfileBytes = 32 << 20
	// maxGoDumpBytes bounds a debug=2 goroutine dump: about 1–2 KiB per
	// goroutine, so 64 MiB holds 30k–60k goroutines. A larger dump is
	// skipped with a warning rather than read.
	maxGoDumpBytes = 64 << 20
	// goCPUChunk is the length of each CPU profile taken while
	// recording (the last one of a known duration is cut to end with
	// it): a chunk still running at a stop is lost, so a short chunk
	// loses little, and live snapshots show the chunks completed so far;
	// restarting the profiler every few seconds costs the target nothing
	// measurable.
	goCPUChunk = 5 * time.Second
	// LiveEvery is the period of the cumulative mutex and block
	// profiles fetched once a session is watched live (Snapshot): a
	// window's delta is the newest minus the one nearest the window's
	// start, so a window is resolved to about this period. Each fetch
	// makes the runtime symbolize and encode its whole profile, a few
	// milliseconds for a service with thousands of contended stacks, so
	// two profiles every two seconds cost the target well under 1% of a
	// CPU; it stops no goroutine.
	LiveEvery = 2 * time.Second
	// goLiveKeep bounds the cumulative profiles kept per view: two
	// minutes at LiveEvery, the session's own window history. Older
	// windows start at the oldest kept (the profile's TimeNanos and
	// DurationNanos say what a delta covers); the whole run starts at the
	// profile fetched when the recording started, kept apart.
	goLiveKeep = 60
	// goDumpEvery is the goroutine dump period when recording until
	// stopped, and goMaxDumps how many of the latest dumps are kept: each
	// dump stops the target's world, so they stay few.
	goDumpEvery = 10 * time.Second
	goMaxDumps  = 3
	// goEndSlack: a Stop this close to the end of a known duration waits
	// for the ?seconds=N responses instead of cancelling them.
	goEndSlack = 2 * time.Second
)

// Options configure the fetching of a Go target's runtime profiles
// during one recording.
type Options struct {
	// URL is the target's net/http/pprof base: "http://127.0.0.1:6060",
	// with or without the /debug/pprof path (a bare host:port means
	// http).
	URL string
	// Duration of the recording; 0 means until Stop.
	Duration time.Duration
	// Client is the HTTP client to use; nil means one that ignores proxy
	// settings (the endpoint is normally on loopback). Redirects to
	// another host are refused whatever the client.
	Client *http.Client
	// Command, when set, runs each fetch in a child process instead of
	// in this one: it returns the command that runs ServeChild with
	// args (as the user who ran contend, when contend runs as root). The
	// endpoint's answer is then fetched, decompressed and parsed by the
	// child; this process reads back a profile it re-encoded or a dump
	// as JSON.
	Command func(ctx context.Context, args ...string) *exec.Cmd
	// LiveEvery, CPUChunk and DumpEvery, when set, replace the periods of
	// a live session's fetches (LiveEvery), of the CPU profile's parts
	// and of the goroutine dumps; zero keeps the defaults.
	LiveEvery, CPUChunk, DumpEvery time.Duration
}

// Profiles is what a Fetcher produced: delta mutex and block profiles
// over the recording, a CPU profile, goroutine dumps, and a warning for
// everything that could not be fetched.
type Profiles struct {
	// Profiles holds ViewGoMutex, ViewGoBlock and ViewGoCPU when fetched.
	Profiles map[recording.View]*profile.Profile
	// Goroutines holds debug=2 dumps, oldest first.
	Goroutines []*goprof.Dump
	// Warnings are one-line notes for Meta.Warnings ("pprof endpoint:
	// mutex profile: 404 Not Found — is net/http/pprof imported?").
	Warnings []string
}

// Apply stores the profiles, dumps and warnings into r.
func (p *Profiles) Apply(r *recording.Recording) {
	for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock, recording.ViewGoCPU} {
		if prof := p.Profiles[v]; prof != nil {
			r.SetProfile(v, prof)
		}
	}
	r.Goroutines = append(r.Goroutines, p.Goroutines...)
	r.Meta.Warnings = append(r.Meta.Warnings, p.Warnings...)
}

// Fetcher fetches a Go target's runtime profiles from its net/http/pprof
// endpoint over one recording. With a known duration D it asks the
// endpoint for ?seconds=D deltas of the mutex and block profiles and a
// D-second CPU profile; without one (or when stopped early) it subtracts a
// snapshot taken at the start from one taken at the end. Failures never
// end the recording: they become warnings.
type Fetcher struct {
	base   string // ".../debug/pprof"
	client *http.Client
	child  func(ctx context.Context, args ...string) *exec.Cmd
	dur    time.Duration
	start  time.Time

	parent context.Context
	// ctx is cancelled by an early Stop: in-flight timed requests are
	// then abandoned.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup

	// Settings tests shrink.
	snapshotTimeout time.Duration
	deltaGrace      time.Duration
	profileLimit    int64
	dumpLimit       int64
	cpuChunk        time.Duration
	dumpEvery       time.Duration
	liveEvery       time.Duration

	// liveOn is closed by Live.
	liveOn   chan struct{}
	liveOnce sync.Once

	mu          sync.Mutex
	warnings    []string
	unreachable bool
	// why says, per recording.GoKind, why a fetch of it failed (the
	// first failure), for Meta.GoData.
	why       map[string]string
	cpuWarned bool
	// stopping is set by Stop before it waits: Live starts nothing then.
	stopping bool
	baseProf map[recording.View]*profile.Profile
	delta    map[recording.View]*profile.Profile
	// hist holds the cumulative mutex and block profiles fetched live,
	// oldest first (at most goLiveKeep); liveWarned notes a failed live
	// fetch once per view.
	hist       map[recording.View][]cumProfile
	liveWarned map[recording.View]bool
	// cpuChunks holds the latest CPU profile parts (at most goLiveKeep),
	// for windows; cpuAll is every part merged as it arrives, the whole
	// run's profile.
	cpuChunks []*profile.Profile
	cpuAll    *profile.Profile
	dumps     []*goprof.Dump
	result    *Profiles
}

// cumProfile is a cumulative profile and when it was fetched.
type cumProfile struct {
	at time.Time
	p  *profile.Profile
}

// goProfileNames are the endpoint paths and the names warnings use.
var goProfileNames = map[recording.View][2]string{
	recording.ViewGoMutex: {"mutex", "mutex profile"},
	recording.ViewGoBlock: {"block", "block profile"},
	recording.ViewGoCPU:   {"profile", "cpu profile"},
}

// Start starts fetching in the background and returns at once. The
// only error is a malformed URL; an endpoint that does not answer yields
// warnings from Stop. Cancelling ctx abandons every fetch.
func Start(ctx context.Context, opts Options) (*Fetcher, error) {
	g, err := newGoFetch(ctx, opts)
	if err != nil {
		return nil, err
	}
	g.run()
	return g, nil
}

// newGoFetch prepares a fetch with the default limits without starting it.
func newGoFetch(ctx context.Context, opts Options) (*Fetcher, error) {
	base, err := BaseURL(opts.URL)
	if err != nil {
		return nil, err
	}
	g := &Fetcher{
		base:            base,
		client:          fetchClient(opts.Client),
		child:           opts.Command,
		dur:             opts.Duration,
		parent:          ctx,
		stop:            make(chan struct{}),
		snapshotTimeout: goSnapshotTimeout,
		deltaGrace:      goDeltaGrace,
		profileLimit:    maxGoProfileBytes,
		dumpLimit:       maxGoDumpBytes,
		cpuChunk:        goCPUChunk,
		dumpEvery:       goDumpEvery,
		liveEvery:       LiveEvery,
		liveOn:          make(chan struct{}),
		baseProf:        map[recording.View]*profile.Profile{},
		delta:           map[recording.View]*profile.Profile{},
		hist:            map[recording.View][]cumProfile{},
		liveWarned:      map[recording.View]bool{},
		why:             map[string]string{},
	}
	if opts.LiveEvery > 0 {
		g.liveEvery = opts.LiveEvery
	}
	if opts.CPUChunk > 0 {
		g.cpuChunk = opts.CPUChunk
	}
	if opts.DumpEvery > 0 {
		g.dumpEvery = opts.DumpEvery
	}
	return g, nil
}

// run starts the background fetches.
func (g *Fetcher) run() {
	g.start = time.Now()
	g.ctx, g.cancel = context.WithCancel(g.parent)
	for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock} {
		g.spawn(func() { g.fetchBase(v) })
		if g.dur > 0 {
			g.spawn(func() { g.fetchDelta(v) })
		}
	}
	g.spawn(g.fetchCPU)
	g.spawn(g.fetchDumps)
}

func (g *Fetcher) spawn(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
}

// BaseURL turns the user's URL into the /debug/pprof base.
func BaseURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("pprof URL is empty")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("pprof URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("pprof URL %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Errorf("pprof URL %q: no host", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/debug/pprof") {
		u.Path += "/debug/pprof"
	}
	return u.String(), nil
}

// Stop ends the recording window and returns what was fetched. Called
// within a couple of seconds of the end of a known duration, it waits for
// the timed responses; called earlier (Ctrl-C, target exited) or without
// a duration, it abandons them and computes deltas from snapshots. It
// waits at most the fetch timeouts. Calling it again returns the same
// result.
func (g *Fetcher) Stop() *Profiles {
	g.once.Do(func() {
		elapsed := time.Since(g.start)
		if g.dur == 0 || elapsed < g.dur-goEndSlack {
			g.cancel()
		}
		g.mu.Lock()
		g.stopping = true
		g.mu.Unlock()
		close(g.stop)
		g.wg.Wait()
		g.cancel()
		g.finish(elapsed)
	})
	return g.result
}

// finish builds the result once every background fetch has returned.
func (g *Fetcher) finish(elapsed time.Duration) {
	res := &Profiles{Profiles: map[recording.View]*profile.Profile{}}
	for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock} {
		if p := g.delta[v]; p != nil {
			res.Profiles[v] = p
			g.warnEmpty(v, p)
			continue
		}
		base := g.baseProf[v]
		if base == nil || g.unreachable {
			continue
		}
		end, err := g.fetchProfile(g.parent, goProfileNames[v][0], g.snapshotTimeout, "")
		if err != nil {
			g.warn(goProfileNames[v][1], err)
			continue
		}
		d, err := subtractProfile(end, base)
		if err != nil {
			g.warnf("pprof endpoint: %s: delta over the recording: %v", goProfileNames[v][1], err)
			continue
		}
		res.Profiles[v] = d
		g.warnEmpty(v, d)
	}
	if g.cpuAll != nil {
		res.Profiles[recording.ViewGoCPU] = g.cpuAll
	}
	if res.Profiles[recording.ViewGoCPU] == nil && !g.unreachable && !g.cpuWarned && elapsed >= time.Second {
		why := fmt.Sprintf("the recording ended after %s, before the first %s part completed", elapsed.Round(100*time.Millisecond), g.firstChunk())
		g.warnf("pprof endpoint: cpu profile: %s", why)
		g.mu.Lock()
		g.why[recording.GoKindCPU] = why
		g.mu.Unlock()
	}
	res.Goroutines = g.dumps
	res.Warnings = g.warnings
	g.result = res
}

// warnEmpty notes a mutex or block profile without samples: either
// nothing contended, or the program never turned the profile on.
func (g *Fetcher) warnEmpty(v recording.View, p *profile.Profile) {
	if len(p.Sample) > 0 {
		return
	}
	switch v {
	case recording.ViewGoMutex:
		g.warnf("mutex profile empty: no contention on sync.Mutex during the recording, or the program never called runtime.SetMutexProfileFraction")
	case recording.ViewGoBlock:
		g.warnf("block profile empty: nothing blocked during the recording, or the program never called runtime.SetBlockProfileRate")
	}
}

// wholeSeconds returns the whole seconds of a ?seconds=N request covering d
// (the endpoint takes integers), at least 1.
func wholeSeconds(d time.Duration) int {
	return max(int((d+time.Second/2)/time.Second), 1)
}

// fetchBase snapshots the cumulative profile of v at the start.
func (g *Fetcher) fetchBase(v recording.View) {
	p, err := g.fetchProfile(g.ctx, goProfileNames[v][0], g.snapshotTimeout, "")
	if err != nil {
		g.warn(goProfileNames[v][1], err)
		return
	}
	g.mu.Lock()
	g.baseProf[v] = p
	g.mu.Unlock()
}

// firstChunk is the length of the first CPU profile part.
func (g *Fetcher) firstChunk() time.Duration {
	return time.Duration(g.chunkSeconds(0)) * time.Second
}

// chunkSeconds returns the length in whole seconds of the CPU profile part
// that starts elapsed into the recording, 0 when none should start: parts
// of cpuChunk, the last one of a known duration cut to end with it.
func (g *Fetcher) chunkSeconds(elapsed time.Duration) int {
	n := wholeSeconds(g.cpuChunk)
	if g.dur <= 0 {
		return n
	}
	left := g.dur - elapsed
	if left < time.Second/2 {
		return 0
	}
	return min(n, wholeSeconds(left))
}

// fetchDelta asks the endpoint for the delta of v over the duration.
func (g *Fetcher) fetchDelta(v recording.View) {
	n := wholeSeconds(g.dur)
	t0 := time.Now()
	p, err := g.fetchProfile(g.ctx, goProfileNames[v][0], time.Duration(n)*time.Second+g.deltaGrace, "seconds="+strconv.Itoa(n))
	if err != nil {
		// finish falls back to end minus start snapshots, whose own
		// failures are the ones worth reporting: nothing is lost here.
		return
	}
	if time.Since(t0) < time.Duration(n)*time.Second/2 {
		// Go before 1.16 ignores ?seconds= and answers at once with the
		// cumulative profile: use snapshots instead.
		return
	}
	g.mu.Lock()
	g.delta[v] = p
	g.mu.Unlock()
}

// fetchCPU takes the CPU profile in consecutive parts of cpuChunk until
// Stop or the end of a known duration (the last part cut to end with
// it), so that a live snapshot has the parts completed so far and an
// early stop loses at most one part.
func (g *Fetcher) fetchCPU() {
	for {
		select {
		case <-g.stop:
			return
		default:
		}
		n := g.chunkSeconds(time.Since(g.start))
		if n == 0 {
			return
		}
		p, err := g.fetchProfile(g.ctx, "profile", time.Duration(n)*time.Second+g.deltaGrace, "seconds="+strconv.Itoa(n))
		if err != nil {
			g.cpuFailed(err)
			return
		}
		g.addCPUPart(p)
	}
}

// addCPUPart keeps a completed CPU profile part and merges it into the
// whole run's profile: merging as parts arrive keeps both the work of a
// whole-run snapshot and the memory held constant however long the
// recording runs.
func (g *Fetcher) addCPUPart(p *profile.Profile) {
	g.mu.Lock()
	all := g.cpuAll
	g.mu.Unlock()
	merged := p
	if all != nil {
		m, err := profile.Merge([]*profile.Profile{all, p})
		if err != nil {
			g.warnf("pprof endpoint: cpu profile: merge a part: %v", err)
			m = all
		}
		merged = m
	}
	g.mu.Lock()
	g.cpuAll = merged
	g.cpuChunks = append(g.cpuChunks, p)
	if len(g.cpuChunks) > goLiveKeep {
		g.cpuChunks = append(g.cpuChunks[:0:0], g.cpuChunks[len(g.cpuChunks)-goLiveKeep:]...)
	}
	g.mu.Unlock()
}

// cpuFailed reports a failed CPU profile fetch, unless an early stop
// abandoned it (finish says so then).
func (g *Fetcher) cpuFailed(err error) {
	if g.ctx.Err() != nil {
		return
	}
	g.mu.Lock()
	g.cpuWarned = true
	g.mu.Unlock()
	g.warn("cpu profile", err)
}

// fetchDumps takes debug=2 goroutine dumps: at a third and two thirds of a
// known duration, or every dumpEvery keeping the latest goMaxDumps; once
// the session is watched live (Live), one at once and then every
// dumpEvery, so that snapshots have a recent one.
func (g *Fetcher) fetchDumps() {
	var at []time.Duration
	if g.dur > 0 {
		at = []time.Duration{g.dur / 3, 2 * g.dur / 3}
	}
	liveOn := g.liveOn
	var lastLive time.Time
	for i := 0; ; {
		var due time.Time
		switch {
		case liveOn == nil && lastLive.IsZero():
			due = time.Now()
		case liveOn == nil:
			due = lastLive.Add(g.dumpEvery)
		case g.dur > 0 && i >= len(at):
			due = time.Time{} // none scheduled: wait for Live or Stop
		case g.dur > 0:
			due = g.start.Add(at[i])
		default:
			due = g.start.Add(time.Duration(i+1) * g.dumpEvery)
		}
		var t *time.Timer
		var tc <-chan time.Time
		if !due.IsZero() {
			t = time.NewTimer(time.Until(due))
			tc = t.C
		}
		stopped, wentLive := false, false
		select {
		case <-g.stop:
			stopped = true
		case <-liveOn:
			wentLive = true
		case <-tc:
		}
		if t != nil {
			t.Stop()
		}
		if stopped {
			return
		}
		if wentLive {
			liveOn = nil // from now on: the live schedule
			continue
		}
		if liveOn == nil {
			lastLive = time.Now()
		} else {
			i++
		}
		d, err := g.fetchDump()
		if err != nil {
			if g.ctx.Err() == nil {
				g.warn("goroutine dump", err)
			}
			return
		}
		g.mu.Lock()
		g.dumps = append(g.dumps, d)
		if len(g.dumps) > goMaxDumps {
			g.dumps = g.dumps[1:]
		}
		g.mu.Unlock()
	}
}

// Live switches the fetch to the live schedule, for a session whose
// snapshots are read while it runs: cumulative mutex and block profiles
// every liveEvery (kept for windows) and a goroutine dump at once, then
// every dumpEvery. Calling it again, or after Stop, does nothing.
func (g *Fetcher) Live() {
	g.liveOnce.Do(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.stopping {
			return
		}
		close(g.liveOn)
		g.spawn(g.fetchLive)
	})
}

// fetchLive fetches the cumulative mutex and block profiles every
// liveEvery until Stop.
func (g *Fetcher) fetchLive() {
	t := time.NewTicker(g.liveEvery)
	defer t.Stop()
	for {
		for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock} {
			p, err := g.fetchProfile(g.ctx, goProfileNames[v][0], g.snapshotTimeout, "")
			// The profile's own time is when the target counted it;
			// the answer can reach us hundreds of milliseconds later on
			// a loaded machine, which stamped the delta late and put a
			// window's contentions in the wrong span.
			// The instant keeps the monotonic clock's reading (now less
			// the answer's age on the wall clock): windows and deltas
			// are measured against Now, and the wall clock alone can
			// step or slew between two fetches.
			at := time.Now()
			if err == nil && p.TimeNanos > 0 {
				if age := at.Sub(time.Unix(0, p.TimeNanos)); age > 0 {
					at = at.Add(-age)
				}
			}
			g.mu.Lock()
			switch {
			case err == nil:
				h := append(g.hist[v], cumProfile{at: at, p: p})
				if len(h) > goLiveKeep {
					h = append(h[:0:0], h[len(h)-goLiveKeep:]...)
				}
				g.hist[v] = h
				g.mu.Unlock()
			case g.ctx.Err() != nil || g.liveWarned[v]:
				g.mu.Unlock()
			default:
				g.liveWarned[v] = true
				g.mu.Unlock()
				g.warn(goProfileNames[v][1]+" (live)", err)
			}
		}
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

// Window returns what has been fetched so far for the interval [from,
// to): the mutex and block deltas between the cumulative profiles
// nearest its ends (from the profile fetched at the start for a window
// that starts with the recording), the CPU profile parts that overlap it,
// merged, the latest goroutine dump and the warnings so far. A delta or a
// merged CPU profile covers its own span, recorded in its TimeNanos and
// DurationNanos, which may differ from [from, to) by up to the fetch
// periods (LiveEvery, goCPUChunk). Profiles not fetched yet are
// absent. Window may be called at any time, also after Stop.
func (g *Fetcher) Window(from, to time.Time) *Profiles {
	g.mu.Lock()
	hist := map[recording.View][]cumProfile{}
	for _, v := range []recording.View{recording.ViewGoMutex, recording.ViewGoBlock} {
		h := g.hist[v]
		if b := g.baseProf[v]; b != nil {
			h = append([]cumProfile{{at: g.start, p: b}}, h...)
		}
		hist[v] = h
	}
	chunks := append([]*profile.Profile(nil), g.cpuChunks...)
	cpuAll := g.cpuAll
	var dump *goprof.Dump
	if len(g.dumps) > 0 {
		dump = g.dumps[len(g.dumps)-1]
	}
	res := &Profiles{Profiles: map[recording.View]*profile.Profile{}, Warnings: append([]string(nil), g.warnings...)}
	g.mu.Unlock()

	for v, h := range hist {
		base, end, ok := windowEnds(h, from, to, g.start)
		if !ok {
			continue
		}
		d, err := subtractProfile(end.p, base.p)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("pprof endpoint: %s: delta over the window: %v", goProfileNames[v][1], err))
			continue
		}
		// The fetch instants are what the delta covers, whatever the
		// runtime wrote into the profiles.
		d.TimeNanos, d.DurationNanos = base.at.UnixNano(), int64(end.at.Sub(base.at))
		res.Profiles[v] = d
	}
	var parts []*profile.Profile
	if !from.After(g.start) && cpuAll != nil {
		// The whole run: every part, merged already.
		chunks, parts = nil, []*profile.Profile{cpuAll}
	}
	for _, c := range chunks {
		start := time.Unix(0, c.TimeNanos)
		if start.Before(to) && start.Add(time.Duration(c.DurationNanos)).After(from) {
			parts = append(parts, c)
		}
	}
	switch len(parts) {
	case 0:
	case 1:
		res.Profiles[recording.ViewGoCPU] = parts[0]
	default:
		if p, err := profile.Merge(parts); err == nil {
			res.Profiles[recording.ViewGoCPU] = p
		}
	}
	if dump != nil {
		res.Goroutines = []*goprof.Dump{dump}
	}
	return res
}

// windowEnds picks, from cumulative profiles h (oldest first, h[0] fetched
// at start when the base is known), the ones to subtract for [from, to):
// the newest fetched by to, and the one fetched nearest from before it
// (h[0] for a window starting at the recording's start). It reports false
// when there are not two to subtract.
func windowEnds(h []cumProfile, from, to, start time.Time) (base, end cumProfile, ok bool) {
	if len(h) < 2 {
		return base, end, false
	}
	ei := len(h) - 1
	for ei > 0 && h[ei].at.After(to) {
		ei--
	}
	if ei == 0 {
		return base, end, false
	}
	bi := 0
	if from.After(start) {
		dist := func(t time.Time) time.Duration { return max(t.Sub(from), from.Sub(t)) }
		for i := 1; i < ei; i++ {
			if dist(h[i].at) < dist(h[bi].at) {
				bi = i
			}
		}
	}
	return h[bi], h[ei], true
}

// fetchDump fetches and parses one debug=2 goroutine dump. A dump the
// parser cannot read is kept as text (Raw) with a warning.
func (g *Fetcher) fetchDump() (*goprof.Dump, error) {
	ctx, cancel := context.WithTimeout(g.ctx, g.snapshotTimeout)
	defer cancel()
	taken := time.Now()
	var a *dumpAnswer
	var err error
	if g.child != nil {
		a, err = g.childDump(ctx, g.base+"/goroutine?debug=2")
	} else {
		a, err = getDump(ctx, g.client, g.base+"/goroutine?debug=2", g.dumpLimit)
	}
	if err != nil {
		return nil, err
	}
	d := a.Dump
	if a.ParseError != "" || d == nil {
		var raw []byte
		if d != nil {
			raw = d.Raw
		}
		g.warnf("pprof endpoint: goroutine dump at %s: %s (kept as text)", taken.Sub(g.start).Round(100*time.Millisecond), a.ParseError)
		d = &goprof.Dump{Kind: goprof.KindGoroutineDump, Raw: raw}
	}
	d.Taken = taken
	return d, nil
}

// dumpAnswer is a fetched goroutine dump: parsed, or kept as text (Raw)
// with the parser's error. It is what a fetch child writes as JSON.
type dumpAnswer struct {
	Dump       *goprof.Dump `json:"dump"`
	ParseError string       `json:"parse_error,omitempty"`
}

// getDump fetches the dump at u and parses it within goprof's budget.
func getDump(ctx context.Context, client *http.Client, u string, limit int64) (*dumpAnswer, error) {
	raw, err := get(ctx, client, u, limit)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(raw, []byte("goroutine ")) {
		// The body is the target's: it is not quoted into warnings.
		return nil, errors.New("not a goroutine dump")
	}
	d, err := goprof.ParseDump(raw)
	if err != nil || d == nil {
		return &dumpAnswer{Dump: &goprof.Dump{Kind: goprof.KindGoroutineDump, Raw: raw}, ParseError: fmt.Sprint(err)}, nil
	}
	d.Raw = raw
	return &dumpAnswer{Dump: d}, nil
}

// fetchProfile fetches and parses the protobuf profile at path?query
// within timeout.
func (g *Fetcher) fetchProfile(ctx context.Context, path string, timeout time.Duration, query string) (*profile.Profile, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := g.base + "/" + path
	if query != "" {
		u += "?" + query
	}
	if g.child != nil {
		return g.childProfile(ctx, u)
	}
	return getProfile(ctx, g.client, u, g.profileLimit)
}

// getProfile fetches the profile at u, reading at most limit bytes of
// (compressed) body, and parses it through goprof's budgeted path: the
// body is the target's, so it is decompressed within the budget, nested
// compression is refused, and none of it is quoted into warnings.
func getProfile(ctx context.Context, client *http.Client, u string, limit int64) (*profile.Profile, error) {
	data, err := get(ctx, client, u, limit)
	if err != nil {
		return nil, err
	}
	p, err := goprof.ParseProfile(data)
	if err != nil {
		return nil, fmt.Errorf("not a profile: %w", err)
	}
	return p, nil
}

// statusError is an HTTP answer other than 200. The answer's body is the
// target's and never becomes part of the message (messages go into
// meta.json and onto terminals): only its status, and a note of ours for
// the one error body net/http/pprof is known to send.
type statusError struct {
	code int
	// profilerBusy is set when the body said the CPU profiler is already
	// in use.
	profilerBusy bool
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("%d %s", e.code, http.StatusText(e.code))
	switch {
	case e.code == http.StatusNotFound:
		return s + " — is net/http/pprof imported?"
	case e.profilerBusy:
		return s + ": the target's CPU profiler is already in use (another profile is being taken)"
	}
	return s
}

// errTooLarge reports a response over the size limit.
var errTooLarge = errors.New("response too large")

// transportError marks a failure to reach the endpoint at all.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// fetchClient returns client (a default one ignoring proxy settings when
// nil: the endpoint is normally on loopback) refusing redirects to
// another host: the endpoint is the target's, and it must not send
// contend's requests elsewhere.
func fetchClient(client *http.Client) *http.Client {
	var c http.Client
	if client != nil {
		c = *client
	} else {
		c.Transport = &http.Transport{
			Proxy:       nil,
			DialContext: (&net.Dialer{Timeout: goDialTimeout}).DialContext,
		}
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
			return fmt.Errorf("%w: to %s", errCrossHostRedirect, req.URL.Host)
		}
		return nil
	}
	return &c
}

// errCrossHostRedirect reports a redirect away from the endpoint's host.
var errCrossHostRedirect = errors.New("redirect to another host refused")

// get fetches u, reading at most limit bytes of body.
func get(ctx context.Context, client *http.Client, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, timeoutOr(ctx, err)
		}
		if errors.Is(err, errCrossHostRedirect) {
			return nil, errCrossHostRedirect
		}
		return nil, &transportError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &statusError{code: resp.StatusCode, profilerBusy: bytes.Contains(head, []byte("profiling already in use"))}
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes, more than the limit of %s", errTooLarge, resp.ContentLength, sizeString(limit))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, timeoutOr(ctx, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than the limit of %s", errTooLarge, sizeString(limit))
	}
	return data, nil
}

// timeoutOr names a deadline as a timeout, and passes other errors on.
func timeoutOr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no complete answer in time (%w)", context.DeadlineExceeded)
	}
	return err
}

// warn records a failed fetch. A failure to reach the endpoint is
// reported once, not once per profile.
func (g *Fetcher) warn(what string, err error) {
	g.mu.Lock()
	if k := goKindOf(what); k != "" && g.why[k] == "" {
		g.why[k] = err.Error()
	}
	g.mu.Unlock()
	var te *transportError
	if errors.As(err, &te) {
		g.mu.Lock()
		seen := g.unreachable
		g.unreachable = true
		g.mu.Unlock()
		if !seen {
			g.warnf("pprof endpoint %s: %v", g.base, te.err)
		}
		return
	}
	g.warnf("pprof endpoint: %s: %v", what, err)
}

// goKindOf returns the recording.GoKind a fetch's name in warnings
// stands for ("mutex profile (live)" is GoKindMutex), "" for none.
func goKindOf(what string) string {
	switch strings.TrimSuffix(what, " (live)") {
	case goProfileNames[recording.ViewGoMutex][1]:
		return recording.GoKindMutex
	case goProfileNames[recording.ViewGoBlock][1]:
		return recording.GoKindBlock
	case goProfileNames[recording.ViewGoCPU][1]:
		return recording.GoKindCPU
	case "goroutine dump":
		return recording.GoKindGoroutine
	}
	return ""
}

// failures returns why each kind of Go data failed to be fetched so far,
// by recording.GoKind.
func (g *Fetcher) Failures() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.why)
}

func (g *Fetcher) warnf(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.warnings = append(g.warnings, fmt.Sprintf(format, args...))
}

// subtractProfile returns end minus base: what accumulated between the two
// snapshots of a cumulative profile. Samples that did not change vanish.
func subtractProfile(end, base *profile.Profile) (*profile.Profile, error) {
	neg := base.Copy()
	neg.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{end, neg})
	if err != nil {
		return nil, err
	}
	d.TimeNanos = base.TimeNanos
	if end.TimeNanos > base.TimeNanos {
		d.DurationNanos = end.TimeNanos - base.TimeNanos
	}
	return d, nil
}

// sizeString formats a byte count for a message.
func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
