package analyzer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/contend-dev/contend/recording"
)

func TestLiveDebugTmp(t *testing.T) {
	root := os.Getenv("LIVEDEBUG")
	if root == "" {
		t.Skip()
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		rec, err := recording.Open(d)
		if err != nil {
			fmt.Println(d, err)
			continue
		}
		ld := buildLiveData(rec)
		fmt.Printf("== %s dur=%v cpu=%d pop=%d meanR=%.1f cpuTotal=%.2fs\n", filepath.Base(d), rec.Meta.Duration, ld.numCPU, ld.population, ld.meanRunnable, seconds(ld.cpuTotalNS))
		for _, g := range ld.lockGroups() {
			if g.waitNS < 1e8 && !g.turns {
				continue
			}
			lf := ld.facts(g)
			wp := ""
			if len(lf.waitPoints) > 0 {
				wp = lf.waitPoints[0].key.String()
			}
			kp := ""
			if len(lf.wakePoints) > 0 {
				kp = lf.wakePoints[0].key.String()
			}
			fmt.Printf("  %s words=%d role=%d idle=%v(%s) turns=%v waiters=%d waits=%d blocked=%d woken=%d wait=%.2fs mean=%.2f rate=%.0f/s hold<=%v\n", g.name(), len(g.words), g.role, g.idle, g.idleReason, g.turns, len(g.waiters), g.waits, g.blocked, g.woken, seconds(g.waitNS), lf.mean, lf.handoffRate, lf.holdBound)
			fmt.Printf("     wait@%s wake@%s ev=%d evwait=%.2fs p50=%v p99=%v(%s) contended=%.2f io=%.2f%% sys=%v preempt=%.1f%% (%d waits)\n", wp, kp, lf.evWaits, seconds(lf.evWaitNS), lf.p50, lf.p99, lf.quantFrom, lf.contended, 100*float64(lf.ioNS)/float64(max(lf.evWaitNS, 1)), lf.ioBySys, 100*float64(lf.preemptNS)/float64(max(lf.evWaitNS, 1)), lf.preemptWaits)
			fmt.Printf("     cpu=%.2fs mach=%.0f%% cs=%.0f%% outside=%.0f%% busy=%.2f\n", seconds(lf.cpuNS), pct(lf.machNS, lf.cpuNS), pct(lf.csNS, lf.cpuNS), pct(lf.outsideNS, lf.cpuNS), ld.busyShare(g.waiters))
		}
	}
}

func pct(a, b int64) float64 { return 100 * float64(a) / float64(max(b, 1)) }
