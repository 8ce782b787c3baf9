//go:build linux

package collector

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// perfMapRecorder is a symbolizer that takes any perf map, so that the
// JVM support goes on to run jcmd.
type perfMapRecorder struct{ rawSymbols }

func (perfMapRecorder) LoadPerfMap(string) (int, error) { return 0, nil }

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// publicDir makes a directory every user may enter but only root may
// write: where a trusted jcmd lives.
func publicDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "contend-jcmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeJVM starts, as user nobody, a copy of sleep named java in a
// directory the target owns, with an executable jcmd planted beside it
// and a shared object named libjvm.so mapped (LD_PRELOAD): what a local
// user needs to look like a JVM. It returns the pid and the file the
// planted jcmd creates when anything runs it.
func fakeJVM(t *testing.T) (pid int, planted string) {
	t.Helper()
	dir := testbin.WritableDir(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	java := filepath.Join(dir, "java")
	copyFile(t, sleep, java, 0o755)
	libm := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6", "/usr/lib/libm.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libm = p
			break
		}
	}
	if libm == "" {
		testbin.Skip(t, "no libm.so.6 to map as libjvm.so")
	}
	copyFile(t, libm, filepath.Join(dir, "libjvm.so"), 0o755)
	planted = filepath.Join(dir, "planted-ran")
	script(t, dir, "jcmd", "/usr/bin/id -u > "+planted+"\necho ran\n")
	cmd := exec.Command(java, "600")
	cmd.Env = []string{"LD_PRELOAD=" + filepath.Join(dir, "libjvm.so")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testbin.NobodyID, Gid: testbin.NobodyID, Groups: []uint32{}}}
	testbin.StartCmd(t, cmd)
	pid = cmd.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for !isJVM("", pid) {
		if time.Now().After(deadline) {
			t.Fatal("the fake JVM never mapped libjvm.so")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pid, planted
}

func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, perm); err != nil {
		t.Fatal(err)
	}
}

// A target that maps a file named libjvm.so and puts an executable jcmd
// beside its own binary must not get that jcmd run: not with no --jcmd
// (contend looks on its own PATH and JAVA_HOME only), and not when a
// trusted jcmd is given. The trusted one runs as the target's user, not
// as root.
func TestPlantedJcmdNeverRuns(t *testing.T) {
	testbin.RequireRoot(t, "starting a target as another user")
	pid, planted := fakeJVM(t)

	// No jcmd anywhere contend looks: none is run, and the warning says
	// what to do.
	t.Setenv("PATH", t.TempDir())
	t.Setenv("JAVA_HOME", "")
	found, err := FindJcmd("")
	if err != nil || found != "" {
		t.Fatalf("FindJcmd with no JDK = %q, %v; want none", found, err)
	}
	j := startJVM("", pid, perfMapRecorder{}, found)
	if j == nil {
		t.Fatal("the fake JVM was not taken for a JVM: the test proves nothing")
	}
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the jcmd planted beside the target ran")
	}
	if w := strings.Join(j.warnings, "\n"); !strings.Contains(w, "--jcmd") {
		t.Errorf("warning does not say how to name a jcmd: %q", w)
	}

	// A trusted jcmd runs, as the target's user and group.
	trusted := script(t, publicDir(t), "jcmd", "echo \"$2:\"\n/usr/bin/id -u\n/usr/bin/id -g\n")
	found, err = FindJcmd(trusted)
	if err != nil {
		t.Fatal(err)
	}
	j = startJVM("", pid, perfMapRecorder{}, found)
	out, err := j.run(context.Background(), "VM.version")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(testbin.NobodyID) + "\n" + strconv.Itoa(testbin.NobodyID) + "\n"
	if out != want {
		t.Errorf("trusted jcmd printed %q, want uid and gid %q", out, want)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the jcmd planted beside the target ran")
	}
}

