package agent

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/contend-dev/contend/recording"
)

// pushViews are the views pushed to Pyroscope, with the profile name
// (__name__) each is pushed under.
var pushViews = []struct {
	view recording.View
	name string
}{
	{recording.ViewFutexWait, "contend_futex_wait"},
	{recording.ViewOffCPU, "contend_offcpu"},
	{recording.ViewOnCPU, "contend_oncpu"},
}

// keptLabels are the sample labels kept in pushed profiles: Pyroscope
// turns sample labels into series labels, so per-thread and per-address
// labels would make a series per thread or lock; the off-CPU state (four
// values) is worth filtering by.
var keptLabels = map[string]bool{recording.LabelState: true}

// Push timing, with the reasoning.
const (
	// pushTimeout bounds one push: a window's profiles are a few hundred
	// KB at most, which a reachable server takes in well under a second.
	pushTimeout = 10 * time.Second
	// backoffMin and backoffMax bound the wait before retrying a failed
	// push; doubling from one second reaches a minute in six failures, so
	// an unreachable server costs one connection attempt a minute.
	backoffMin = time.Second
	backoffMax = time.Minute
	// queueLen bounds the windows of profiles kept while Pyroscope is
	// unreachable: six windows are a minute at the default window, and a
	// window's profiles a few hundred KB, so the queue stays within a few
	// MB; older windows are dropped and counted.
	queueLen = 6
)

// PyroscopeOptions configure pushing to Pyroscope.
type PyroscopeOptions struct {
	// URL is the server's base URL, e.g. http://pyroscope:4040.
	URL string
	// App is the service_name of the pushed profiles; "" uses each
	// target's command name.
	App string
	// Host is the host label; "" uses the host name.
	Host string
}

// CheckPyroscopeURL reports a URL the push client cannot use.
func CheckPyroscopeURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--pyroscope %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--pyroscope %q: want an http or https URL such as http://pyroscope:4040", raw)
	}
	return nil
}

// pusher sends windows of profiles to Pyroscope from its own goroutine:
// a slow or unreachable server never holds up recording. Failed pushes
// are retried with backoff; the queue keeps the latest windows.
type pusher struct {
	client pushv1connect.PusherServiceClient
	opts   PyroscopeOptions
	m      *Metrics
	log    func(format string, args ...any)

	mu    sync.Mutex
	queue []*pushv1.PushRequest
	wake  chan struct{}
	// sleep waits between retries; tests shorten it.
	sleep func(ctx context.Context, d time.Duration)
}

func newPusher(o PyroscopeOptions, m *Metrics, log func(string, ...any)) *pusher {
	return &pusher{
		client: pushv1connect.NewPusherServiceClient(&http.Client{Timeout: pushTimeout}, o.URL),
		opts:   o,
		m:      m,
		log:    log,
		wake:   make(chan struct{}, 1),
		sleep: func(ctx context.Context, d time.Duration) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		},
	}
}

// enqueue queues process p's window rec for pushing; it never blocks.
func (ps *pusher) enqueue(p Process, rec *recording.Recording) error {
	req, err := pushRequest(p, rec, ps.opts)
	if err != nil || req == nil {
		return err
	}
	ps.mu.Lock()
	if len(ps.queue) >= queueLen {
		ps.queue = ps.queue[1:]
		ps.m.dropped.Inc()
	}
	ps.queue = append(ps.queue, req)
	ps.mu.Unlock()
	select {
	case ps.wake <- struct{}{}:
	default:
	}
	return nil
}

// run pushes queued windows until ctx is done.
func (ps *pusher) run(ctx context.Context) {
	backoff := time.Duration(0)
	failing := false
	for {
		ps.mu.Lock()
		var req *pushv1.PushRequest
		if len(ps.queue) > 0 {
			req = ps.queue[0]
		}
		ps.mu.Unlock()
		if req == nil {
			select {
			case <-ctx.Done():
				return
			case <-ps.wake:
				continue
			}
		}
		pctx, cancel := context.WithTimeout(ctx, pushTimeout)
		_, err := ps.client.Push(pctx, connect.NewRequest(req))
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			ps.m.pushFailures.Inc()
			backoff = min(max(2*backoff, backoffMin), backoffMax)
			if !failing {
				ps.log("pyroscope: push to %s failed: %v; retrying with backoff, recording goes on", ps.opts.URL, err)
				failing = true
			}
			ps.sleep(ctx, backoff)
			continue
		}
		if failing {
			ps.log("pyroscope: pushes to %s go through again", ps.opts.URL)
			failing = false
		}
		backoff = 0
		ps.m.pushes.Inc()
		ps.mu.Lock()
		if len(ps.queue) > 0 && ps.queue[0] == req {
			ps.queue = ps.queue[1:]
		}
		ps.mu.Unlock()
	}
}

// pushRequest builds the push of one window of process p: one series per
// view, labelled so that Pyroscope can compare windows of one process
// (service_name, comm, pid, host) and told the profiles are deltas
// already. nil when the window has none of the views.
func pushRequest(p Process, rec *recording.Recording, o PyroscopeOptions) (*pushv1.PushRequest, error) {
	app := o.App
	if app == "" {
		app = p.Comm
	}
	req := &pushv1.PushRequest{}
	for _, pv := range pushViews {
		prof := rec.Profile(pv.view)
		if prof == nil || len(prof.Sample) == 0 {
			continue
		}
		raw, err := pushProfile(prof)
		if err != nil {
			return nil, fmt.Errorf("pyroscope: %s profile: %w", pv.view, err)
		}
		req.Series = append(req.Series, &pushv1.RawProfileSeries{
			Labels: []*typesv1.LabelPair{
				{Name: "__name__", Value: pv.name},
				{Name: "__delta__", Value: "false"},
				{Name: "service_name", Value: app},
				{Name: "comm", Value: p.Comm},
				{Name: "pid", Value: strconv.Itoa(p.PID)},
				{Name: "host", Value: o.Host},
			},
			Samples: []*pushv1.RawSample{{RawProfile: raw}},
		})
	}
	if len(req.Series) == 0 {
		return nil, nil
	}
	return req, nil
}

// pushProfile returns p as gzipped pprof with only the kept sample labels,
// samples that became identical merged.
func pushProfile(p *profile.Profile) ([]byte, error) {
	c := p.Copy()
	for _, s := range c.Sample {
		for k := range s.Label {
			if !keptLabels[k] {
				delete(s.Label, k)
			}
		}
		if len(s.Label) == 0 {
			s.Label = nil
		}
		s.NumLabel, s.NumUnit = nil, nil
	}
	c, err := profile.Merge([]*profile.Profile{c})
	if err != nil {
		return nil, err
	}
	if err := c.CheckValid(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
