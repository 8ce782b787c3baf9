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
	"github.com/contend-dev/contend/internal/termsafe"
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
busy-wait replaced by a mutex in the same function compares with it.`,
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
	// Low and High bound the spread.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Over says what the spread is over: "N recordings" or "N windows of
	// 1s"; "" when there is no spread.
	Over string `json:"over,omitempty"`
	// Kind and Participants describe a program point's finding on this
	// side (the most costly one there).
	Kind         string `json:"kind,omitempty"`
	Participants int    `json:"participants,omitempty"`
	// Missing is set when the figure does not exist on this side (no
	// finding there, or no timeline).
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
	// Change is (B-A)/A, 0 when A is 0.
	Change float64 `json:"change"`
	// Apart is set when the two spreads do not overlap.
	Apart bool `json:"apart"`
}

// comparison is the result of compare, rendered as text or JSON.
type comparison struct {
	A       sideInfo `json:"a"`
	B       sideInfo `json:"b"`
	Process []figure `json:"process"`
	Points  []figure `json:"points"`
}

// sideInfo describes a side's recordings.
type sideInfo struct {
	Paths    []string      `json:"paths"`
	Duration time.Duration `json:"duration_ns"`
}

func runCompare(o compareOptions, stdout io.Writer) error {
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
	cmp := compareSides(a, b, o.window)
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

// loadSide opens and analyzes the recordings of one side.
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
			return nil, fmt.Errorf("compare: %s: %w", p, err)
		}
		res, err := analyzer.Analyze(rec, analyzer.Options{})
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", p, err)
		}
		out = append(out, sideRec{path: p, rec: rec, res: res})
	}
	if len(out) == 0 {
		return nil, usageErrorf("compare: no recording in %q", arg)
	}
	return out, nil
}

// seconds of a side's recordings, for rates.
func durationOf(r sideRec) float64 {
	if d := r.res.Target.Duration; d > 0 {
		return d.Seconds()
	}
	return r.rec.Meta.Duration.Seconds()
}

// sideFigures are the per-recording values of one side, by figure name.
type sideFigures struct {
	values map[string][]float64
	// windows holds the within-recording spread of a one-recording side.
	windows map[string][]float64
	kind    map[string]string
	parts   map[string]int
	// label is how a finding's key is shown: its function.
	label map[string]string
}

func newSideFigures() *sideFigures {
	return &sideFigures{values: map[string][]float64{}, windows: map[string][]float64{}, kind: map[string]string{}, parts: map[string]int{}, label: map[string]string{}}
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

// Names of the process-wide figures.
const (
	figWaiting  = "threads waiting, in findings"
	figBurning  = "CPUs burned, in findings"
	figLockWait = "threads waiting on locks"
	figCPUs     = "CPUs used by the process"
	figRunnable = "runnable threads"
)

// collect gathers one side's figures.
func collect(side []sideRec, window time.Duration) *sideFigures {
	sf := newSideFigures()
	best := map[string]float64{}
	var perRec []map[string][2]float64
	for _, r := range side {
		d := durationOf(r)
		perPoint := map[string][2]float64{}
		perRec = append(perRec, perPoint)
		if d <= 0 {
			continue
		}
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
			v := perPoint[k]
			perPoint[k] = [2]float64{v[0] + f.WaitSeconds/d, v[1] + f.CPUSeconds/d}
		}
		sf.values[figWaiting] = append(sf.values[figWaiting], wait/d)
		sf.values[figBurning] = append(sf.values[figBurning], cpu/d)
		if !r.rec.IsLive() {
			continue
		}
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
		if len(side) == 1 {
			sf.windows[figLockWait] = ser.LockWaiting
			sf.windows[figCPUs] = ser.CPUs
			sf.windows[figRunnable] = ser.Runnable
			for _, f := range r.res.Findings {
				if f.Lock == nil {
					continue
				}
				if s := analyzer.LockSeries(r.rec, analyzer.LockAddrs(*f.Lock), f.WaitSeconds, window); len(s) > 0 {
					sf.windows["wait "+findingKey(f)] = s
				}
			}
		}
	}
	// A recording without a finding at a point counts as zero there.
	for k := range sf.kind {
		for _, pp := range perRec {
			v := pp[k]
			sf.values["wait "+k] = append(sf.values["wait "+k], v[0])
			sf.values["cpu "+k] = append(sf.values["cpu "+k], v[1])
		}
	}
	return sf
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

// statOf summarises a figure's values on one side.
func (sf *sideFigures) statOf(name string, n int, window time.Duration) stat {
	v := sf.values[name]
	if len(v) == 0 {
		return stat{Missing: true}
	}
	s := stat{Value: mean(v), Low: v[0], High: v[0]}
	for _, x := range v {
		s.Low, s.High = math.Min(s.Low, x), math.Max(s.High, x)
	}
	switch {
	case n > 1:
		s.Over = fmt.Sprintf("%d recordings", n)
	case len(sf.windows[name]) > 1:
		w := sf.windows[name]
		s.Low, s.High = w[0], w[0]
		for _, x := range w {
			s.Low, s.High = math.Min(s.Low, x), math.Max(s.High, x)
		}
		s.Over = fmt.Sprintf("%d windows of %s", len(w), window)
	default:
		s.Low, s.High = s.Value, s.Value
	}
	return s
}

func newFigure(name, unit string, a, b stat) figure {
	f := figure{Name: name, Unit: unit, A: a, B: b}
	if !a.Missing && a.Value > 0 {
		f.Change = (b.Value - a.Value) / a.Value
	}
	if b.Missing && !a.Missing && a.Value > 0 {
		f.Change = -1
	}
	if a.Over != "" && b.Over != "" {
		f.Apart = a.High < b.Low || b.High < a.Low
	}
	if a.Over != "" && b.Missing && a.Low > 0 {
		f.Apart = true // gone, and it never dropped to zero before
	}
	return f
}

// compareSides computes every figure of both sides.
func compareSides(a, b []sideRec, window time.Duration) comparison {
	fa, fb := collect(a, window), collect(b, window)
	cmp := comparison{A: info(a), B: info(b)}
	for _, p := range []struct{ name, unit string }{
		{figWaiting, "threads"}, {figBurning, "CPUs"}, {figLockWait, "threads"}, {figCPUs, "CPUs"}, {figRunnable, "threads"},
	} {
		sa, sb := fa.statOf(p.name, len(a), window), fb.statOf(p.name, len(b), window)
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
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		ci := fa.cost(sorted[i]) + fb.cost(sorted[i])
		cj := fa.cost(sorted[j]) + fb.cost(sorted[j])
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
		sa, sb := fa.pointStat(k, len(a), window), fb.pointStat(k, len(b), window)
		name := labelOf(fa, fb, k)
		if labels[name] > 1 {
			name += " [" + k + "]" // two locks waited for in one function
		}
		f := newFigure(name, "threads waiting + CPUs burning", sa, sb)
		f.Key = k
		cmp.Points = append(cmp.Points, f)
	}
	return cmp
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

// cost returns the mean waiting plus burning at a point.
func (sf *sideFigures) cost(k string) float64 {
	return mean(sf.values["wait "+k]) + mean(sf.values["cpu "+k])
}

// pointStat summarises the cost of a program point (threads waiting plus
// CPUs burning) on one side; missing when no recording of the side has a
// finding there.
func (sf *sideFigures) pointStat(k string, n int, window time.Duration) stat {
	if _, ok := sf.kind[k]; !ok {
		return stat{Missing: true}
	}
	w, c := sf.values["wait "+k], sf.values["cpu "+k]
	v := make([]float64, len(w))
	for i := range w {
		v[i] = w[i] + c[i]
	}
	tmp := &sideFigures{values: map[string][]float64{"x": v}, windows: map[string][]float64{}}
	if ws := sf.windows["wait "+k]; len(ws) > 1 {
		// The CPU burned has no per-window series: add its mean.
		cm := mean(c)
		adj := make([]float64, len(ws))
		for i, x := range ws {
			adj[i] = x + cm
		}
		tmp.windows["x"] = adj
	}
	s := tmp.statOf("x", n, window)
	s.Kind, s.Participants = sf.kind[k], sf.parts[k]
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
		fmt.Fprintln(tw, "BY PROGRAM POINT (threads waiting + CPUs burning)\tA\tB\tCHANGE")
		for _, f := range c.Points {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", analyzer.ShortFunc(f.Name), fmtPointStat(f.A), fmtPointStat(f.B), fmtChange(f))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	overs := map[string]bool{}
	for _, f := range append(c.Process, c.Points...) {
		for _, s := range []stat{f.A, f.B} {
			if s.Over != "" {
				overs[s.Over] = true
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
	return nil
}

func fmtStat(s stat) string {
	if s.Missing {
		return "-"
	}
	if s.Over == "" || s.Low == s.High {
		return fmtNum(s.Value)
	}
	return fmt.Sprintf("%s [%s–%s]", fmtNum(s.Value), fmtNum(s.Low), fmtNum(s.High))
}

func fmtPointStat(s stat) string {
	if s.Missing {
		return "none"
	}
	out := fmtStat(s)
	if s.Kind != "" {
		out = s.Kind + " " + out
	}
	if s.Participants > 0 {
		out += fmt.Sprintf(", %d thr", s.Participants)
	}
	return out
}

func fmtChange(f figure) string {
	var s string
	switch {
	case f.A.Missing && f.B.Missing:
		return ""
	case f.A.Missing:
		s = "new"
	case f.B.Missing:
		s = "gone"
	case f.A.Value == 0:
		s = "from 0"
	default:
		s = fmt.Sprintf("%+.0f%%", f.Change*100)
	}
	if f.Apart {
		s += " (apart)"
	} else if f.A.Over != "" && f.B.Over != "" {
		s += " (ranges overlap)"
	}
	return s
}

// fmtNum renders a rate with about three significant digits.
func fmtNum(x float64) string {
	ax := math.Abs(x)
	switch {
	case ax == 0:
		return "0"
	case ax >= 100:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	case ax >= 0.01:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.1g", x)
}
