package recording

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/testbin"
)

// FuzzRead reads a recording directory whose JSON files and event log are
// any bytes: Read never panics, and what it accepts its readers can use
// without panicking (the timeline's series, the events' stacks).
func FuzzRead(f *testing.F) {
	// Small budgets: a fuzzed event log must not make a worker inflate
	// hundreds of MiB.
	old := goprof.SetMaxDecoded(1 << 20)
	f.Cleanup(func() { goprof.SetMaxDecoded(old) })
	f.Add([]byte(`{"version":1,"source":"live","pid":1,"start":"2024-01-01T00:00:00Z","duration_ns":1000000000}`),
		[]byte(`{"interval_ns":100000000,"clock_ticks":100,"samples":3,"threads":[{"tid":7,"comm":"w","first":1,"states":"RS","utime":[1,2],"stime":[0,0],"voluntary":[1,1],"involuntary":[0,0]}]}`),
		[]byte(`[{"addr":1,"waits":2,"blocked":1,"wait_ns":5,"max_ns":5,"hist":[0,1],"wakes":1,"woken":1,"waiters":[7]}]`),
		[]byte(`[{"frames":[{"func":"main"}]}]`),
		testbin.Gzip([]byte(`{"k":"wait","t":1,"d":5,"tid":7,"addr":1,"stack":0}`+"\n")))
	f.Add([]byte(`{}`), []byte(`{"samples":2,"threads":[{"first":-3,"states":"RRR"}]}`), []byte(`null`), []byte(`[]`), []byte{})
	f.Fuzz(func(t *testing.T, meta, threads, locks, stacks, events []byte) {
		dir := t.TempDir()
		for name, data := range map[string][]byte{MetaFile: meta, ThreadsFile: threads, LocksFile: locks, StacksFile: stacks, EventsFile: events} {
			if len(data) == 0 && name != MetaFile {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Read(dir)
		if err != nil {
			return
		}
		if tl := r.Threads; tl != nil {
			series := tl.RunnableSeries()
			if len(series) != tl.Samples {
				t.Fatalf("%d runnable counts for %d samples", len(series), tl.Samples)
			}
			last := tl.LastInstant()
			for _, i := range []int{0, last / 2, last} {
				tl.StatesAt(i)
			}
			tl.Usage(0, last)
			tl.CPUPercent(0, last)
			tl.Window(time.Second)
		}
		for _, e := range r.Events {
			if e.Stack >= 0 {
				_ = r.Stacks[e.Stack]
			}
		}
		r.Meta.CounterTotals()
	})
}
