package analyzer

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// TestCapturedFixtures replays the profiles captured from the Go fixtures
// (testdata/fixtures/<name>-<variant>, written by `make capture`) and
// checks the verdicts: each bad variant gives its kind first, at its
// function; the fixed variants and the idle fixture give no convoy. The
// rendered outputs are compared with golden files in cmd/contend.
func TestCapturedFixtures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*-*"))
	if len(dirs) == 0 {
		t.Fatal("no captured fixture profiles under testdata/fixtures: they are part of the repository (make capture rewrites them)")
	}
	bad := map[string]struct {
		kind Kind
		fn   string
	}{
		"stripe-bad": {KindLockConvoy, "stripe.(*subscription).onIncomingMessage"},
		"iolock-bad": {KindIOUnderLock, "iolock.(*manager)."},
		"spin-bad":   {KindSpinConvoy, "spin.(*spinLock).lock"},
	}
	convoys := map[Kind]bool{KindLockConvoy: true, KindSpinConvoy: true, KindIOUnderLock: true}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			paths, _ := filepath.Glob(filepath.Join(dir, "*"))
			r, err := recording.Open(paths...)
			if err != nil {
				t.Fatal(err)
			}
			res := analyze(t, r)
			got := kinds(res)
			if want, ok := bad[name]; ok {
				if len(res.Findings) == 0 || res.Findings[0].Kind != want.kind || !strings.Contains(res.Findings[0].Point.Function, want.fn) {
					t.Errorf("findings %q: want first %s at %s", got, want.kind, want.fn)
				}
				return
			}
			for _, f := range res.Findings {
				if convoys[f.Kind] && !remaining(name, f.Kind) {
					t.Errorf("%s reported for %s (all findings %q)", f.Kind, name, got)
				}
			}
		})
	}
}

// remaining reports whether a fixed variant may still show a convoy of
// kind k: the spin fixture's fix is the parking lock the incident applied
// first, which ends the spinning but not the sharing, so its workers may
// still queue on the one sync.Mutex (the incident's second step, striping,
// is what the finding then suggests). Every other fixed variant and the
// idle fixture must show no convoy at all.
func remaining(fixture string, k Kind) bool {
	return fixture == "spin-fixed" && k == KindLockConvoy
}
