package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// goldenScreens are the screens kept as golden files: each is a key
// sequence from the start, named after what it shows.
var goldenScreens = []struct {
	name string
	keys []string
}{
	{"findings", nil},
	{"finding-detail", []string{"enter"}},
	{"finding-detail-page2", []string{"enter", "pgdown"}},
	{"points", []string{"2"}},
	{"points-by-wait", []string{"2", "s"}},
	{"point-detail", []string{"2", "enter"}},
	{"locks", []string{"3"}},
	{"lock-detail", []string{"3", "enter"}},
	{"threads", []string{"4"}},
	{"thread-detail", []string{"4", "enter"}},
	{"idle", []string{"5"}},
	{"help", []string{"?"}},
	{"filter", []string{"2", "/", "r", "e", "l"}},
	{"paused", []string{"p"}},
	{"exited", []string{"exited"}},
}

// TestGoldenHandmade renders the hand-made spin-convoy result in every
// view at 80x24 and 120x40, live, with an ASCII colour profile.
func TestGoldenHandmade(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, sc := range goldenScreens {
			name := fmt.Sprintf("handmade-live-%s-%dx%d", sc.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				src := liveSource()
				h := newHarness(t, src, hmResult(), size[0], size[1])
				for _, k := range sc.keys {
					if k == "exited" {
						src.stats.TargetExited = true
						h.send(exitedMsg{})
						continue
					}
					h.keys(k)
				}
				golden(t, name, h.view())
			})
		}
	}
}

// TestGoldenOffline renders the saved-recording variant of the header and
// the findings, where the window, pause and export keys differ.
func TestGoldenOffline(t *testing.T) {
	h := newHarness(t, offlineSource(), hmResult(), 80, 24)
	golden(t, "handmade-offline-findings-80x24", h.view())
	if v := h.view(); strings.Contains(v, "w window") || strings.Contains(v, "p pause") {
		t.Errorf("offline help line offers live-only keys:\n%s", v)
	}
}

// TestGoldenFixtures renders the captured Go fixture profiles (make
// capture) through recording.Open and analyzer.Analyze, as `contend tui
// DIR` shows them: the findings list and the first finding opened, at
// 80x24. Refresh with -update after a capture or an analyzer change.
func TestGoldenFixtures(t *testing.T) {
	// The bad variants only: each shows its case's finding (or, for idle,
	// that there is none); the fixed ones add churn, not coverage.
	dirs, _ := filepath.Glob(filepath.Join("..", "analyzer", "testdata", "fixtures", "*-bad"))
	if len(dirs) == 0 {
		t.Fatal("no captured fixture profiles under analyzer/testdata/fixtures: they are part of the repository (make capture rewrites them)")
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		if strings.HasPrefix(name, ".") {
			continue // a capture being written
		}
		t.Run(name, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			rec, err := recording.Open(files...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := analyzer.Analyze(rec, analyzer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, NewRecordingSource(rec), res, 80, 24)
			golden(t, "fixture-"+name+"-findings-80x24", h.view())
			if len(res.Findings) == 0 {
				return
			}
			h.keys("enter")
			golden(t, "fixture-"+name+"-finding-detail-80x24", h.view())
		})
	}
}

// TestHeaderDropsOnlyWhenTheyMatter: the header names the drops when
// they reach 1 % of the probes' events, and says nothing of 3 in 183k.
func TestHeaderDropsOnlyWhenTheyMatter(t *testing.T) {
	for _, tc := range []struct {
		drops uint64
		shown bool
	}{{0, false}, {3, false}, {1800, false}, {1900, true}, {50000, true}} {
		src := liveSource()
		src.stats.Drops = tc.drops
		h := newHarness(t, src, hmResult(), 100, 24)
		header := strings.Join(strings.Split(h.view(), "\n")[:2], "\n")
		if got := strings.Contains(header, "drops "); got != tc.shown {
			t.Errorf("%d drops of %d events: drops shown %v, want %v\n%s", tc.drops, src.stats.Events, got, tc.shown, header)
		}
	}
}
