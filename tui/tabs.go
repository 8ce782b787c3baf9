package tui

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/internal/units"
)

// tab is one of the five list views.
type tab int

// The list views, in key order (1–5).
const (
	tabFindings tab = iota
	tabPoints
	tabLocks
	tabThreads
	tabIdle
	numTabs
)

// column is one column of a list view.
type column struct {
	title string
	// width is the fixed width in cells; 0 makes the column flexible: the
	// flexible columns share what the fixed ones leave.
	width int
	right bool
	// tail keeps the end of an over-long cell instead of its start (state
	// strips, where the newest sample is on the right).
	tail bool
	// split cells hold "name\tlocation": when too long the name is cut and
	// the location kept whole, so a long function never hides its line.
	split bool
}

// sortSpec is one sort order of a list view.
type sortSpec struct {
	name string
	// col is the column whose title gets the sort mark, -1 for none.
	col int
	// text sorts by row.name ascending; otherwise rows sort by
	// row.num[index of this sort] descending.
	text bool
}

// row is one line (or two) of a list view.
type row struct {
	// key identifies the item across refreshes.
	key   string
	cells []string
	// sub is an optional second line under the cells.
	sub string
	// name is what text sorts use; filter matches name, cells and sub.
	name string
	num  []float64
	dim  bool
	// item is the analyzer value the detail page shows.
	item any
}

// tabSpec describes one list view.
type tabSpec struct {
	name  string
	cols  []column
	sorts []sortSpec
	// rowLines is 1, or 2 when rows carry a sub line.
	rowLines int
	build    func(res *analyzer.Result) []row
	detail   func(m *Model, item any, w int) []string
	// empty is shown when the view has no rows at all.
	empty string
}

// specs holds the five list views in tab order.
var specs = [numTabs]tabSpec{
	tabFindings: findingsTab(),
	tabPoints:   pointsTab(),
	tabLocks:    locksTab(),
	tabThreads:  threadsTab(),
	tabIdle:     idleTab(),
}

// findingsTab describes the Findings view: the ranked findings, two
// lines each.
func findingsTab() tabSpec {
	return tabSpec{
		name: "Findings",
		cols: []column{
			{title: "#", width: 2, right: true},
			{title: "Finding"},
			{title: "Wait", width: 7, right: true},
			{title: "CPU", width: 7, right: true},
		},
		sorts: []sortSpec{
			{name: "rank", col: 0},
			{name: "wait", col: 2},
			{name: "cpu", col: 3},
			{name: "participants", col: -1},
		},
		rowLines: 2,
		build:    findingRows,
		detail:   (*Model).findingDetail,
		empty:    "No contention found in this window.",
	}
}

// pointsTab describes the Points view: one row per program point, with
// its sampled states, wait and CPU.
func pointsTab() tabSpec {
	return tabSpec{
		name: "Points",
		cols: []column{
			{title: "Program point", split: true},
			{title: "N", width: 4, right: true},
			{title: "State mix", width: 18},
			{title: "Wait", width: 6, right: true},
			{title: "CPU", width: 6, right: true},
		},
		sorts: []sortSpec{
			{name: "count", col: 1},
			{name: "wait", col: 3},
			{name: "cpu", col: 4},
			{name: "name", col: 0, text: true},
		},
		rowLines: 1,
		build:    pointRows,
		detail:   (*Model).pointDetail,
		empty:    "No program points in this window.",
	}
}

// locksTab describes the Locks view: one row per lock, with its waits,
// waiters and wait times.
func locksTab() tabSpec {
	return tabSpec{
		name: "Locks",
		cols: []column{
			{title: "Lock"},
			{title: "Waits", width: 6, right: true},
			{title: "Wtrs", width: 4, right: true},
			{title: "Total", width: 7, right: true},
			{title: "p50", width: 7, right: true},
			{title: "p99", width: 7, right: true},
		},
		sorts: []sortSpec{
			{name: "total wait", col: 3},
			{name: "waits", col: 1},
			{name: "waiters", col: 2},
			{name: "p99", col: 5},
		},
		rowLines: 1,
		build:    lockRows,
		detail:   (*Model).lockDetail,
		empty:    "No lock waits in this window.",
	}
}

