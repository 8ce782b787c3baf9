package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// sudoAsNobody makes cmd run as if `sudo` had started it for user nobody.
func sudoAsNobody(cmd *exec.Cmd) {
	id := strconv.Itoa(testbin.NobodyID)
	cmd.Env = append(os.Environ(), "SUDO_UID="+id, "SUDO_GID="+id, "SUDO_USER=nobody")
}

// Issue 33 row 12: `sudo contend record -o
// /usr/local/lib/python3.11/dist-packages/x` had root create the missing
// parents and hand the user a directory of its own in root's Python
// path. Rebuilt with a root-owned 0755 directory standing for
// /usr/local/lib/python3.11: the user may not create in it, so contend
// refuses (exit 2, naming the user) before attaching anything, and
// creates nothing there.
func TestRecordOutputNotCreatedByRoot(t *testing.T) {
	testbin.RequireRoot(t, "acting as sudo's user")
	sys := filepath.Join(testbin.WritableDir(t), "python3.11")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	sl := exec.Command("sleep", "60")
	if err := sl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sl.Process.Kill(); sl.Wait() })

	out := filepath.Join(sys, "dist-packages", "x")
	cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(sl.Process.Pid), "-d", "1s", "-o", out)
	sudoAsNobody(cmd)
	if code := exitCodeOf(t, cmd.Run()); code != exitUsage {
		t.Errorf("exit %d, want %d\nstderr: %s", code, exitUsage, errb)
	}
	if !strings.Contains(errb.String(), "permission denied") || !strings.Contains(errb.String(), "nobody") {
		t.Errorf("stderr %q: want the refusal and the user it was made as", errb)
	}
	if ents, _ := os.ReadDir(sys); len(ents) != 0 {
		t.Errorf("%s holds %d entries after the refusal, want none", sys, len(ents))
	}
}

// Where the user may write, the recording and every parent contend
// creates for it are the user's, made by the user.
func TestRecordOutputParentsMadeByUser(t *testing.T) {
	requireRoot(t)
	_, pid := startTarget(t)
	top := testbin.WritableDir(t)
	out := filepath.Join(top, "a", "b", "rec")
	cmd, _, errb := contendCmd(t, "record", "-p", strconv.Itoa(pid), "-d", "1s", "-o", out, "--format", "json")
	sudoAsNobody(cmd)
	if code := exitCodeOf(t, cmd.Run()); code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errb)
	}
	for _, p := range []string{filepath.Join(top, "a"), filepath.Join(top, "a", "b")} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != testbin.NobodyID || s.Gid != testbin.NobodyID {
			t.Errorf("%s made by %d:%d, want nobody's", p, s.Uid, s.Gid)
		}
	}
	testbin.CheckPrivateDir(t, out, testbin.NobodyID, testbin.NobodyID, 3)
}
