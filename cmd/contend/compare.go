package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/fixtures/expect"
	"github.com/contend-dev/contend/internal/termsafe"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

func init() { subcommands = append(subcommands, newCompareCmd) }

// compareOptions are the options of `contend compare`.
type compareOptions struct {
	a, b   string
	format string
	window time.Duration
}

func newCompareCmd() *cobra.Command {
	var o compareOptions
	c := &cobra.Command{
		Use:         "compare A B",
		Annotations: map[string]string{annPrivileges: privDropFirst},
		Short:       "Did a fix help? The same figures before (A) and after (B), with their spread",
		Long: `compare analyzes two sets of recordings — A, before a change, and B, after
it — and puts the same figures side by side: the threads waiting and the
CPUs burning in the findings, per program point, and for live recordings
the process's lock waiting, CPU use and runnable threads. Every figure is a
rate (seconds per second of recording), so recordings of different lengths
compare.

Each side is one recording directory, or several separated by commas
(A1,A2,A3). With several, a figure is their mean and its spread the lowest
and highest recording: run-to-run noise, the spread that decides whether a
change is real. With one, the spread is the lowest and highest of the
recording's 1-second windows (--window), from the event log and the /proc
timeline: how much the figure moved while it was recorded. A change whose
ranges do not overlap is marked "apart".

Program points are matched by the function the waiting happens in, so a
busy-wait replaced by a mutex in the same function compares with it.

Each finding of A whose suggestion states its expected effect (waiting or
CPU burned, as after divided by before, with a range) is held against what
B measured at the same program point: the factor B/A and whether it fell
inside the range, as make validate does for the fixtures.`,
		Example: `  contend record -p $(pgrep -n server) -d 30s -o before
  # … deploy the fix …
  contend record -p $(pgrep -n server) -d 30s -o after
  contend compare before after
  contend compare before1,before2,before3 after1,after2,after3`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			o.a, o.b = args[0], args[1]
			return runCompare(o, c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVar(&o.format, "format", formatText, "output format: text or json")
	f.DurationVar(&o.window, "window", time.Second, "window length for the spread within one recording")
	return c
}

// CompareSchemaVersion is the version of compare's JSON form
// (docs/json-schema.md), versioned like analyze's: minor versions only
// add fields.
const CompareSchemaVersion = "1.1"

// sideRec is one analyzed recording of a side.
type sideRec struct {
	path string
	rec  *recording.Recording
	res  *analyzer.Result
}

// stat is one figure of one side: its value and spread.
type stat struct {
	// Value is the mean over the side's recordings (a rate).
	Value float64 `json:"value"`
	// Low and High bound the spread; they always bracket Value.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Over says what the spread is over: "N recordings" or "N windows of
	// 1s"; "" when there is no spread.
	Over string `json:"over,omitempty"`
	// NoSpread says why a one-recording side has no spread where one
	// was expected: its windows do not bracket the recording's total.
	NoSpread string `json:"no_spread,omitempty"`
	// Kind and Participants describe a program point's finding on this
	// side (the most costly one there).
	Kind         string `json:"kind,omitempty"`
	Participants int    `json:"participants,omitempty"`
	// NoFinding is set on a program point's row when this side has no
	// finding there: Value is then what its lock and point tables
	// measured at the same key, 0 when nothing waited there.
	NoFinding bool `json:"no_finding,omitempty"`
	// Missing is set when this side has no data for the figure (no /proc
	// timeline, or not a live recording).
	Missing bool `json:"missing,omitempty"`
}

// figure is one compared figure.
type figure struct {
	Name string `json:"name"`
	// Key is the stable key a finding's row is matched by across the two
	// sides (the lock's, else the program point's); empty for the
	// process-wide figures.
	Key  string `json:"key,omitempty"`
	Unit string `json:"unit"`
	A    stat   `json:"a"`
	B    stat   `json:"b"`
	// Change is (B-A)/A, 0 when A is 0 or either side has no data.
	Change float64 `json:"change"`
	// Apart is set when both sides have a spread and the spreads do not
	// overlap.
	Apart bool `json:"apart"`
}

// comparison is the result of compare, rendered as text or JSON.
type comparison struct {
	Schema string `json:"schema"`
	// Unit is what the figures count: "threads" (live recordings) or
	// "goroutines" (Go profiles).
	Unit    string   `json:"unit"`
	A       sideInfo `json:"a"`
	B       sideInfo `json:"b"`
	Process []figure `json:"process"`
	Points  []figure `json:"points"`
	// Predictions holds each prediction of A's findings against what B
	// measured (schema 1.1).
	Predictions []predCheck `json:"predictions"`
}

// predCheck is one prediction of a finding of A held against what B
// measured at the finding's program point.
type predCheck struct {
	// Point is the finding's program point, Kind its verdict.
	Point      string              `json:"point"`
	Kind       string              `json:"kind"`
	Prediction analyzer.Prediction `json:"prediction"`
	// A and B are the metric at the point on each side, per second of
	// recording (the mean over the side's recordings).
	A float64 `json:"a"`
	B float64 `json:"b"`
	// Measured is B over A, set with Inside when both sides measured the
	// metric and A's is not zero; otherwise NotMeasured says why.
	Measured    float64 `json:"measured,omitempty"`
	Inside      bool    `json:"inside"`
	NotMeasured string  `json:"not_measured,omitempty"`
}

// sideInfo describes a side's recordings.
type sideInfo struct {
	Paths    []string      `json:"paths"`
	Duration time.Duration `json:"duration_ns"`
}

func runCompare(o compareOptions, stdout io.Writer) error {
	defer installInputBudget()()
	if o.format != formatText && o.format != formatJSON {
		return usageErrorf("compare: unknown --format %q (want text or json)", o.format)
	}
	if o.window <= 0 {
		return usageErrorf("compare: --window must be positive")
	}
	a, err := loadSide(o.a)
	if err != nil {
		return err
	}
	b, err := loadSide(o.b)
	if err != nil {
		return err
	}
	unit, err := sidesUnit(a, b)
	if err != nil {
		return err
	}
	cmp := compareSides(a, b, unit, o.window)
	if o.format == formatJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cmp); err != nil {
			return fmt.Errorf("compare: write output: %w", err)
		}
		return nil
	}
	if err := renderComparison(stdout, cmp); err != nil {
		return fmt.Errorf("compare: write output: %w", err)
	}
	return nil
}

