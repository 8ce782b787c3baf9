package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// BPFObjects returns the ids of the BPF programs and links that process
// pid holds open, read from /proc/PID/fdinfo (needs root for another
// process).
func BPFObjects(t testing.TB, pid int) (progs, links []uint32) {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("testbin: list %s: %v", dir, err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				continue
			}
			switch k {
			case "prog_id":
				progs = append(progs, uint32(id))
			case "link_id":
				links = append(links, uint32(id))
			}
		}
	}
	return progs, links
}

// CheckBPFGone fails the test when any of the programs or links still
// exists a few seconds after it should have gone (the kernel frees them
// once their last reference is closed).
func CheckBPFGone(t testing.TB, progs, links []uint32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	gone := func(open func() (interface{ Close() error }, error)) bool {
		for {
			obj, err := open()
			if errors.Is(err, os.ErrNotExist) {
				return true
			}
			if err == nil {
				obj.Close()
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, id := range progs {
		if !gone(func() (interface{ Close() error }, error) { return ebpf.NewProgramFromID(ebpf.ProgramID(id)) }) {
			t.Errorf("BPF program %d still loaded", id)
		}
	}
	for _, id := range links {
		if !gone(func() (interface{ Close() error }, error) { return link.NewFromID(link.ID(id)) }) {
			t.Errorf("BPF link %d still attached", id)
		}
	}
}
