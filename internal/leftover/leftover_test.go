package leftover

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/contend-dev/contend/internal/testbin"
)

// find returns the program named name among Find's, or nil.
func findNamed(t *testing.T, name string) *Program {
	t.Helper()
	progs, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	for i := range progs {
		if progs[i].Name == name {
			return &progs[i]
		}
	}
	return nil
}

// TestFindHoldersAndOrphans loads a program named like contend's: held by
// this process, Find names it with this process as its holder; pinned in
// a BPF file system and closed, no process holds it and it is an orphan;
// unpinned, it is gone.
func TestFindHoldersAndOrphans(t *testing.T) {
	testbin.RequireRoot(t, "loading a BPF program")
	const name = Prefix + "left_test"
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: name, Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	p := findNamed(t, name)
	if p == nil || len(p.Holders) != 1 || p.Holders[0].PID != os.Getpid() {
		t.Fatalf("a program this process holds: %+v", p)
	}

	bpffs := t.TempDir()
	if out, err := exec.Command("mount", "-t", "bpf", "bpf", bpffs).CombinedOutput(); err != nil {
		t.Fatalf("mount a BPF file system: %v %s", err, out)
	}
	defer exec.Command("umount", bpffs).Run()
	pin := filepath.Join(bpffs, "left")
	if err := prog.Pin(pin); err != nil {
		t.Fatal(err)
	}
	prog.Close()
	p = findNamed(t, name)
	if p == nil || len(p.Holders) != 0 || len(Orphans([]Program{*p})) != 1 {
		t.Fatalf("a pinned program nobody holds: %+v, want an orphan", p)
	}
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	if p = findNamed(t, name); p != nil {
		t.Errorf("after its pin went the program is still listed: %+v", p)
	}
}