// loadSide opens and analyzes the recordings of one side. A recording
// without a duration is refused: every figure is a rate over it.
func loadSide(arg string) ([]sideRec, error) {
	var out []sideRec
	for _, p := range strings.Split(arg, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		rec, err := recording.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, withCode(exitUsage, fmt.Errorf("compare: %w", err))
		}
		if err != nil {
			return nil, inputError(fmt.Errorf("compare: %s: %w", p, err))
		}
		res, err := analyzer.Analyze(rec, analyzer.Options{})
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", p, err)
		}
		r := sideRec{path: p, rec: rec, res: res}
		if durationOf(r) <= 0 {
			return nil, usageErrorf("compare: %s has no duration (goroutine dumps, or mutex and block profiles written at exit, carry none): every figure compare shows is a rate over the time profiled; give a recording, or profiles with a duration (/debug/pprof/...?seconds=N, a CPU profile)", p)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, usageErrorf("compare: no recording in %q", arg)
	}
	return out, nil
}

// unitOf is what a recording's figures count.
func unitOf(r sideRec) string {
	if r.rec.IsLive() {
		return "threads"
	}
	return "goroutines"
}

// sidesUnit returns what every recording of both sides counts, and
// refuses to put threads beside goroutines.
func sidesUnit(a, b []sideRec) (string, error) {
	first := a[0]
	for _, r := range append(a[1:], b...) {
		if unitOf(r) != unitOf(first) {
			return "", usageErrorf("compare: %s counts %s (%s) and %s counts %s (%s): their figures do not compare; give live recordings on both sides, or Go profiles on both", first.path, unitOf(first), sourceWord(first), r.path, unitOf(r), sourceWord(r))
		}
	}
	return unitOf(first), nil
}

