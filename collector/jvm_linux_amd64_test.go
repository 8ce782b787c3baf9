//go:build linux && amd64

package collector

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// contendedJava is a JVM program whose threads queue on one monitor.
const contendedJava = `public class Contended {
    static final Object lock = new Object();
    static long total;
    static void update(long x) {
        synchronized (lock) {
            for (int i = 0; i < 300; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; }
            total += x;
        }
    }
    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 8; i++) {
            new Thread(() -> { long x = 1; while (true) { update(x++); } }, "worker-" + i).start();
        }
        Thread.sleep(1500); // the JIT compiles update meanwhile
        System.out.println("ready=1");
        System.out.flush();
        Thread.sleep(600000);
    }
}
`

// startJava compiles contendedJava and starts it with flags; it skips
// (fails under CI) without a JDK.
func startJava(t *testing.T, flags ...string) *testbin.Proc {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jcmd"} {
		if _, err := exec.LookPath(tool); err != nil {
			testbin.Skip(t, tool+" not found: install a JDK 17 (openjdk-17-jdk-headless; CI installs it)")
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "Contended.java")
	if err := os.WriteFile(src, []byte(contendedJava), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v: %s", err, out)
	}
	args := append(append([]string{}, flags...), "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Contended::update", "-cp", dir, "Contended")
	p := testbin.Start(t, "java", args...)
	if _, err := p.Value("ready", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

// A JVM's compiled methods are named from its perf map, taken through
// jcmd, and thread dumps are taken during the recording.
func TestRecordJVM(t *testing.T) {
	requireRoot(t)
	p := startJava(t, "-XX:+PreserveFramePointer")
	rec := recordFor(t, Options{PID: p.PID, Duration: 2 * time.Second, JVMDumps: 1})
	for _, w := range rec.Meta.Warnings {
		if strings.Contains(w, "Java frames") || strings.Contains(w, "PreserveFramePointer") || strings.Contains(w, "thread dumps") {
			t.Errorf("warning: %s", w)
		}
	}
	if rec.Meta.Settings["jvm_perf_map_entries"] == "" {
		t.Error("no perf map was read")
	}
	named := false
	for _, s := range rec.Profile(recording.ViewFutexWait).Sample {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function.Name == "Contended.update" && loc.Mapping != nil && loc.Mapping.File == recording.ModuleJava {
					named = true
				}
			}
		}
	}
	if !named {
		t.Error("no futex wait names the compiled method Contended.update")
	}
	if len(rec.JavaDumps) != 1 {
		t.Fatalf("%d thread dumps, want 1", len(rec.JavaDumps))
	}
	workers := 0
	for _, th := range rec.JavaDumps[0].Threads {
		if strings.HasPrefix(th.Name, "worker-") && th.NID > 0 {
			workers++
		}
	}
	if workers != 8 {
		t.Errorf("%d workers in the dump, want 8", workers)
	}
}

// A JVM that refuses to be attached is still recorded by the probes, and
// the recording says what is missing and what to run.
func TestRecordJVMWithoutAttach(t *testing.T) {
	requireRoot(t)
	p := startJava(t, "-XX:+DisableAttachMechanism")
	rec := recordFor(t, Options{PID: p.PID, Duration: time.Second, JVMDumps: 2})
	warned, refused := false, false
	for _, w := range rec.Meta.Warnings {
		warned = warned || strings.Contains(w, "Java frames compiled by the JIT are not named") && strings.Contains(w, "DumpPerfMapAtExit")
		refused = refused || strings.Contains(w, "2 of 2 Java thread dumps were not taken: the JVM refused")
	}
	if !warned {
		t.Errorf("warnings %q do not say the Java frames are unnamed and what to do", rec.Meta.Warnings)
	}
	if !refused {
		t.Errorf("warnings %q do not say the JVM refused the thread dumps", rec.Meta.Warnings)
	}
	if p := rec.Profile(recording.ViewFutexWait); p == nil || len(p.Sample) == 0 {
		t.Error("the probes recorded no futex waits")
	}
}