// threadsTab describes the Threads view: one row per thread of the
// /proc timeline, with its state strip, CPU and context switches.
func threadsTab() tabSpec {
	return tabSpec{
		name: "Threads",
		cols: []column{
			{title: "TID", width: 7, right: true},
			{title: "Comm", width: 12},
			{title: "States (newest right)", tail: true},
			{title: "CPU", width: 6, right: true},
			{title: "Vol", width: 6, right: true},
			{title: "Invol", width: 6, right: true},
		},
		sorts: []sortSpec{
			{name: "cpu", col: 3},
			{name: "involuntary", col: 5},
			{name: "voluntary", col: 4},
			{name: "wait", col: -1},
			{name: "tid", col: 0, text: true},
		},
		rowLines: 1,
		build:    threadRows,
		detail:   (*Model).threadDetail,
		empty:    "No /proc thread timeline in this recording (Go profiles carry none).",
	}
}

// idleTab describes the Idle view: waits that are not contention,
// grouped by the reason, two lines each.
func idleTab() tabSpec {
	return tabSpec{
		name: "Idle",
		cols: []column{
			{title: "Not contention: why"},
			{title: "N", width: 5, right: true},
			{title: "Wait", width: 7, right: true},
		},
		sorts: []sortSpec{
			{name: "count", col: 1},
			{name: "wait", col: 2},
		},
		rowLines: 2,
		build:    idleRows,
		detail:   (*Model).idleDetail,
		empty:    "No idle waits in this window.",
	}
}

// findingItem is a finding with its rank, for the detail page.
type findingItem struct {
	rank int
	f    analyzer.Finding
}

func findingKey(f analyzer.Finding) string {
	k := string(f.Kind) + "|" + pointKey(f.Point)
	if f.Lock != nil {
		k += "|" + f.Lock.Address + "|" + f.Lock.Name
	}
	return k
}

func pointKey(p analyzer.ProgramPoint) string {
	return p.Function + "|" + p.File + "|" + strconv.Itoa(p.Line)
}

func findingRows(res *analyzer.Result) []row {
	rows := make([]row, 0, len(res.Findings))
	for i, f := range res.Findings {
		// The location comes before the function: a cut at the screen edge
		// then takes the end of a long function name, not the line.
		sub := fmt.Sprintf("%s · confidence %s · at %s", f.Kind, f.Confidence, locFirst(f.Point))
		rows = append(rows, row{
			key:   findingKey(f),
			cells: []string{strconv.Itoa(i + 1), f.Headline, units.CompactSeconds(f.WaitSeconds), units.CompactSeconds(f.CPUSeconds)},
			sub:   sub,
			name:  f.Headline,
			num:   []float64{-float64(i), f.WaitSeconds, f.CPUSeconds, float64(f.Participants)},
			item:  findingItem{rank: i + 1, f: f},
		})
	}
	return rows
}

// participants says "37 of 52 threads" (or "37 threads" when the
// population is unknown).
func participants(f analyzer.Finding) string {
	unit := unitOr(f.Unit)
	if f.Population > 0 {
		return fmt.Sprintf("%d of %s", f.Participants, plural(f.Population, unit))
	}
	return plural(f.Participants, unit)
}

func pointRows(res *analyzer.Result) []row {
	rows := make([]row, 0, len(res.Points))
	for _, p := range res.Points {
		name := analyzer.ShortFunc(p.Point.Function) + "\t" + fmtLoc(p.Point.File, p.Point.Line)
		if p.Idle {
			name = "(idle) " + name
		}
		rows = append(rows, row{
			key:   pointKey(p.Point),
			cells: []string{name, strconv.Itoa(p.Count), stateMix(p.States), units.CompactSeconds(p.WaitSeconds), units.CompactSeconds(p.CPUSeconds)},
			name:  analyzer.ShortFunc(p.Point.Function),
			num:   []float64{float64(p.Count), p.WaitSeconds, p.CPUSeconds, 0},
			dim:   p.Idle,
			item:  p,
		})
	}
	return rows
}