func sourceWord(r sideRec) string {
	if r.rec.IsLive() {
		return "a live recording"
	}
	return "Go profiles"
}

// durationOf returns the seconds of a side's recording, for rates.
func durationOf(r sideRec) float64 {
	if d := r.res.Target.Duration; d > 0 {
		return d.Seconds()
	}
	return r.rec.Meta.Duration.Seconds()
}

// findingKey matches a finding across recordings: its lock's stable key
// when it has one (the same lock before and after a fix, whatever its
// address), else its program point's key, else its function.
func findingKey(f analyzer.Finding) string {
	switch {
	case f.Lock != nil && f.Lock.Key != "":
		return f.Lock.Key
	case f.Point.Key != "":
		return f.Point.Key
	}
	return analyzer.PhysicalFunction(f.Point)
}

// findingLabel is how a finding's row is named: the function its
// participants sit in.
func findingLabel(f analyzer.Finding) string { return analyzer.PhysicalFunction(f.Point) }

// Process-wide figures, by key; their names say what they count.
const (
	figWaiting  = "waiting"
	figBurning  = "burning"
	figLockWait = "lockwait"
	figCPUs     = "cpus"
	figRunnable = "runnable"
)

// processFigures lists the process-wide figures in display order with
// their names and units; unit is what the sides count.
func processFigures(unit string) []struct{ key, name, unit string } {
	return []struct{ key, name, unit string }{
		{figWaiting, unit + " waiting, in findings", unit},
		{figBurning, "CPUs burned, in findings", "CPUs"},
		{figLockWait, unit + " waiting on locks", unit},
		{figCPUs, "CPUs used by the process", "CPUs"},
		{figRunnable, "runnable " + unit, unit},
	}
}

// sideFigures are the per-recording values of one side, by figure key.
type sideFigures struct {
	recs   []sideRec
	values map[string][]float64
	// windows holds the within-recording spread of a one-recording side.
	windows map[string][]float64
	// seriesNote says why a one-recording side has no windows
	// (analyzer.Series.Note).
	seriesNote string
	// Per finding key: the kind and participants of its costliest
	// finding, its label (function), and per recording its waiting and
	// burning (zero where that recording has no finding there).
	kind  map[string]string
	parts map[string]int
	label map[string]string
	found map[string][]bool
	wait  map[string][]float64
	cpu   map[string][]float64
}

// collect gathers one side's figures.
func collect(side []sideRec, window time.Duration) *sideFigures {
	sf := &sideFigures{recs: side, values: map[string][]float64{}, windows: map[string][]float64{},
		kind: map[string]string{}, parts: map[string]int{}, label: map[string]string{},
		found: map[string][]bool{}, wait: map[string][]float64{}, cpu: map[string][]float64{}}
	best := map[string]float64{}
	for i, r := range side {
		d := durationOf(r)
		var wait, cpu float64
		for _, f := range r.res.Findings {
			wait += f.WaitSeconds
			cpu += f.CPUSeconds
			k := findingKey(f)
			if _, seen := best[k]; !seen || f.Score > best[k] {
				best[k] = f.Score
				sf.kind[k], sf.parts[k] = string(f.Kind), f.Participants
				sf.label[k] = findingLabel(f)
			}
			if sf.found[k] == nil {
				sf.found[k] = make([]bool, len(side))
				sf.wait[k] = make([]float64, len(side))
				sf.cpu[k] = make([]float64, len(side))
			}
			sf.found[k][i] = true
			sf.wait[k][i] += f.WaitSeconds / d
			sf.cpu[k][i] += f.CPUSeconds / d
		}
		sf.values[figWaiting] = append(sf.values[figWaiting], wait/d)
		sf.values[figBurning] = append(sf.values[figBurning], cpu/d)
		if r.rec.IsLive() {
			sf.addLive(r, d, len(side) == 1, window)
		}
	}
	return sf
}

