//go:build linux && amd64

package collector

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestRecordLyingGoTable records issue 33's row 4 end to end: a Go target
// built -s -w whose pclntab header claims 2^63-1 functions, recorded with
// every probe. The recording completes (record died of "out of memory" in
// funcTable), its other probes ran, and it says why the Go lock waits are
// not measured.
func TestRecordLyingGoTable(t *testing.T) {
	requireRoot(t)
	bin, _ := lyingGoBinary(t, math.MaxInt64)
	p := testbin.Start(t, bin, "-threads", "2")
	pid := mustPID(t, p)
	rec := recordFor(t, Options{PID: pid, Duration: time.Second})
	why := "pid " + strconv.Itoa(pid) + ": "
	if u := rec.Meta.GoData.Uprobes; u == nil || !strings.HasPrefix(u.Why, why) || !strings.Contains(u.Why, "claims 9223372036854775807 functions") {
		t.Errorf("go_data uprobes %+v, want why the function table was refused", u)
	}
	warned := false
	for _, w := range rec.Meta.Warnings {
		warned = warned || strings.HasPrefix(w, "Go lock waits not measured in "+why)
	}
	if !warned {
		t.Errorf("warnings %q, want the Go lock waits said to be unmeasured", rec.Meta.Warnings)
	}
	if len(rec.Profiles) == 0 {
		t.Error("no profile recorded")
	}
}
