package analyzer_test

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/recording"
)

// javaDump analyzes Java thread dumps of javadump/testdata.
func javaDump(t *testing.T, names ...string) *Result {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join("..", "javadump", "testdata", n))
	}
	rec, err := recording.Open(paths...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// evidenceText words every fact of a finding, for checks on what it says.
func evidenceText(f Finding) string {
	var b strings.Builder
	for _, e := range f.Evidence {
		b.WriteString(EvidenceText(e))
		b.WriteString("\n")
	}
	return b.String()
}

// One dump of 60 threads blocked on one monitor names the waiters, the
// monitor, where they wait and the thread that holds it.
func TestJavaDumpMonitorConvoy(t *testing.T) {
	res := javaDump(t, "jdk17-jcmd-monitor.txt")
	if len(res.Findings) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(res.Findings), res.Findings)
	}
	f := res.Findings[0]
	if f.Kind != KindLockConvoy || f.Participants != 60 || f.Population != 76 || f.Unit != "threads" {
		t.Errorf("%s: %d of %d %s", f.Kind, f.Participants, f.Population, f.Unit)
	}
	if f.Point.Function != "fixtures.Stripe.onMessage" || f.Point.File != "Stripe.java" || f.Point.Line != 40 {
		t.Errorf("point %s %s:%d", f.Point.Function, f.Point.File, f.Point.Line)
	}
	if f.Lock == nil || f.Lock.Address != "0x000000069ec19a18" || f.Lock.Name != "java.lang.Object" {
		t.Errorf("lock %+v", f.Lock)
	}
	text := evidenceText(f)
	for _, want := range []string{`60 threads waited to enter the monitor of java.lang.Object <0x000000069ec19a18> at fixtures.Stripe.onMessage (Stripe.java:40)`, `"conn-51"`} {
		if !strings.Contains(text, want) {
			t.Errorf("evidence lacks %q:\n%s", want, text)
		}
	}
	if f.Confidence == ConfidenceHigh {
		t.Error("a single dump gives high confidence")
	}
}

// The holder of the monitor is in FileChannel.force: I/O under the lock,
// at the lookups that do none.
func TestJavaDumpIOUnderLock(t *testing.T) {
	res := javaDump(t, "jdk17-jcmd-iolock.txt")
	if len(res.Findings) == 0 {
		t.Fatal("no finding")
	}
	f := res.Findings[0]
	if f.Kind != KindIOUnderLock || f.Point.Function != "fixtures.IoLock.lookup" || f.Participants != 8 {
		t.Errorf("%s at %s, %d threads", f.Kind, f.Point.Function, f.Participants)
	}
	if text := evidenceText(f); !strings.Contains(text, `"manager-0"`) || !strings.Contains(text, "FileChannelImpl.force") {
		t.Errorf("evidence does not name the holder in I/O:\n%s", text)
	}
	if !strings.Contains(f.Suggestion.Action, "fixtures.IoLock.claimUpdate") {
		t.Errorf("suggestion %q does not name the holder's method", f.Suggestion.Action)
	}
}

// Four threads parked on a ReentrantLock whose holder sleeps: the
// ownable synchronizers name the holder.
func TestJavaDumpReentrantLock(t *testing.T) {
	res := javaDump(t, "jdk17-jcmd-reentrantlock.txt")
	if len(res.Findings) != 1 {
		t.Fatalf("%d findings", len(res.Findings))
	}
	f := res.Findings[0]
	if f.Participants != 4 || f.Point.Function != "Held.append" || !strings.HasPrefix(f.Lock.Name, "java.util.concurrent.locks.ReentrantLock$NonfairSync") {
		t.Errorf("%d threads at %s on %+v", f.Participants, f.Point.Function, f.Lock)
	}
	if text := evidenceText(f); !strings.Contains(text, `parked waiting for`) || !strings.Contains(text, `"holder"`) {
		t.Errorf("evidence:\n%s", text)
	}
}

// A deadlock is reported however few threads wait, as a cycle.
func TestJavaDumpDeadlock(t *testing.T) {
	res := javaDump(t, "jdk17-jstack-deadlock.txt")
	if len(res.Findings) != 2 {
		t.Fatalf("%d findings, want one per lock of the deadlock", len(res.Findings))
	}
	for _, f := range res.Findings {
		if !strings.Contains(evidenceText(f), "a deadlock") {
			t.Errorf("finding at %s does not say deadlock:\n%s", f.Point.Function, evidenceText(f))
		}
	}
	found := false
	for _, n := range res.Notes {
		found = found || strings.Contains(n, "1 Java-level deadlock")
	}
	if !found {
		t.Errorf("notes %q", res.Notes)
	}
}

// An idle ThreadPoolExecutor is not contention: no finding, and its
// workers are listed idle.
func TestJavaDumpIdlePool(t *testing.T) {
	res := javaDump(t, "jdk17-jcmd-idle.txt")
	if len(res.Findings) != 0 {
		t.Errorf("findings %+v", res.Findings)
	}
	n := 0
	for _, g := range res.Idle {
		if strings.Contains(g.Reason, "idle pool thread waiting for work") {
			n += g.Count
		}
	}
	if n != 8 {
		t.Errorf("%d idle pool workers, want 8: %+v", n, res.Idle)
	}
}
