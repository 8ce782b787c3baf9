package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// maxLostNamed is how many drop counters the lost-data note names; the
// rest are counted.
const maxLostNamed = 4

// lossWorthNoting is the share of the probes' events lost (drop_* against
// ev_*) from which the analysis carries a note. Each lost event or stack
// is at most one event's part of a figure, so a loss below 1 % of the
// events cannot move a figure summed over them by 1 %; below it the
// counters stay in meta.json and LossLine gives one line for --verbose.
const lossWorthNoting = 0.01

// lossCounts returns the drop_* counters that are not zero, heaviest
// first, and the events (ev_*) and drops of m.
func lossCounts(m recording.Meta) (parts []string, events, drops uint64) {
	type lost struct {
		name string
		n    uint64
	}
	var all []lost
	for k, v := range m.Counters {
		if name, ok := strings.CutPrefix(k, recording.CounterDropPrefix); ok && v > 0 {
			all = append(all, lost{name, v})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].name < all[j].name
	})
	for i, l := range all {
		if i == maxLostNamed {
			parts = append(parts, fmt.Sprintf("%d more", len(all)-i))
			break
		}
		parts = append(parts, l.name+" "+units.Count(int64(l.n)))
	}
	events, drops = m.CounterTotals()
	return parts, events, drops
}

// lossShare is drops against everything the probes counted, kept or not.
func lossShare(events, drops uint64) float64 {
	if events+drops == 0 {
		return 0
	}
	return float64(drops) / float64(events+drops)
}

// lossPercent renders a loss share with two significant digits below
// 1 %, where units.Percent would round a few lost events to "0.0%".
func lossPercent(x float64) string {
	if p := x * 100; p > 0 && p < 1 {
		return strconv.FormatFloat(p, 'g', 2, 64) + "%"
	}
	return units.Percent(x)
}

// LostNote says what the probes lost, from the drop_* counters: events
// and stack windows the full ring buffer turned away, stack lookups that
// failed, entries full maps refused. "" when nothing was lost, or too
// little to move a figure by 1 % (lossWorthNoting).
func LostNote(m recording.Meta) string {
	parts, events, drops := lossCounts(m)
	if len(parts) == 0 || lossShare(events, drops) < lossWorthNoting {
		return ""
	}
	return "the probes lost " + lossPercent(lossShare(events, drops)) + " of their events (drop_* counters in meta.json): " + strings.Join(parts, ", ") +
		"; ringbuf_* are events and stack windows turned away by a full ring buffer, stack_* failed stack lookups, map_full_* entries a full map refused, wake_unseen futex waits whose wake the probes did not see and the scheduler kept no run-queue record of (counted as waits, but neither as timeouts nor as woken by a call), switch_in_unseen switches back onto a CPU that no probe saw (that time off CPU is missing from the off-CPU view): the figures rest on what was kept"
}

// LossLine is one line on what the probes of a live recording lost, for
// --verbose: "" when nothing was lost. The analysis itself carries a note
// only when the loss could move a figure (lostNote).
func LossLine(m recording.Meta) string {
	parts, events, drops := lossCounts(m)
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("the probes lost %s of %s events (%s; %s): drop_* counters in meta.json",
		units.Count(int64(drops)), units.Count(int64(events+drops)), lossPercent(lossShare(events, drops)), strings.Join(parts, ", "))
}
