package javadump

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func load(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, name string) *Dump {
	t.Helper()
	d, err := Parse(load(t, name))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return d
}

func thread(t *testing.T, d *Dump, name string) *Thread {
	t.Helper()
	for _, th := range d.Threads {
		if th.Name == name {
			return th
		}
	}
	t.Fatalf("no thread %q", name)
	return nil
}

// A jcmd Thread.print -l dump of 64 threads queued on one monitor: every
// waiter names the object, the holder has a "- locked" line for it.
func TestParseMonitorDump(t *testing.T) {
	d := parse(t, "jdk17-jcmd-monitor.txt")
	if !strings.HasPrefix(d.VM, "OpenJDK 64-Bit Server VM (17.0.15") || !d.Ownable || d.Taken.IsZero() {
		t.Errorf("VM %q, ownable %v, taken %v", d.VM, d.Ownable, d.Taken)
	}
	waiting, holders := 0, map[string]bool{}
	for _, th := range d.Threads {
		if l, ok := th.Waits(); ok {
			if l.Addr != "0x000000069ec19a18" || l.Class != "java.lang.Object" || l.Op != OpWaitLock {
				t.Errorf("%s waits for %+v", th.Name, l)
			}
			waiting++
		}
		for _, h := range th.Holds() {
			if h.Addr == "0x000000069ec19a18" {
				holders[th.Name] = true
			}
		}
	}
	if waiting != 60 {
		t.Errorf("%d threads wait, want 60", waiting)
	}
	if diff := cmp.Diff(map[string]bool{"conn-51": true}, holders); diff != "" {
		t.Errorf("holders (-want +got):\n%s", diff)
	}
	c := thread(t, d, "conn-0")
	want := &Thread{Name: "conn-0", ID: 12, NID: 0x3a9f, Java: true, State: "BLOCKED", Detail: "on object monitor",
		Status: "waiting for monitor entry",
		Frames: []Frame{
			{Func: "fixtures.Stripe.onMessage", File: "Stripe.java", Line: 40,
				Locks: []Lock{{Op: OpWaitLock, Addr: "0x000000069ec19a18", Class: "java.lang.Object"}}},
			{Func: "fixtures.Stripe.lambda$main$0", File: "Stripe.java", Line: 65},
			{Func: "fixtures.Stripe$$Lambda$3/0x00007f02d8005c00.run"},
			{Func: "java.lang.Thread.run", File: "Thread.java", Line: 840, Module: "java.base@17.0.15"},
		}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("conn-0 (-want +got):\n%s", diff)
	}
	gc := thread(t, d, "GC Thread#0")
	if gc.Java || gc.ID != 0 || gc.NID != 0x3a8e || gc.Status != "runnable" || len(gc.Frames) != 0 {
		t.Errorf("VM thread %+v", gc)
	}
	sleep := thread(t, d, "main").Frames[0]
	if !sleep.Native || sleep.Func != "java.lang.Thread.sleep" || sleep.Module != "java.base@17.0.15" {
		t.Errorf("native frame %+v", sleep)
	}
}

// A ReentrantLock: the waiters park on its NonfairSync, the holder lists
// it among its ownable synchronizers.
func TestParseReentrantLock(t *testing.T) {
	d := parse(t, "jdk17-jcmd-reentrantlock.txt")
	var waiters []string
	var owner string
	for _, th := range d.Threads {
		if l, ok := th.Waits(); ok && strings.HasSuffix(l.Class, "ReentrantLock$NonfairSync") {
			waiters = append(waiters, th.Name)
			if l.Op != OpParking {
				t.Errorf("%s: op %q", th.Name, l.Op)
			}
		}
		for _, o := range th.Owns {
			if strings.HasSuffix(o.Class, "ReentrantLock$NonfairSync") {
				owner = th.Name
			}
		}
	}
	if len(waiters) != 4 {
		t.Errorf("waiters %v, want the 4 appenders", waiters)
	}
	if owner != "holder" {
		t.Errorf("owner %q, want holder", owner)
	}
}

// Threads parked on a condition (an idle pool's LinkedBlockingQueue.take)
// wait for no lock.
func TestParseIdlePool(t *testing.T) {
	d := parse(t, "jdk17-jcmd-idle.txt")
	w := thread(t, d, "pool-1-thread-1")
	if l, ok := w.Waits(); ok {
		t.Errorf("idle worker waits for %+v", l)
	}
	if w.State != "WAITING" || w.Detail != "parking" || w.Frames[0].Locks[0].Op != OpParking {
		t.Errorf("idle worker %+v", w)
	}
}