// addLive adds a live recording's process figures, and with one recording
// on the side, their windows and those of each finding's lock.
func (sf *sideFigures) addLive(r sideRec, d float64, only bool, window time.Duration) {
	var lockWait float64
	for _, l := range r.res.Locks {
		if !l.Idle {
			lockWait += l.WaitSeconds
		}
	}
	sf.values[figLockWait] = append(sf.values[figLockWait], lockWait/d)
	ser := analyzer.SeriesOf(r.rec, r.res, window)
	if len(ser.CPUs) > 0 {
		sf.values[figCPUs] = append(sf.values[figCPUs], mean(ser.CPUs))
		sf.values[figRunnable] = append(sf.values[figRunnable], mean(ser.Runnable))
	}
	if !only {
		return
	}
	sf.seriesNote = ser.Note
	sf.windows[figLockWait] = ser.LockWaiting
	sf.windows[figCPUs] = ser.CPUs
	sf.windows[figRunnable] = ser.Runnable
	// One series per key over every finding there, so that the windows
	// add up to the same waiting as the row's value.
	addrs, total := map[string][]uint64{}, map[string]float64{}
	for _, f := range r.res.Findings {
		if f.Lock == nil {
			continue
		}
		k := findingKey(f)
		addrs[k] = append(addrs[k], analyzer.LockAddrs(*f.Lock)...)
		total[k] += f.WaitSeconds
	}
	for k, a := range addrs {
		if s := analyzer.LockSeries(r.rec, a, total[k], window); len(s) > 0 {
			sf.windows["wait "+k] = s
		}
	}
}

