//go:build linux

package goendpoint

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/contend-dev/contend/internal/testbin"
)

// TestDiscoverPprofOtherNetns starts the Go stripe fixture serving pprof
// on loopback in a network namespace of its own: that loopback is not
// contend's, so nothing is probed and the note says why.
func TestDiscoverPprofOtherNetns(t *testing.T) {
	testbin.RequireRoot(t, "creating a network namespace")
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		testbin.Skip(t, "unshare(1) is not installed")
	}
	fx := testbin.Go(t, "fixtures/cmd/gofixture")
	cmd := exec.Command(unshare, "--net", "--", "sh", "-c", "ip link set lo up 2>/dev/null; exec "+fx+" stripe -duration 30s -pprof 127.0.0.1:0")
	testbin.StartForLine(t, cmd, "pprof: ")
	if _, err := listeningSockets("", cmd.Process.Pid); !errors.Is(err, errOtherNetns) {
		t.Errorf("listening sockets of a process in another network namespace: %v, want %v", err, errOtherNetns)
	}
	probed := 0
	d := Discover(t.Context(), "", cmd.Process.Pid, func(context.Context, string) error {
		probed++
		return nil
	})
	if d.URL != "" || probed != 0 || !strings.Contains(d.why, errOtherNetns.Error()) {
		t.Errorf("found %q after %d probes; why %q", d.URL, probed, d.why)
	}
}
