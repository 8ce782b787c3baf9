package collector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contend-dev/contend/recording"
)

func TestTargetValidate(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want string // "" for valid
	}{
		{Target{PIDs: []int{1, 2}}, ""},
		{Target{Comm: "postgres"}, ""},
		{Target{Cgroup: "system.slice/x.service"}, ""},
		{Target{}, "no target"},
		{Target{PIDs: []int{1}, Comm: "x"}, "one of"},
		{Target{Comm: "x", Cgroup: "y"}, "one of"},
		{Target{PIDs: []int{0}}, "positive"},
		{Target{PIDs: []int{5, 5}}, "twice"},
		{Target{Comm: "a-name-of-sixteen"}, "15 bytes"},
	} {
		err := tc.t.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.t, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want an error about %q", tc.t, err, tc.want)
		}
	}
	if got := (Target{PIDs: []int{4, 5}}).String(); got != "pids 4, 5" {
		t.Errorf("String = %q", got)
	}
	if (Target{PIDs: []int{4}}).Follows() || !(Target{Comm: "x"}).Follows() || !(Target{Cgroup: "x"}).Follows() {
		t.Error("Follows: only --comm and --cgroup follow new processes")
	}
	if r := (Target{Comm: "x"}).Recording(); r.Comm != "x" || len(r.PIDs) != 0 {
		t.Errorf("Recording = %+v", r)
	}
}

// TestTargetResolve resolves pids and names over a test /proc tree.
func TestTargetResolve(t *testing.T) {
	root := procTree(t, map[string]string{
		"100": "Name:\tprog\nState:\tS (sleeping)\nTgid:\t100\nPid:\t100\n",
		"200": "Name:\tprog\nState:\tR (running)\nTgid:\t200\nPid:\t200\n",
		"300": "Name:\tprog\nState:\tZ (zombie)\nTgid:\t300\nPid:\t300\n",
	})
	os.WriteFile(filepath.Join(root, "200", "comm"), []byte("other\n"), 0o644)
	pids, err := Target{PIDs: []int{200, 100}}.Resolve(root)
	if err != nil || len(pids) != 2 || pids[0] != 200 {
		t.Errorf("Resolve pids = %v, %v", pids, err)
	}
	_, err = Target{PIDs: []int{100, 400}}.Resolve(root)
	if !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), "400") {
		t.Errorf("a missing pid: %v, want ErrNoProcess naming 400", err)
	}
	// By name: the zombie is left out, the other name too.
	pids, err = Target{Comm: "prog"}.Resolve(root)
	if err != nil || len(pids) != 1 || pids[0] != 100 {
		t.Errorf("Resolve comm = %v, %v; want [100]", pids, err)
	}
	if pids, err := (Target{Comm: "nobody"}).Resolve(root); err != nil || len(pids) != 0 {
		t.Errorf("a name nobody has: %v, %v; want none and no error", pids, err)
	}
}

// TestCgroupProcesses lists the processes of a cgroup tree and its
// descendants.
func TestCgroupProcesses(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "child", "grandchild"), 0o755)
	os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("10\n11\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "child", "cgroup.procs"), []byte("12\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "child", "grandchild", "cgroup.procs"), []byte("11\n13\n"), 0o644)
	pids, err := cgroupProcesses(dir)
	if err != nil || fmt.Sprint(pids) != "[10 11 12 13]" {
		t.Errorf("cgroupProcesses = %v, %v", pids, err)
	}
	if _, err := (Target{Cgroup: filepath.Join(dir, "nope")}).Resolve(""); !errors.Is(err, ErrNoProcess) {
		t.Errorf("a missing cgroup: %v, want ErrNoProcess", err)
	}
	if err := (Target{Cgroup: dir}).checkCgroup(); err == nil || !strings.Contains(err.Error(), "cgroup v2") {
		t.Errorf("a directory outside cgroup v2: %v", err)
	}
	if (Target{Cgroup: "a/b"}).CgroupDir() != filepath.Join(cgroupMount(), "a/b") || (Target{Cgroup: "/x/y/"}).CgroupDir() != "/x/y" {
		t.Error("CgroupDir: relative paths are under the cgroup v2 mount, absolute ones as given")
	}
}

// TestLockKey checks the identity of private and shared locks.
func TestLockKey(t *testing.T) {
	sh := &recording.SharedLock{Dev: "00:01", Inode: 33, Offset: 0x40, Path: "/dev/zero (deleted)"}
	if got := recording.LockKey(7, 0x1000, sh); got != "shared:00:01:33:0x40" {
		t.Errorf("shared key %q", got)
	}
	if got := recording.LockKey(7, 0x1000, nil); got != "7:0x1000" {
		t.Errorf("private key %q", got)
	}
	if got := sh.Name(); got != "/dev/zero (deleted)+0x40" {
		t.Errorf("shared name %q", got)
	}
}
