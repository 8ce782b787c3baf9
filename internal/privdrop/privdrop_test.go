package privdrop

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/internal/testbin"
)

func TestMain(m *testing.M) {
	testbin.RunHelper(map[string]func() int{
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
