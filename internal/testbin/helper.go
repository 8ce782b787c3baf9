package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HelperEnv names the helper a test binary runs instead of its tests.
const HelperEnv = "CONTEND_TEST_HELPER"

// RunHelper is called first thing in a package's TestMain: when the test
// binary was started as a helper process (HelperCmd), it runs the helper
// named by $CONTEND_TEST_HELPER from helpers and exits with its status;
// otherwise it returns and the tests run. Helpers dispatched this way are
// not tests, so a test run never lists them as skipped.
func RunHelper(helpers map[string]func() int) {
	name := os.Getenv(HelperEnv)
	if name == "" {
		return
	}
	h, ok := helpers[name]
	if !ok {
		names := make([]string, 0, len(helpers))
		for n := range helpers {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "testbin: no helper %q (have %s)\n", name, strings.Join(names, ", "))
		os.Exit(2)
	}
	os.Exit(h())
}

// HelperCmd returns a command that runs this test binary as helper name
// (see RunHelper), with env added to the test's environment.
func HelperCmd(name string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), env...), HelperEnv+"="+name)
	return cmd
}

// NobodyID is the uid and gid of user nobody.
const NobodyID = 65534

// AsNobody rewrites cmd to run as user nobody, with no capabilities and no
// supplementary groups, the way an unprivileged user runs contend. Run as
// root, it copies cmd's program to a directory nobody can read (test
// binaries and build caches live under root's private directories) and
// runs the copy through setpriv (util-linux), in that directory unless
// cmd.Dir is set; a test that is not root already runs unprivileged and
// cmd is left as it is. Without setpriv the test is skipped, or fails when
// CI is set. The copy is removed when the test ends.
func AsNobody(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("testbin: CI machine without setpriv (util-linux): cannot drop privileges")
		}
		t.Skip("running as root without setpriv (util-linux): cannot drop privileges")
	}
	bin := PublicCopy(t, cmd.Path)
	dir := filepath.Dir(bin)
	id := fmt.Sprint(NobodyID)
	args := append([]string{setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", bin}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = setpriv, args
	if cmd.Dir == "" {
		cmd.Dir = dir
	}
}

// PublicCopy copies the program at path into a new directory anyone may
// enter (test binaries and build caches live under root's private
// directories) and returns the copy's path, removed when the test ends:
// for a program that runs, or starts children, as another user.
func PublicCopy(t testing.TB, path string) string {
	t.Helper()
	dir := tempDir(t, "contend-nobody-", 0o755)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	bin := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatalf("testbin: %v", err)
	}
	return bin
}

// WritableDir returns a new directory user nobody can write into (a
// recording's parent, for a program run AsNobody), removed when the test
// ends.
func WritableDir(t testing.TB) string {
	t.Helper()
	return tempDir(t, "contend-nobody-out-", 0o777)
}

// tempDir makes a directory with mode perm outside the test's own
// temporary directory (which only its user can enter), removed when the
// test ends.
func tempDir(t testing.TB, prefix string, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("testbin: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatalf("testbin: %v", err)
	}
	return dir
}

// CheckPrivateDir fails unless dir is a 0700 directory of 0600 files
// (at least minFiles of them), all owned by uid:gid: how a recording
// holding command lines and stacks must be left.
func CheckPrivateDir(t testing.TB, dir string, uid, gid, minFiles int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) < minFiles {
		t.Fatalf("%s has %d files, want at least %d: %v", dir, len(entries), minFiles, err)
	}
	paths := []string{dir}
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	for _, p := range paths {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if p == dir {
			want = os.ModeDir | 0o700
		}
		sys := st.Sys().(*syscall.Stat_t)
		if st.Mode() != want || int(sys.Uid) != uid || int(sys.Gid) != gid {
			t.Errorf("%s: %v owned by %d:%d, want %v owned by %d:%d", p, st.Mode(), sys.Uid, sys.Gid, want, uid, gid)
		}
	}
}

// Skip skips a test that cannot run here, for reason, except when CI is
// set: CI runs as root on a machine with everything the tests need, so
// there a skip would hide a test that never ran, and it fails instead.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this is a failure, not a skip)", reason)
	}
	t.Skip(reason)
}

// Integration marks an integration test (real probes on fixtures, a
// terminal in tmux): make unit runs it in every package; the -short pass
// of make race, which runs the concurrent packages' tests again under the
// race detector, leaves it out, since the detector's slowdown on real
// recordings costs minutes and the session's concurrency is exercised by
// the tests that replay into it.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: make unit runs it; the -short race pass does not")
	}
}

// RequireRoot skips (or, under CI, fails) a test that needs root for what
// it does, described by what ("loading BPF programs"). It is an
// integration test (Integration).
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	Integration(t)
	if os.Geteuid() != 0 {
		Skip(t, what+" needs root")
	}
}

// WaitUntil polls cond until it holds, failing the test after a generous
// deadline (30 s, far past any event a test waits for on a loaded
// machine): a test waits for the event it needs, never for a fixed time.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	const within = 30 * time.Second
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
