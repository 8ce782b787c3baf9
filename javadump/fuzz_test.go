package javadump

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that what it
// accepts is self-consistent.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\"t\" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable\n   java.lang.Thread.State: RUNNABLE\n\tat a.B.c(B.java:1)\n\t- locked <0x1> (a X)\n\nJNI global refs: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		for _, th := range d.Threads {
			if th.NID <= 0 {
				t.Fatalf("thread %q with nid %d", th.Name, th.NID)
			}
			th.Waits()
			th.Holds()
		}
	})
}