// FindJcmd refuses a jcmd that others may replace, and what is not an
// executable file; it follows JAVA_HOME from contend's environment.
func TestFindJcmdChecks(t *testing.T) {
	dir := t.TempDir()
	writable := script(t, dir, "jcmd-writable", "exit 0\n")
	if err := os.Chmod(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := FindJcmd(writable); !errors.Is(err, ErrUntrustedJcmd) {
		t.Errorf("world-writable jcmd: err %v, want ErrUntrustedJcmd", err)
	}
	plain := filepath.Join(dir, "jcmd-plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FindJcmd(plain); !errors.Is(err, ErrUntrustedJcmd) {
		t.Errorf("non-executable jcmd: err %v, want ErrUntrustedJcmd", err)
	}
	if _, err := FindJcmd(dir); !errors.Is(err, ErrUntrustedJcmd) {
		t.Errorf("directory as jcmd: err %v, want ErrUntrustedJcmd", err)
	}
	if _, err := FindJcmd(filepath.Join(dir, "absent")); err == nil {
		t.Error("missing jcmd accepted")
	}

	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := script(t, filepath.Join(home, "bin"), "jcmd", "exit 0\n")
	t.Setenv("JAVA_HOME", home)
	t.Setenv("PATH", t.TempDir())
	got, err := FindJcmd("")
	if err != nil || got != want {
		t.Errorf("FindJcmd with JAVA_HOME = %q, %v; want %q", got, err, want)
	}
}

// A process answering jcmd with an endless stream is stopped at the
// output cap, well before the call's timeout, and its output is not kept.
func TestJcmdOutputCapped(t *testing.T) {
	yes := script(t, t.TempDir(), "jcmd", "exec yes 0123456789abcdef0123456789abcdef\n")
	j := &jvmTarget{pid: os.Getpid(), jcmd: yes}
	start := time.Now()
	out, err := j.run(context.Background(), "Thread.print", "-l")
	if !errors.Is(err, errJcmdOutput) {
		t.Fatalf("endless jcmd output: err %v, want errJcmdOutput", err)
	}
	if out != "" {
		t.Errorf("capped output kept: %d bytes", len(out))
	}
	if d := time.Since(start); d >= jcmdTimeout {
		t.Errorf("stopped by the timeout (%v), not the cap", d)
	}
}

// dumpJcmd writes a jcmd that prints a real thread dump after running
// before (shell), and returns it with the file that counts its calls.
func dumpJcmd(t *testing.T, before string) (jcmd, calls string) {
	t.Helper()
	dir := t.TempDir()
	dump, err := filepath.Abs(filepath.Join("..", "javadump", "testdata", "jdk17-jcmd-monitor.txt"))
	if err != nil {
		t.Fatal(err)
	}
	calls = filepath.Join(dir, "calls")
	jcmd = script(t, dir, "jcmd", "echo x >> "+calls+"\n"+before+"\ntail -n +2 "+dump+"\n")
	return jcmd, calls
}

func countCalls(t *testing.T, calls string) int {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// Every dump asked for is taken when the JVM attaches slower than the
// recording lasts: the end waits for the dumps still due, and says how
// long it waited.
func TestJVMDumpsDueAfterEndAreTaken(t *testing.T) {
	jcmd, calls := dumpJcmd(t, "sleep 1")
	j := &jvmTarget{pid: os.Getpid(), jcmd: jcmd}
	j.startDumps(3, 50*time.Millisecond)
	waited := j.finish(nil)
	if len(j.dumps) != 3 {
		t.Fatalf("%d of 3 dumps taken (warnings %q)", len(j.dumps), j.warnings)
	}
	if n := countCalls(t, calls); n != 3 {
		t.Errorf("jcmd ran %d times for 3 dumps that all succeed", n)
	}
	if waited < time.Second {
		t.Errorf("finish waited %v; the dumps take at least a second", waited)
	}
	if len(j.warnings) != 0 {
		t.Errorf("warnings for dumps that were all taken: %q", j.warnings)
	}
	rec := &recording.Recording{}
	j.apply(rec)
	if rec.Meta.Settings["jvm_dumps_wait"] == "" || len(rec.JavaDumps) != 3 {
		t.Errorf("recording has %d dumps, wait %q", len(rec.JavaDumps), rec.Meta.Settings["jvm_dumps_wait"])
	}
}

// A dump that fails once is tried again; a refusal is not, and the
// warning says the JVM refused.
func TestJVMDumpRetryAndRefusal(t *testing.T) {
	dir := t.TempDir()
	flaky, calls := dumpJcmd(t, "if [ ! -e "+filepath.Join(dir, "once")+" ]; then touch "+filepath.Join(dir, "once")+"; echo 'java.io.IOException: Connection refused'; exit 1; fi")
	j := &jvmTarget{pid: os.Getpid(), jcmd: flaky}
	j.startDumps(1, 10*time.Millisecond)
	j.finish(nil)
	if len(j.dumps) != 1 || countCalls(t, calls) != 2 {
		t.Errorf("flaky jcmd: %d dumps after %d calls, want 1 after 2 (warnings %q)", len(j.dumps), countCalls(t, calls), j.warnings)
	}

	refusing, calls := dumpJcmd(t, "echo 'com.sun.tools.attach.AttachNotSupportedException: The VM does not support the attach mechanism'; exit 1")
	j = &jvmTarget{pid: os.Getpid(), jcmd: refusing}
	j.startDumps(2, 10*time.Millisecond)
	j.finish(nil)
	if len(j.dumps) != 0 || countCalls(t, calls) != 1 {
		t.Errorf("refusing JVM: %d dumps after %d calls, want none after 1", len(j.dumps), countCalls(t, calls))
	}
	if w := strings.Join(j.warnings, "\n"); !strings.Contains(w, "2 of 2 Java thread dumps were not taken: the JVM refused") {
		t.Errorf("warning does not say the JVM refused both: %q", w)
	}
}
