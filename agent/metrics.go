package agent

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// Metric names. The first five are the agent's contract with dashboards
// and must not change.
const (
	MetricLockWaitSeconds = "contend_lock_wait_seconds_total"
	MetricLockWaits       = "contend_lock_waits_total"
	MetricFinding         = "contend_finding"
	MetricThreads         = "contend_threads"
	MetricEventsLost      = "contend_events_lost_total"

	MetricTargets         = "contend_agent_targets"
	MetricWindows         = "contend_agent_windows_total"
	MetricPushes          = "contend_pyroscope_pushes_total"
	MetricPushFailures    = "contend_pyroscope_push_failures_total"
	MetricProfilesDropped = "contend_pyroscope_profiles_dropped_total"
)

// Results of a window, the values of contend_agent_windows_total's result
// label.
const (
	windowOK     = "ok"
	windowGone   = "target_gone"
	windowFailed = "failed"
)

// DefaultTopN is how many locks and program points of a process get their
// own series; the rest add up under "other". Ten covers the locks anyone
// puts on a dashboard, and keeps a process at 11 series per lock metric
// whatever the program does.
const DefaultTopN = 10

// evictAfter is how many windows a lock's series may go without being in
// its process's top N before a new top lock may take its place (a minute
// at the default 10 s window): long enough that a lock that is hot every
// few windows keeps one series, short enough that the set follows a
// change of workload. An evicted series is deleted, which Prometheus
// marks stale.
const evictAfter = 6

// goneAfter is how many windows the counters of a process that went away
// are kept before they are deleted: a scrape interval of up to a minute
// still sees its last increments.
const goneAfter = 6

// Metrics holds the agent's Prometheus metrics and the bookkeeping that
// bounds their label sets.
type Metrics struct {
	reg  *prometheus.Registry
	topN int

	lockWait  *prometheus.CounterVec
	lockWaits *prometheus.CounterVec
	finding   *prometheus.GaugeVec
	threads   *prometheus.GaugeVec
	lost      *prometheus.CounterVec

	targets      prometheus.Gauge
	windows      *prometheus.CounterVec
	pushes       prometheus.Counter
	pushFailures prometheus.Counter
	dropped      prometheus.Counter

	mu    sync.Mutex
	procs map[Process]*procSeries
}

// procSeries is what one process exports.
type procSeries struct {
	comm, pid string
	// locks maps a (lock, point) pair with its own series to the last
	// window it was in the process's top N.
	locks map[[2]string]int
	// findings holds the (kind, point) pairs of the latest window.
	findings map[[2]string]bool
	lastSeen int
	// live is false once the process left the targets; its gauges are
	// gone then and its counters go goneAfter windows later.
	live bool
}