// jstack -l of a deadlock: the report after the closing line is counted,
// and its "Java stack information" does not add threads.
func TestParseDeadlock(t *testing.T) {
	d := parse(t, "jdk17-jstack-deadlock.txt")
	if d.Deadlocks != 1 {
		t.Errorf("deadlocks %d, want 1", d.Deadlocks)
	}
	left, right := thread(t, d, "left"), thread(t, d, "right")
	lw, _ := left.Waits()
	rw, _ := right.Waits()
	if lw.Addr != right.Holds()[0].Addr || rw.Addr != left.Holds()[0].Addr {
		t.Errorf("left waits %s holds %v; right waits %s holds %v", lw.Addr, left.Holds(), rw.Addr, right.Holds())
	}
	n := 0
	for _, th := range d.Threads {
		if th.Name == "left" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("thread left listed %d times", n)
	}
}

// Headers of other JDKs: JDK 8 (no cpu=, "JNI global references"), JDK 21
// (decimal nid, bracketed tid), a class loader prefix, a name with quotes.
func TestParseHeaders(t *testing.T) {
	dump := `Full thread dump OpenJDK 64-Bit Server VM (21.0.2+13 mixed mode):

"main" #1 [12345] prio=5 os_prio=0 cpu=52.10ms elapsed=3.00s tid=0x00007f0001 nid=12345 waiting on condition  [0x00007f0002]
   java.lang.Thread.State: TIMED_WAITING (sleeping)
	at java.lang.Thread.sleep0(java.base@21.0.2/Native Method)
	at app//com.example.Main.main(Main.java:7)

"say "hi"" #9 daemon prio=5 os_prio=0 tid=0x00007f0003 nid=0x3039 waiting for monitor entry [0x00007f0004]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at loader/mod@1.0/com.example.Lib.run(Lib.java:12)
	- waiting to lock <no object reference available>

JNI global references: 6
`
	d, err := Parse([]byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Threads) != 2 {
		t.Fatalf("%d threads", len(d.Threads))
	}
	m, q := d.Threads[0], d.Threads[1]
	if m.NID != 12345 || m.ID != 1 || m.Frames[1].Func != "com.example.Main.main" || m.Frames[0].Func != "java.lang.Thread.sleep0" {
		t.Errorf("main %+v", m)
	}
	if q.Name != `say "hi"` || !q.Daemon || q.NID != 0x3039 || q.Frames[0].Func != "com.example.Lib.run" {
		t.Errorf("quoted %+v", q)
	}
	if l, ok := q.Waits(); !ok || l.Addr != "" {
		t.Errorf("waits %+v %v", l, ok)
	}
}

// Truncated and foreign text is refused with the line at fault.
func TestParseErrors(t *testing.T) {
	full := string(load(t, "jdk17-jcmd-monitor.txt"))
	cut := full[:strings.Index(full, `"conn-7"`)+200]
	for _, tc := range []struct {
		name, text, want string
	}{
		{"truncated", cut, `truncated: the dump ends at line 194 inside the thread of line 192, in the middle of 7 bytes of text`},
		{"no end", strings.Replace(full, "JNI global refs: 4, weak refs: 0", "", 1), "truncated"},
		{"foreign line", strings.Replace(full, `	at fixtures.Stripe.lambda$main$0(Stripe.java:65)`, `  File "server.py", line 12, in handle`, 1),
			`line 119: 36 bytes of text in the thread of line 115, neither a state`},
		{"stray top-level", strings.Replace(full, `"conn-5" #17`, "goroutine 5 [running]:\n\"conn-5\" #17", 1),
			`line 170: 22 bytes of text, not part of a Java thread dump`},
		{"not a dump", "goroutine 1 [running]:\nmain.main()\n", "no thread header"},
		{"lock before frame", "\"t\" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable\n   java.lang.Thread.State: RUNNABLE\n\t- locked <0x1> (a X)\n", `line 3: lock line before any frame of the thread of line 1`},
		{"frames without state", "\"t\" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable\n\tat a.B.c(B.java:1)\n\nJNI global refs: 1\n", `line 1: thread has stack frames but no java.lang.Thread.State line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one wrapping ErrBadDump containing %q", err, tc.want)
			}
		})
	}
}

func TestLooks(t *testing.T) {
	if !Looks(load(t, "jdk17-jstack-deadlock.txt")) || !Looks(load(t, "jdk17-jcmd-monitor.txt")) {
		t.Error("a thread dump does not look like one")
	}
	for _, s := range []string{"goroutine 1 [running]:\nmain.main()\n", "--- mutex:\ncycles/second=1\n", ""} {
		if Looks([]byte(s)) {
			t.Errorf("%q looks like a thread dump", s)
		}
	}
}
