package symbolize

import (
	"sync"
	"testing"
)

// TestLoadingRightAfterExec checks the loader test on the maps a dynamic
// executable has at exec (itself, ld.so, the vDSO), after ld.so mapped
// libc, and for a static executable, which maps no loader at all.
func TestLoadingRightAfterExec(t *testing.T) {
	const exe = "/usr/bin/flock"
	exeR := region{exec: true, path: exe}
	ld := region{exec: true, path: "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"}
	vdso := region{exec: true, path: "[vdso]"}
	libc := region{exec: true, path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	data := region{path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	anon := region{exec: true}
	for _, tc := range []struct {
		name    string
		regions []region
		want    bool
	}{
		{"at exec", []region{exeR, ld, vdso, anon}, true},
		{"libc's data mapped, not its code", []region{exeR, ld, vdso, data}, true},
		{"libc mapped", []region{exeR, ld, libc, vdso}, false},
		{"static executable", []region{exeR, vdso}, false},
		{"musl: its loader is its libc", []region{exeR, {exec: true, path: "/lib/ld-musl-x86_64.so.1"}}, false},
	} {
		p := &process{mu: &sync.Mutex{}, exePath: exe, regions: tc.regions}
		if got := p.loading(); got != tc.want {
			t.Errorf("%s: loading() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