// stateMix lists states by count, largest first: "runnable 37, sleeping 3".
func stateMix(states map[string]int) string {
	type sc struct {
		s string
		n int
	}
	var all []sc
	for s, n := range states {
		if n > 0 {
			all = append(all, sc{s, n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].s < all[j].s
	})
	parts := make([]string, len(all))
	for i, x := range all {
		parts[i] = fmt.Sprintf("%s %d", x.s, x.n)
	}
	return strings.Join(parts, ", ")
}

func lockKey(id analyzer.LockID) string { return id.Address + "|" + id.Name }

func lockRows(res *analyzer.Result) []row {
	rows := make([]row, 0, len(res.Locks))
	for _, l := range res.Locks {
		name := lockName(l.Lock)
		if l.Idle {
			name = "(idle) " + name
		}
		rows = append(rows, row{
			key: lockKey(l.Lock),
			cells: []string{name, units.CompactCount(l.Waits), strconv.Itoa(l.DistinctWaiters),
				units.CompactSeconds(l.WaitSeconds), fmtQuantile(l.P50), fmtQuantile(l.P99)},
			name: name,
			num:  []float64{l.WaitSeconds, float64(l.Waits), float64(l.DistinctWaiters), float64(l.P99)},
			dim:  l.Idle,
			item: l,
		})
	}
	return rows
}

func threadRows(res *analyzer.Result) []row {
	rows := make([]row, 0, len(res.Threads))
	for _, t := range res.Threads {
		rows = append(rows, row{
			key: strconv.Itoa(t.TID),
			cells: []string{strconv.Itoa(t.TID), t.Comm, t.States, units.CompactSeconds(t.CPUSeconds),
				units.CompactCount(t.Voluntary), units.CompactCount(t.Involuntary)},
			// Zero-padded so the text sort orders tids numerically.
			name: fmt.Sprintf("%012d", t.TID),
			num:  []float64{t.CPUSeconds, float64(t.Involuntary), float64(t.Voluntary), t.WaitSeconds, 0},
			item: t,
		})
	}
	return rows
}

func idleRows(res *analyzer.Result) []row {
	rows := make([]row, 0, len(res.Idle))
	for _, g := range res.Idle {
		rows = append(rows, row{
			key:   g.Reason + "|" + pointKey(g.Point),
			cells: []string{g.Reason, strconv.Itoa(g.Count), units.CompactSeconds(g.WaitSeconds)},
			sub:   "at " + locFirst(g.Point),
			name:  g.Reason,
			num:   []float64{float64(g.Count), g.WaitSeconds},
			item:  g,
		})
	}
	return rows
}

// rows returns the rows of tab t for the data on screen, sorted and
// filtered as that list asks.
func (m *Model) rows(t tab) []row {
	if m.frame == nil || m.frame.res == nil {
		return nil
	}
	spec := specs[t]
	all := spec.build(m.frame.res)
	ls := m.lists[t]
	if ls.filter != "" {
		f := strings.ToLower(ls.filter)
		kept := all[:0]
		for _, r := range all {
			if rowMatches(r, f) {
				kept = append(kept, r)
			}
		}
		all = kept
	}
	if ls.sort >= 0 && ls.sort < len(spec.sorts) {
		s, i := spec.sorts[ls.sort], ls.sort
		// Idle rows (not contention) go after the others whatever the
		// order, so a long idle wait never tops a list of contention.
		sort.SliceStable(all, func(a, b int) bool {
			if all[a].dim != all[b].dim {
				return !all[a].dim
			}
			if s.text {
				return all[a].name < all[b].name
			}
			return all[a].num[i] > all[b].num[i]
		})
	}
	return all
}

func rowMatches(r row, lower string) bool {
	if strings.Contains(strings.ToLower(r.name), lower) || strings.Contains(strings.ToLower(r.sub), lower) {
		return true
	}
	for _, c := range r.cells {
		if strings.Contains(strings.ToLower(strings.ReplaceAll(c, "\t", " ")), lower) {
			return true
		}
	}
	return false
}
