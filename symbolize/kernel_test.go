package symbolize

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeKallsyms(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kallsyms"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestKernelFromFile(t *testing.T) {
	root := writeKallsyms(t, `ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000100 t do_thing
ffffffff81000200 D some_data
ffffffff81000300 T _etext
0000000000000000 A fixed_percpu_data
ffffffffc0201000 t ext4_sync_file	[ext4]
ffffffffc0201400 t ext4_other	[ext4]
`)
	k, err := OpenKernel(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr   uint64
		name   string
		module string
	}{
		{0xffffffff81000000, "startup_64", kernelModule}, // marker alias loses
		{0xffffffff810000ff, "startup_64", kernelModule},
		{0xffffffff81000150, "do_thing", kernelModule},
		{0xffffffffc0201010, "ext4_sync_file", "[ext4]"},
		{0xffffffff80000000, "0xffffffff80000000", kernelModule}, // below every symbol
		{0xffffffffc0201500, "0xffffffffc0201500", kernelModule}, // past the last symbol
	} {
		f := k.Frame(c.addr)
		if f.Func != c.name || f.Module != c.module || !f.Kernel || f.Addr != c.addr {
			t.Errorf("Frame(0x%x) = %+v, want %s in %s", c.addr, f, c.name, c.module)
		}
	}
	// Return addresses are looked up at addr-1: a call ending do_thing.
	st := k.Stack([]uint64{0xffffffff81000150, 0xffffffff81000200})
	if len(st.Frames) != 2 || st.Frames[1].Func != "do_thing" {
		t.Errorf("Stack = %+v, want the second frame in do_thing", st.Frames)
	}
}

func TestKernelHiddenAddresses(t *testing.T) {
	root := writeKallsyms(t, "0000000000000000 T _stext\n0000000000000000 T schedule\n")
	if _, err := OpenKernel(root); !errors.Is(err, ErrKallsymsHidden) {
		t.Errorf("OpenKernel with zero addresses = %v, want ErrKallsymsHidden", err)
	}
	if _, err := OpenKernel(t.TempDir()); err == nil {
		t.Errorf("OpenKernel without kallsyms succeeded")
	}
}

// TestKernelLive looks up real kernel functions, taking the expected
// answer from /proc/kallsyms itself.
func TestKernelLive(t *testing.T) {
	requireRoot(t)
	k, err := OpenKernel("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byAddr := map[uint64][]string{}
	want := map[string]uint64{"schedule": 0, "do_nanosleep": 0, "futex_wait": 0}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 3 {
			continue
		}
		a, _ := strconv.ParseUint(fl[0], 16, 64)
		byAddr[a] = append(byAddr[a], fl[2])
		if _, ok := want[fl[2]]; ok && len(fl) == 3 && (fl[1] == "T" || fl[1] == "t") {
			want[fl[2]] = a
		}
	}
	checked := 0
	for name, a := range want {
		if a == 0 || len(byAddr[a]) != 1 || len(byAddr[a+1]) != 0 {
			continue // absent or aliased: the expected name is ambiguous
		}
		checked++
		if fr := k.Frame(a + 1); fr.Func != name || fr.Module != kernelModule {
			t.Errorf("Frame(%s+1) = %+v", name, fr)
		}
	}
	if checked == 0 {
		t.Fatalf("none of %v found unambiguously in /proc/kallsyms", want)
	}
}
