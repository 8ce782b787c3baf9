package symbolize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contend-dev/contend/internal/boundedio"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// Lines as the HotSpot JVM writes them (jcmd Compiler.perfmap), a line
// cut short, a stray line and an entry overlapping the one before.
const jvmPerfMap = `0x00007eff98940b80 0x0000000000017de0 Interpreter
0x00007eff98ed1020 0x0000000000000338 long fixtures.Stripe.work(long, int)
0x00007eff98ed1aa0 0x0000000000000458 void fixtures.Stripe.onMessage(int, long)
0x00007eff98ed1b00 0x0000000000000010 void fixtures.Stripe.overlapping()
0x00007eff98ed21a0 0x0000000000000718 void fixtures.Stripe$Conn.<init>(fixtures.Stripe, int)
0x00007eff98ed3000 0x0000000000000100 java.lang.Object[] java.util.ArrayList.grow(int)
0x00007eff98c38c00 0x0000000000007530 StubRoutines (1)
0x00007eff98c41000 0x0000000000000040 _complete_monitor_locking_Java
not a line
0x00007eff98ed4000 0x00000000000`

func TestParsePerfMap(t *testing.T) {
	m, err := parsePerfMap(strings.NewReader(jvmPerfMap))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.entries {
		got = append(got, e.name)
	}
	want := []string{"Interpreter", "StubRoutines (1)", "_complete_monitor_locking_Java", "fixtures.Stripe.work",
		"fixtures.Stripe.onMessage", "fixtures.Stripe$Conn.<init>", "java.util.ArrayList.grow"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	for addr, want := range map[uint64]string{
		0x7eff98ed1aa0:         "fixtures.Stripe.onMessage",
		0x7eff98ed1ef7:         "fixtures.Stripe.onMessage",
		0x7eff98ed1ef8:         "",
		0x7eff98940b80 + 0x100: "Interpreter",
	} {
		e, ok := m.lookup(addr)
		if e.name != want || ok != (want != "") {
			t.Errorf("lookup(%#x) = %q, %v; want %q", addr, e.name, ok, want)
		}
	}
	if _, err := parsePerfMap(strings.NewReader("garbage\nmore garbage\n")); err == nil {
		t.Error("a file of no perf map lines parsed")
	}
	if m, err := parsePerfMap(strings.NewReader("")); err != nil || len(m.entries) != 0 {
		t.Errorf("empty map: %v %v", m, err)
	}
}

func TestJavaName(t *testing.T) {
	for in, want := range map[string]string{
		"void fixtures.Stripe.onMessage(int, long)":   "fixtures.Stripe.onMessage",
		"java.lang.Object[] java.util.List.toArray()": "java.util.List.toArray",
		"fixtures.Main.lambda$main$0(int)":            "fixtures.Main.lambda$main$0",
		"StubRoutines (2)":                            "StubRoutines (2)",
		"Interpreter":                                 "Interpreter",
		"I2C/C2I adapters":                            "I2C/C2I adapters",
		"_new_array_Java":                             "_new_array_Java",
	} {
		if got := javaName(in); got != want {
			t.Errorf("javaName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A map taken later wins where it covers an address; the older map's
// entries elsewhere (code freed since) keep their names.
func TestMergePerfMaps(t *testing.T) {
	old, _ := parsePerfMap(strings.NewReader("1000 100 void a.A.old()\n2000 100 void a.A.freed()\n"))
	cur, _ := parsePerfMap(strings.NewReader("1000 80 void a.A.recompiled()\n"))
	m := mergePerfMaps(cur, old)
	for addr, want := range map[uint64]string{0x1010: "a.A.recompiled", 0x2010: "a.A.freed", 0x1090: ""} {
		if e, _ := m.lookup(addr); e.name != want {
			t.Errorf("%#x: %q, want %q", addr, e.name, want)
		}
	}
}

// A loaded perf map names addresses of this very process that lie in no
// mapped file, as Java frames.
func TestLoadPerfMap(t *testing.T) {
	p, err := Open(os.Getpid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Page zero is never mapped.
	const addr = 0x1000
	if f := p.Frames(addr+0x10, true); f[0].Module != "" {
		t.Fatalf("page zero is mapped: %+v", f)
	}
	path := filepath.Join(t.TempDir(), "perf-1.map")
	if err := os.WriteFile(path, []byte("0x1000 0x100 void app.Server.handle(app.Request)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := p.LoadPerfMap(path); err != nil || n != 1 {
		t.Fatalf("LoadPerfMap: %d, %v", n, err)
	}
	want := recording.Frame{Func: "app.Server.handle", Module: recording.ModuleJava, Addr: addr + 0x10}
	if diff := cmp.Diff([]recording.Frame{want}, p.Frames(addr+0x10, true)); diff != "" {
		t.Errorf("frame (-want +got):\n%s", diff)
	}
	if r, ok := p.PerfMapRange(addr + 0x10); !ok || r.Start != addr || r.End != addr+0x100 {
		t.Errorf("range %+v %v", r, ok)
	}
	if _, err := p.LoadPerfMap(filepath.Join(t.TempDir(), "none.map")); err == nil {
		t.Error("a missing map loaded")
	}
}

func TestPerfMapPath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "4242")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tjava\nNSpid:\t4242\t7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := PerfMapPath(root, 4242), filepath.Join(dir, "root", "tmp", "perf-7.map"); got != want {
		t.Errorf("path %s, want %s (the pid inside the container)", got, want)
	}
}

// TestLoadPerfMapHostile (issue 33, row 3): /tmp/perf-PID.map is a path
// any local user can create. A FIFO planted there hung a root `record`
// with its probes attached; now it is refused at once, as are a symbolic
// link (to a real map, to be sure the link itself is what is refused)
// and a map owned by a user other than the target's or root.
func TestLoadPerfMapHostile(t *testing.T) {
	p, err := Open(os.Getpid(), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir := t.TempDir()
	good := filepath.Join(dir, "real.map")
	if err := os.WriteFile(good, []byte("0x1000 0x100 void app.Server.handle(app.Request)\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	fifo := filepath.Join(dir, "perf-fifo.map")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.LoadPerfMap(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boundedio.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
			t.Errorf("FIFO: %v, want a not-regular error naming it", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test ends; the hang is the failure.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("LoadPerfMap of a FIFO still blocked after 10 s")
	}

	link := filepath.Join(dir, "perf-link.map")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LoadPerfMap(link); !errors.Is(err, boundedio.ErrNotRegular) {
		t.Errorf("symbolic link: %v, want it refused as not a regular file", err)
	}

	if os.Geteuid() != 0 {
		testbin.Skip(t, "giving a file to another user needs root")
	}
	// This test process runs as root: root's maps and the target's own
	// are read, another user's is not.
	if n, err := p.LoadPerfMap(good); err != nil || n != 1 {
		t.Fatalf("root's own map: %d, %v", n, err)
	}
	other := filepath.Join(dir, "perf-other.map")
	if err := os.WriteFile(other, []byte("0x2000 0x100 void app.Evil.run()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LoadPerfMap(other); !errors.Is(err, boundedio.ErrOwner) {
		t.Errorf("map of uid 12345 for a root target: %v, want ErrOwner", err)
	}
	if _, ok := p.PerfMapRange(0x2010); ok {
		t.Error("the other user's map named an address")
	}
}
