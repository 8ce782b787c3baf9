//go:build linux && amd64

package collector

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// BenchmarkFutexWakeCost measures what the probes add to a non-blocking
// futex call: futexwake makes FUTEX_WAKE calls nobody waits for and prints
// the mean time per call of each round; rounds with the probes attached
// are compared with rounds before and after, in the same run. Reported:
// ns/call added (attached median minus baseline median) and the ratio.
func BenchmarkFutexWakeCost(b *testing.B) {
	requireRoot(b)
	bin := testbin.C(b, "testdata/futexwake.c", "-O2", "-g")
	const perRound = 200000
	const rounds = 9
	var added, ratio []float64
	for i := 0; i < b.N; i++ {
		p := testbin.Start(b, bin, strconv.Itoa(perRound), "0")
		pid := mustPID(b, p)
		read := func(n int) []float64 {
			base := len(mustValues(b, p, "ns_per_call", 1))
			vals := mustValues(b, p, "ns_per_call", base+n)
			var out []float64
			for _, v := range vals[base : base+n] {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				out = append(out, f)
			}
			return out
		}
		read(2) // warm up
		before := read(rounds)
		var probes []string
		if v := os.Getenv("BENCH_PROBES"); v != "" {
			probes = strings.Split(v, ",")
		}
		s, err := Start(context.Background(), Options{PID: pid, Probes: probes})
		if err != nil {
			b.Fatal(err)
		}
		read(1) // the round during which the probes attached
		during := read(rounds)
		if _, err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		read(1)
		after := read(rounds)
		baseline := median(append(before, after...))
		att := median(during)
		added = append(added, att-baseline)
		ratio = append(ratio, att/baseline)
		p.Cmd.Process.Kill()
	}
	b.ReportMetric(median(added), "ns-added/call")
	b.ReportMetric(median(ratio), "x-baseline")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func mustValues(tb testing.TB, p *testbin.Proc, key string, n int) []string {
	tb.Helper()
	v, err := p.Values(key, n, 60*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func mustPID(tb testing.TB, p *testbin.Proc) int {
	tb.Helper()
	v, err := p.Value("pid", 10*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	pid, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatal(err)
	}
	return pid
}
