package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// Plain root (no sudo, no --user) reads a user's inputs as that user: a
// link the user planted at a file only root may read is not followed
// with root's rights, and root's own inputs are still read as root.
func TestPlainRootReadsUserInputsAsTheUser(t *testing.T) {
	testbin.RequireRoot(t, "running contend as plain root against a user's files")
	secretDir := t.TempDir() // 0700, root's
	secret := filepath.Join(secretDir, "secret.pb")
	if err := os.WriteFile(secret, []byte("root-only-secret-line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The user's directory: the link and the directory are nobody's.
	userDir := testbin.WritableDir(t)
	if err := os.Chmod(userDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(userDir, testbin.NobodyID, testbin.NobodyID); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(userDir, "mutex.pb.gz")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, testbin.NobodyID, testbin.NobodyID); err != nil {
		t.Fatal(err)
	}
	cmd, _, errb := contendCmd(t, "analyze", link)
	cmd.Env = withoutSudo(os.Environ())
	code := exitCodeOf(t, cmd.Run())
	if code != exitUsage || !strings.Contains(errb.String(), "permission denied") {
		t.Errorf("analyze of nobody's link to a root-only file: exit %d, stderr %q; want exit %d and permission denied (read as nobody)", code, errb, exitUsage)
	}
	if strings.Contains(errb.String(), "root-only-secret") {
		t.Errorf("stderr quotes the file: %q", errb)
	}

	// Root's own file, in root's directory: read as root (it parses
	// and is refused as a profile, not as a permission).
	cmd, _, errb = contendCmd(t, "analyze", secret)
	cmd.Env = withoutSudo(os.Environ())
	exitCodeOf(t, cmd.Run())
	if strings.Contains(errb.String(), "permission denied") {
		t.Errorf("root's own input was not read as root: %q", errb)
	}
}

// withoutSudo drops sudo's variables, so that contend runs as plain root.
func withoutSudo(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "SUDO_") {
			out = append(out, e)
		}
	}
	return out
}
