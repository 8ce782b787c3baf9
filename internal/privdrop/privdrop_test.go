package privdrop

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/internal/testbin"
)

func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
		// do-then-drop runs Do many times, then drops the process.
		"do-then-drop": func() int {
			nobody := User{UID: testbin.NobodyID, GID: testbin.NobodyID, Name: "nobody"}
			for i := range 50 {
				if err := Do(nobody, func() error {
					return os.Mkdir(filepath.Join(os.Getenv("WRITABLE"), fmt.Sprint("d", i)), 0o700)
				}); err != nil {
					fmt.Println("do:", err)
					return 1
				}
			}
			if err := Drop(nobody); err != nil {
				fmt.Println("drop:", err)
				return 1
			}
			fmt.Println("dropped")
			return 0
		},
		// drop-to-nobody drops, then prints its ids and whether it can
		// read a root-only file and become root again.
		"drop-to-nobody": func() int {
			if err := Drop(User{UID: testbin.NobodyID, GID: testbin.NobodyID, Name: "nobody"}); err != nil {
				fmt.Println("drop:", err)
				return 1
			}
			r, e, s := unix.Getresuid()
			_, readErr := os.ReadFile(os.Getenv("SECRET"))
			fmt.Printf("uid=%d/%d/%d gid=%d read=%v root=%v\n", r, e, s, os.Getegid(), readErr == nil, unix.Setresuid(0, 0, 0) == nil)
			return 0
		},
	})
	os.Exit(m.Run())
}

func requireRoot(t *testing.T) {
	t.Helper()
	testbin.RequireRoot(t, "switching users")
}

// TestTarget: the user to drop to comes from --user, else sudo's
// variables; nobody when running as root alone, or asked to stay root.
func TestTarget(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		spec, sudoUID, sudoGID string
		ok                     bool
		uid, gid               int
	}{
		{"", "", "", false, 0, 0},
		{"", "1234", "1235", true, 1234, 1235},
		{"nobody", "1234", "1235", true, testbin.NobodyID, testbin.NobodyID},
		{"4321", "", "", true, 4321, 4321}, // a uid without an account
		{"root", "1234", "1235", false, 0, 0},
		{"0", "", "", false, 0, 0},
	} {
		t.Setenv("SUDO_UID", c.sudoUID)
		t.Setenv("SUDO_GID", c.sudoGID)
		u, ok, err := Target(c.spec)
		if err != nil || ok != c.ok || (ok && (u.UID != c.uid || u.GID != c.gid)) {
			t.Errorf("Target(%q) with SUDO_UID=%q: %+v %v %v, want ok %v uid %d gid %d", c.spec, c.sudoUID, u, ok, err, c.ok, c.uid, c.gid)
		}
	}
	t.Setenv("SUDO_UID", "x")
	if _, _, err := Target(""); err == nil {
		t.Error("SUDO_UID=x accepted")
	}
	if _, _, err := Target("no-such-user-here"); err == nil {
		t.Error("an unknown user accepted")
	}
}

// TestDrop drops a helper process to nobody: every uid changes, no
// root-only file can be read, and there is no way back.
func TestDrop(t *testing.T) {
	requireRoot(t)
	secret := t.TempDir() + "/secret"
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := testbin.HelperCmd("drop-to-nobody", "SECRET="+secret)
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("uid=%d/%d/%d gid=%d read=false root=false", testbin.NobodyID, testbin.NobodyID, testbin.NobodyID, testbin.NobodyID)
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("after Drop: %q (%v), want %q", out, err, want)
	}
}

// TestCommand runs a command as nobody.
func TestCommand(t *testing.T) {
	requireRoot(t)
	cmd := Command(t.Context(), User{UID: testbin.NobodyID, GID: testbin.NobodyID}, "/bin/sh", "-c", "id -u; id -g; grep CapEff /proc/self/status")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 || f[0] != "65534" || f[1] != "65534" || f[3] != "0000000000000000" {
		t.Errorf("command ran as %q", out)
	}
}

// Do runs f with the user's permissions and ownership on its own thread
// while the process stays root: what f creates belongs to the user, a
// directory only root may write refuses it, and afterwards the process
// is root on every thread as before.
func TestDo(t *testing.T) {
	requireRoot(t)
	nobody := User{UID: testbin.NobodyID, GID: testbin.NobodyID, Name: "nobody"}
	shared := testbin.WritableDir(t)
	rootOnly := t.TempDir() // 0700, root's
	err := Do(nobody, func() error {
		if err := os.Mkdir(filepath.Join(rootOnly, "x"), 0o700); !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("mkdir in a root-only directory: %v, want permission denied", err)
		}
		return os.Mkdir(filepath.Join(shared, "x"), 0o700)
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(shared, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != testbin.NobodyID || sys.Gid != testbin.NobodyID {
		t.Errorf("created as %d:%d, want nobody's", sys.Uid, sys.Gid)
	}
	// The threads left are root's: whichever runs this, it can write
	// the root-only directory.
	for range 20 {
		if err := os.WriteFile(filepath.Join(rootOnly, "y"), nil, 0o600); err != nil {
			t.Fatalf("root after Do: %v", err)
		}
		runtime.Gosched()
	}
	if r, e, s := unix.Getresuid(); r != 0 || e != 0 || s != 0 {
		t.Errorf("uids %d/%d/%d after Do, want root's", r, e, s)
	}

	// Do leaves no thread behind with other ids: dropping the whole
	// process afterwards works (libc's setuid, which changes every
	// thread, aborted the process when one thread had the user's ids).
	cmd := testbin.HelperCmd("do-then-drop", "WRITABLE="+shared)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dropped") {
		t.Errorf("Do then Drop: %v\n%s", err, out)
	}
}