// measuredAt returns the waiting and burning a recording's lock and point
// tables show at key k, where it has no finding: the locks keyed k, else
// the program points keyed (or named) k; zero when nothing waited there.
func measuredAt(r sideRec, k string) (wait, cpu float64) {
	d := durationOf(r)
	for _, l := range r.res.Locks {
		if l.Lock.Key == k {
			wait += l.WaitSeconds
		}
	}
	if wait > 0 {
		return wait / d, 0
	}
	for _, p := range r.res.Points {
		if p.Point.Key == k || (p.Point.Key == "" && analyzer.PhysicalFunction(p.Point) == k) {
			wait += p.WaitSeconds
			cpu += p.CPUSeconds
		}
	}
	return wait / d, cpu / d
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// spreadOf returns the lowest and highest of v.
func spreadOf(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// bracketSlack is how far outside its windows' range a one-recording
// value may lie and still be shown with them: rounding only.
const bracketSlack = 1e-9

// summarise makes a stat of a figure's per-recording values (n of them)
// and, for one recording, its windows. The spread is between the
// recordings when there are several; within one, between its windows,
// shown only when they bracket the value: windows from the sampled event
// log that does not cover the whole recording, or that leave out the cut
// first and last windows, can miss where the waiting was, and a spread
// that does not contain its own figure says nothing about it.
func summarise(v, windows []float64, window time.Duration) stat {
	if len(v) == 0 {
		return stat{Missing: true}
	}
	s := stat{Value: mean(v)}
	s.Low, s.High = spreadOf(v)
	switch {
	case len(v) > 1:
		s.Over = fmt.Sprintf("%d recordings", len(v))
	case len(windows) > 1:
		lo, hi := spreadOf(windows)
		slack := bracketSlack * math.Max(1, math.Abs(s.Value))
		if s.Value < lo-slack || s.Value > hi+slack {
			s.NoSpread = fmt.Sprintf("its %d windows of %s span %s–%s, which does not contain the recording's %s", len(windows), window, units.Float(lo), units.Float(hi), units.Float(s.Value))
			break
		}
		s.Low, s.High = lo, hi
		s.Over = fmt.Sprintf("%d windows of %s", len(windows), window)
	}
	return s
}

func newFigure(name, unit string, a, b stat) figure {
	f := figure{Name: name, Unit: unit, A: a, B: b}
	if !a.Missing && !b.Missing && a.Value > 0 {
		f.Change = (b.Value - a.Value) / a.Value
	}
	if !a.Missing && !b.Missing && a.Over != "" && b.Over != "" {
		f.Apart = a.High < b.Low || b.High < a.Low
	}
	return f
}

// compareSides computes every figure of both sides; unit is what they
// count.
func compareSides(a, b []sideRec, unit string, window time.Duration) comparison {
	fa, fb := collect(a, window), collect(b, window)
	cmp := comparison{Schema: CompareSchemaVersion, Unit: unit, A: info(a), B: info(b), Process: []figure{}, Points: []figure{}}
	for _, p := range processFigures(unit) {
		sa, sb := fa.statOf(p.key, window), fb.statOf(p.key, window)
		if sa.Missing && sb.Missing {
			continue
		}
		cmp.Process = append(cmp.Process, newFigure(p.name, p.unit, sa, sb))
	}
	keys := map[string]bool{}
	for k := range fa.kind {
		keys[k] = true
	}
	for k := range fb.kind {
		keys[k] = true
	}
	pa, pb := map[string]stat{}, map[string]stat{}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
		pa[k], pb[k] = fa.pointStat(k, window), fb.pointStat(k, window)
	}
	sort.Slice(sorted, func(i, j int) bool {
		ci, cj := pa[sorted[i]].Value+pb[sorted[i]].Value, pa[sorted[j]].Value+pb[sorted[j]].Value
		if ci != cj {
			return ci > cj
		}
		return sorted[i] < sorted[j]
	})
	labels := map[string]int{}
	for _, k := range sorted {
		labels[labelOf(fa, fb, k)]++
	}
	for _, k := range sorted {
		name := labelOf(fa, fb, k)
		if labels[name] > 1 {
			name += " [" + k + "]" // two locks waited for in one function
		}
		f := newFigure(name, unit+" waiting + CPUs burning", pa[k], pb[k])
		f.Key = k
		cmp.Points = append(cmp.Points, f)
	}
	cmp.Predictions = checkPredictions(a, b)
	return cmp
}

// checkPredictions holds the predictions of every finding of A (the first
// recording of A that has the finding, once per program point and
// metric) against the sides' measurements at its point, measured as make
// validate measures a fixed variant against its bad one (expect.Run.At).
func checkPredictions(a, b []sideRec) []predCheck {
	runs := func(side []sideRec) []expect.Run {
		out := make([]expect.Run, len(side))
		for i, r := range side {
			out[i] = expect.FromResult(r.res)
			out[i].Seconds = durationOf(r)
		}
		return out
	}
	ra, rb := runs(a), runs(b)
	out := []predCheck{}
	type pointMetric struct {
		point  string
		metric analyzer.Metric
	}
	seen := map[pointMetric]bool{}
	for _, r := range a {
		for _, f := range r.res.Findings {
			point := expect.PointName(f.Point)
			for _, p := range f.Suggestion.Expected {
				k := pointMetric{point, p.Metric}
				if seen[k] {
					continue
				}
				seen[k] = true
				c := predCheck{Point: point, Kind: string(f.Kind), Prediction: p}
				va, oka := meanAt(ra, p.Metric, point)
				vb, okb := meanAt(rb, p.Metric, point)
				c.A, c.B = va, vb
				switch {
				case p.Metric == analyzer.MetricThroughput:
					c.NotMeasured = "a recording carries no throughput: measure the operations per second with the program's own counters"
				case !oka || !okb:
					c.NotMeasured = "a side has no duration to turn the figure into a rate"
				case va <= 0:
					c.NotMeasured = "A measured nothing at this point"
				default:
					c.Measured = vb / va
					c.Inside = p.Inside(c.Measured)
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// meanAt returns the mean over runs of metric m at point, and whether
// every run measured it.
func meanAt(runs []expect.Run, m analyzer.Metric, point string) (float64, bool) {
	var sum float64
	for _, r := range runs {
		v, ok := r.At(m, point)
		if !ok {
			return 0, false
		}
		sum += v
	}
	return sum / float64(len(runs)), len(runs) > 0
}

// labelOf returns how key k is shown, from whichever side has it.
func labelOf(a, b *sideFigures, k string) string {
	if l := a.label[k]; l != "" {
		return l
	}
	if l := b.label[k]; l != "" {
		return l
	}
	return k
}

// statOf summarises a process figure on one side.
func (sf *sideFigures) statOf(key string, window time.Duration) stat {
	s := summarise(sf.values[key], sf.windows[key], window)
	series := key == figLockWait || key == figCPUs || key == figRunnable
	if series && !s.Missing && s.Over == "" && s.NoSpread == "" && len(sf.recs) == 1 {
		s.NoSpread = sf.seriesNote
	}
	return s
}

// pointStat summarises the cost at key k (waiting plus CPUs burning) on
// one side: from its findings there, and where a recording has none,
// from what its tables measured at the same key.
func (sf *sideFigures) pointStat(k string, window time.Duration) stat {
	v := make([]float64, len(sf.recs))
	var cpu []float64
	for i, r := range sf.recs {
		if sf.found[k] != nil && sf.found[k][i] {
			v[i] = sf.wait[k][i] + sf.cpu[k][i]
			cpu = append(cpu, sf.cpu[k][i])
			continue
		}
		w, c := measuredAt(r, k)
		v[i] = w + c
	}
	var windows []float64
	if ws := sf.windows["wait "+k]; len(ws) > 1 {
		// The CPU burned has no per-window series: add its mean.
		cm := mean(cpu)
		for _, x := range ws {
			windows = append(windows, x+cm)
		}
	}
	s := summarise(v, windows, window)
	if _, ok := sf.kind[k]; ok {
		s.Kind, s.Participants = sf.kind[k], sf.parts[k]
	} else {
		s.NoFinding = true
	}
	return s
}

func info(side []sideRec) sideInfo {
	var in sideInfo
	for _, r := range side {
		in.Paths = append(in.Paths, r.path)
		in.Duration += time.Duration(durationOf(r) * 1e9)
	}
	return in
}

// renderComparison writes the comparison as a table, every string from
// the recordings (paths, function names) escaped for the terminal.
func renderComparison(w io.Writer, c comparison) error {
	c = termsafe.Value(c)
	side := func(label string, s sideInfo) string {
		n := len(s.Paths)
		return fmt.Sprintf("%s  %s (%d %s, %s in all)", label, strings.Join(s.Paths, ", "), n, map[bool]string{true: "recording", false: "recordings"}[n == 1], s.Duration.Round(10*time.Millisecond))
	}
	fmt.Fprintln(w, side("A", c.A))
	fmt.Fprintln(w, side("B", c.B))
	fmt.Fprintln(w, "Figures are rates over the recording (seconds per second); [low–high] is their spread.")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tA\tB\tCHANGE")
	for _, f := range c.Process {
		fmt.Fprintf(tw, "%s (%s)\t%s\t%s\t%s\n", f.Name, f.Unit, fmtStat(f.A), fmtStat(f.B), fmtChange(f))
	}
	if len(c.Points) > 0 {
		fmt.Fprintln(tw, "\t\t\t")
		fmt.Fprintf(tw, "BY PROGRAM POINT (%s waiting + CPUs burning)\tA\tB\tCHANGE\n", c.Unit)
		for _, f := range c.Points {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", analyzer.ShortFunc(f.Name), fmtPointStat(f.A, c.Unit), fmtPointStat(f.B, c.Unit), fmtChange(f))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := renderPredictions(w, c.Predictions); err != nil {
		return err
	}
	renderSpreadNotes(w, c)
	return nil
}

// renderPredictions writes the predictions of A's findings against what
// B measured, and how many fell inside their range.
func renderPredictions(w io.Writer, checks []predCheck) error {
	if len(checks) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PREDICTED BY A'S FINDINGS\tMETRIC\tPREDICTED\tMEASURED (B/A)\tINSIDE")
	inside, measured := 0, 0
	for _, c := range checks {
		got, in := "-", "-"
		if c.NotMeasured == "" {
			measured++
			got, in = "×"+units.Float(c.Measured), "NO"
			if c.Inside {
				inside++
				in = "yes"
			}
		}
		fmt.Fprintf(tw, "%s at %s\t%s\t×%s–%s\t%s\t%s\n", c.Kind, c.Point, c.Prediction.Metric.Word(), units.Float(c.Prediction.Low), units.Float(c.Prediction.High), got, in)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d of %d predictions measured fell inside their range.\n", inside, measured)
	for _, c := range checks {
		if c.NotMeasured != "" {
			fmt.Fprintf(w, "  - %s at %s: %s not measured: %s\n", c.Kind, c.Point, c.Prediction.Metric.Word(), c.NotMeasured)
		}
	}
	return nil
}

// renderSpreadNotes says what the spreads are over, and why a figure has
// none where one was expected.
func renderSpreadNotes(w io.Writer, c comparison) {
	overs := map[string]bool{}
	var none []string
	for j, f := range append(c.Process, c.Points...) {
		name := f.Name
		if j >= len(c.Process) {
			name = analyzer.ShortFunc(name)
		}
		for i, s := range []stat{f.A, f.B} {
			if s.Over != "" {
				overs[s.Over] = true
			}
			if s.NoSpread != "" {
				none = append(none, fmt.Sprintf("%s on %s: %s", name, "AB"[i:i+1], s.NoSpread))
			}
		}
	}
	if len(overs) > 0 {
		var list []string
		for o := range overs {
			list = append(list, o)
		}
		sort.Strings(list)
		fmt.Fprintf(w, "\nSpread over %s. Give several recordings per side (A1,A2,… B1,B2,…) for the spread between runs, which decides whether a change is real.\n", strings.Join(list, "; "))
	}
	if len(none) > 0 {
		fmt.Fprintf(w, "\nNo spread for:\n")
		for _, n := range none {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

func fmtStat(s stat) string {
	if s.Missing {
		return "no data"
	}
	if s.Over == "" || s.Low == s.High {
		return units.Float(s.Value)
	}
	return fmt.Sprintf("%s [%s–%s]", units.Float(s.Value), units.Float(s.Low), units.Float(s.High))
}

func fmtPointStat(s stat, unit string) string {
	if s.Missing {
		return "no data"
	}
	if s.NoFinding {
		return "no finding, " + fmtStat(s)
	}
	out := fmtStat(s)
	if s.Kind != "" {
		out = s.Kind + " " + out
	}
	if s.Participants > 0 {
		out += fmt.Sprintf(", %d %s", s.Participants, unit)
	}
	return out
}

func fmtChange(f figure) string {
	var s string
	switch {
	case f.A.Missing && f.B.Missing:
		return "no data"
	case f.A.Missing:
		return "no data in A"
	case f.B.Missing:
		return "no data in B"
	case f.A.Value == 0 && f.B.Value == 0:
		s = "none on either side"
	case f.A.Value == 0:
		s = "from 0"
	default:
		s = fmt.Sprintf("%+.0f%%", f.Change*100)
	}
	switch {
	case f.Apart:
		s += " (apart)"
	case f.A.Over != "" && f.B.Over != "":
		s += " (ranges overlap)"
	}
	return s
}