// NewMetrics registers the agent's metrics, with the process and Go
// collectors, in a new registry. topN bounds the locks and points per
// process.
func NewMetrics(topN int) *Metrics {
	if topN <= 0 {
		topN = DefaultTopN
	}
	m := &Metrics{
		reg:  prometheus.NewRegistry(),
		topN: topN,
		lockWait: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricLockWaitSeconds,
			Help: "Time threads spent waiting on a lock (futex waits, or the Go runtime's mutex delay), by process, lock and the program point its waiters sit at. The top locks of each process have their own series, the rest add up under lock=\"other\", point=\"other\". Waits the analysis classifies as idle (a pool waiting for work) are left out.",
		}, []string{"comm", "pid", "lock", "point"}),
		lockWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricLockWaits,
			Help: "Lock waits (futex waits that slept), by process, lock and program point, as " + MetricLockWaitSeconds + ".",
		}, []string{"comm", "pid", "lock", "point"}),
		finding: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricFinding,
			Help: "1 while the latest window's analysis reports a finding of this kind at this program point; the series is deleted when a window no longer has it.",
		}, []string{"comm", "pid", "kind", "point"}),
		threads: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricThreads,
			Help: "Threads of the process by /proc state, averaged over the latest window's samples (runnable is /proc's R: running or waiting for a CPU).",
		}, []string{"comm", "pid", "state"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricEventsLost,
			Help: "Events, stacks and map entries the probes lost, by reason (the recording's drop_* counters without the prefix).",
		}, []string{"reason"}),
		targets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricTargets,
			Help: "Processes recorded in the latest window.",
		}),
		windows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWindows,
			Help: "Recording windows by result: ok, target_gone (the process went away), failed.",
		}, []string{"result"}),
		pushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricPushes,
			Help: "Profile pushes to Pyroscope that succeeded.",
		}),
		pushFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricPushFailures,
			Help: "Profile pushes to Pyroscope that failed (each retry counts); the push is retried with backoff.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricProfilesDropped,
			Help: "Windows of profiles dropped unsent because Pyroscope stayed unreachable longer than the push queue holds.",
		}),
		procs: map[Process]*procSeries{},
	}
	m.reg.MustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		m.lockWait, m.lockWaits, m.finding, m.threads, m.lost,
		m.targets, m.windows, m.pushes, m.pushFailures, m.dropped,
	)
	for _, r := range []string{windowOK, windowGone, windowFailed} {
		m.windows.WithLabelValues(r)
	}
	return m
}

// Registry returns the registry to serve.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// observe adds window w of process p: its recording and analysis.
func (m *Metrics) observe(w int, p Process, rec *recording.Recording, res *analyzer.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.procs[p]
	if ps == nil {
		ps = &procSeries{comm: p.Comm, pid: strconv.Itoa(p.PID), locks: map[[2]string]int{}, findings: map[[2]string]bool{}}
		m.procs[p] = ps
	}
	ps.lastSeen, ps.live = w, true
	m.addLocks(w, ps, res)
	m.setFindings(ps, res)
	m.setThreads(ps, rec)
}

// addLost adds a window's drop counters, once for all its processes: the
// probes and maps are shared by the processes of a session.
func (m *Metrics) addLost(rec *recording.Recording) {
	for k, v := range rec.Meta.Counters {
		if reason, ok := strings.CutPrefix(k, recording.CounterDropPrefix); ok && v > 0 {
			m.lost.WithLabelValues(reason).Add(float64(v))
		}
	}
}

// addLocks adds the window's lock waits: a lock with a series keeps it; a
// lock of the window's top N gets one while the process has fewer than N,
// or takes the place of one idle for evictAfter windows; the rest add to
// "other".
func (m *Metrics) addLocks(w int, ps *procSeries, res *analyzer.Result) {
	rows := make([]analyzer.LockRow, 0, len(res.Locks))
	for _, l := range res.Locks {
		if !l.Idle && (l.WaitSeconds > 0 || l.Waits > 0) {
			rows = append(rows, l)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].WaitSeconds > rows[j].WaitSeconds })
	// Two rows can share a key (one lock name at two addresses): sum them.
	type sum struct {
		secs  float64
		waits uint64
		rank  int
	}
	sums := map[[2]string]*sum{}
	var order [][2]string
	for i, l := range rows {
		lock, point := lockKey(l)
		k := [2]string{lock, point}
		s := sums[k]
		if s == nil {
			s = &sum{rank: i}
			sums[k] = s
			order = append(order, k)
		}
		s.secs += l.WaitSeconds
		s.waits += l.Waits
	}
	for rank, k := range order {
		s := sums[k]
		top := rank < m.topN
		if _, ok := ps.locks[k]; !ok && top {
			m.admit(w, ps, k)
		}
		key := k
		if _, ok := ps.locks[k]; !ok {
			key = [2]string{labelOther, labelOther}
		} else if top {
			ps.locks[k] = w
		}
		m.lockWait.WithLabelValues(ps.comm, ps.pid, key[0], key[1]).Add(s.secs)
		m.lockWaits.WithLabelValues(ps.comm, ps.pid, key[0], key[1]).Add(float64(s.waits))
	}
}

