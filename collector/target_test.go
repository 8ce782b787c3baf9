package collector

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-3": 4, "0-3,6": 5, "0,2,4-5": 4, "": 0, "x": 0, "3-1": 0} {
		if got := countCPUList(in); got != want {
			t.Errorf("countCPUList(%q) = %d, want %d", in, got, want)
		}
	}
}

// procTree writes a fake /proc with the given status files, and stat
// files whose state is the status file's.
func procTree(t *testing.T, status map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, st := range status {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte(st), 0o644); err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(st, "State:\t")
		stat := pid + " (prog) " + rest[:1] + " 1 " + pid + " " + pid + " 0 -1 4194560 100 0 0 0 7 8 0 0 20 0 1 0 99 10000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "comm"), []byte("prog\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "cmdline"), []byte("prog\x00-x\x00"), 0o644)
	}
	return root
}

func TestCheckTarget(t *testing.T) {
	root := procTree(t, map[string]string{
		"100": "Name:\tprog\nState:\tS (sleeping)\nTgid:\t100\nPid:\t100\nCpus_allowed_list:\t0-3,6\n",
		"101": "Name:\tprog\nState:\tS (sleeping)\nTgid:\t100\nPid:\t101\n",
		"102": "Name:\tprog\nState:\tZ (zombie)\nTgid:\t102\nPid:\t102\n",
	})
	if err := checkTarget(root, 100); err != nil {
		t.Errorf("live process: %v", err)
	}
	for pid, want := range map[int]string{101: "thread of process 100", 102: "zombie", 103: "no such process", 0: "no such process"} {
		err := checkTarget(root, pid)
		if !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), want) {
			t.Errorf("pid %d: %v, want ErrNoProcess mentioning %q", pid, err, want)
		}
	}
	ti := readTarget(root, 100)
	if ti.comm != "prog" || len(ti.cmdline) != 2 || ti.cmdline[1] != "-x" || ti.cpusAllowed != 5 {
		t.Errorf("target info %+v", ti)
	}
}