// admit gives k a series of its own when the process has room, evicting
// the longest-idle series that has been out of the top N for evictAfter
// windows if it has none.
func (m *Metrics) admit(w int, ps *procSeries, k [2]string) {
	if len(ps.locks) >= m.topN {
		var victim [2]string
		oldest := w
		for v, last := range ps.locks {
			if last < oldest || (last == oldest && lessKey(v, victim)) {
				victim, oldest = v, last
			}
		}
		if w-oldest < evictAfter {
			return
		}
		m.lockWait.DeleteLabelValues(ps.comm, ps.pid, victim[0], victim[1])
		m.lockWaits.DeleteLabelValues(ps.comm, ps.pid, victim[0], victim[1])
		delete(ps.locks, victim)
	}
	ps.locks[k] = w
}

func lessKey(a, b [2]string) bool {
	if a[0] != b[0] {
		return a[0] < b[0]
	}
	return a[1] < b[1]
}

// setFindings exports the window's findings, at most N, and deletes the
// series of findings the window no longer has.
func (m *Metrics) setFindings(ps *procSeries, res *analyzer.Result) {
	now := map[[2]string]bool{}
	for _, f := range res.Findings { // ranked, highest cost first
		if len(now) >= m.topN {
			break
		}
		now[[2]string{string(f.Kind), pointKey(f.Point)}] = true
	}
	for k := range ps.findings {
		if !now[k] {
			m.finding.DeleteLabelValues(ps.comm, ps.pid, k[0], k[1])
		}
	}
	for k := range now {
		m.finding.WithLabelValues(ps.comm, ps.pid, k[0], k[1]).Set(1)
	}
	ps.findings = now
}

// threadStates are the values of contend_threads' state label.
var threadStates = []string{recording.StateRunnable, recording.StateSleeping, recording.StateUninterruptible, recording.StateOther}

// setThreads sets the process's threads by state, averaged over the
// window's /proc samples; without samples the series are deleted (missing
// data is not zero threads).
func (m *Metrics) setThreads(ps *procSeries, rec *recording.Recording) {
	tl := rec.Threads
	if tl == nil || tl.Samples == 0 {
		m.threads.DeletePartialMatch(prometheus.Labels{"comm": ps.comm, "pid": ps.pid})
		return
	}
	var sum [4]float64
	n := 0
	for i := range tl.Samples {
		c := tl.StatesAt(i)
		if c.Threads == c.Unsampled {
			continue
		}
		sum[0] += float64(c.Runnable)
		sum[1] += float64(c.Sleeping)
		sum[2] += float64(c.Uninterruptible)
		sum[3] += float64(c.Other)
		n++
	}
	if n == 0 {
		m.threads.DeletePartialMatch(prometheus.Labels{"comm": ps.comm, "pid": ps.pid})
		return
	}
	for i, s := range threadStates {
		m.threads.WithLabelValues(ps.comm, ps.pid, s).Set(sum[i] / float64(n))
	}
}

// sweep ends window w: processes not recorded in it lose their findings
// and thread gauges at once (the latest window does not have them), and
// their counters goneAfter windows after they were last seen.
func (m *Metrics) sweep(w int, live map[Process]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.targets.Set(float64(len(live)))
	for p, ps := range m.procs {
		if live[p] {
			continue
		}
		sel := prometheus.Labels{"comm": ps.comm, "pid": ps.pid}
		if ps.live {
			ps.live = false
			m.finding.DeletePartialMatch(sel)
			m.threads.DeletePartialMatch(sel)
			ps.findings = map[[2]string]bool{}
		}
		if w-ps.lastSeen >= goneAfter {
			m.lockWait.DeletePartialMatch(sel)
			m.lockWaits.DeletePartialMatch(sel)
			delete(m.procs, p)
		}
	}
}

// window counts a window's result.
func (m *Metrics) window(result string) { m.windows.WithLabelValues(result).Inc() }
