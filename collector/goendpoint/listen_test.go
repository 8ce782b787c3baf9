package goendpoint

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof" // the index page the discovery test finds
	"net/netip"
	"os"
	"strings"
	"testing"
)

// tcpFile is a /proc/net/tcp as the kernel writes it: a listener on
// 127.0.0.1:8080 (inode 1001), one on 0.0.0.0:2049 (1002), a connection
// (st 01) and a listener of another process (3003).
const tcpFile = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 00000000:0801 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3003 1 0000000000000000 100 0 0 10 0
`

// tcp6File: a wildcard listener [::]:6060 (2001), ::1:9090 (2002), a
// v4-mapped 127.0.0.1:7070 (2003) and 2001:db8::1:443 (2004).
const tcp6File = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:17AC 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1B9E 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2003 1 0000000000000000 100 0 0 10 0
   3: B80D0120000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2004 1 0000000000000000 100 0 0 10 0
`

func addrs(ls []listener) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.addr.String())
	}
	return out
}

func TestParseListeners(t *testing.T) {
	inodes := socketInodes([]string{"socket:[1001]", "/dev/null", "socket:[1002]", "socket:[1004]", "pipe:[77]", "socket:[2001]", "socket:[2002]", "socket:[2003]", "socket:[2004]", "socket:[x]", "socket:[12"})
	if len(inodes) != 7 || !inodes[1001] || inodes[3003] || inodes[77] {
		t.Fatalf("socket inodes %v", inodes)
	}
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		// The connection (1004) is not listening; 3003 is another process's.
		{"tcp", tcpFile, []string{"127.0.0.1:8080", "0.0.0.0:2049"}},
		{"tcp6", tcp6File, []string{"[::]:6060", "[::1]:9090", "127.0.0.1:7070", "[2001:db8::1]:443"}},
	} {
		ls, bad, err := parseListeners(strings.NewReader(tc.file), inodes)
		if err != nil || bad != 1 && tc.name == "tcp" || bad != 0 && tc.name == "tcp6" {
			t.Errorf("%s: err %v, %d bad lines", tc.name, err, bad)
		}
		if got := addrs(ls); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: listeners %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestParseListenersGarbage feeds lines that are cut, mistyped or out of
// range: each is skipped and counted, the good line still found, and
// nothing panics.
func TestParseListenersGarbage(t *testing.T) {
	good := "   9: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0"
	garbage := []string{
		"",
		"0: 0100007F:1F90",
		"   0: 0100007F 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007F:ZZZZ 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007F:10000 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007F:0000 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007:1F90 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007G:1F90 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007F0100007F:1F90 00000000:0000 0A a:b c d 0 0 1001",
		"   0: 0100007F:1F90 00000000:0000 XX a:b c d 0 0 1001",
		"   0: 0100007F:1F90 00000000:0000 1FF a:b c d 0 0 1001",
		"   0: 0100007F:1F90 00000000:0000 0A a:b c d 0 0 -1",
		"   0: 0100007F:1F90 00000000:0000 0A a:b c d 0 0 99999999999999999999999",
		"\x00\xff\xfe:::: 0A",
	}
	in := "header\n" + strings.Join(garbage, "\n") + "\n" + good + "\n"
	ls, bad, err := parseListeners(strings.NewReader(in), map[uint64]bool{1001: true})
	if err != nil || bad != len(garbage) {
		t.Errorf("err %v, %d bad lines, want %d", err, bad, len(garbage))
	}
	if got := addrs(ls); len(got) != 1 || got[0] != "127.0.0.1:8080" {
		t.Errorf("listeners %q, want the one good line", got)
	}
	// A line longer than any real one ends the read with an error, not a
	// panic or an unbounded buffer.
	long := "header\n" + strings.Repeat("0", 2*maxNetLineBytes) + "\n" + good + "\n"
	if _, _, err := parseListeners(strings.NewReader(long), map[uint64]bool{1001: true}); err == nil {
		t.Error("a line past the limit read without error")
	}
}

func FuzzParseListeners(f *testing.F) {
	f.Add(tcpFile)
	f.Add(tcp6File)
	f.Add("h\n0: :  0A 0:0 0 0 0 0 1")
	f.Fuzz(func(t *testing.T, s string) {
		ls, _, _ := parseListeners(strings.NewReader(s), map[uint64]bool{1001: true, 2001: true})
		for _, l := range ls {
			if !l.addr.IsValid() || l.addr.Port() == 0 || (l.inode != 1001 && l.inode != 2001) {
				t.Errorf("listener %v inode %d", l.addr, l.inode)
			}
		}
	})
}

func TestProbeAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:80":       "127.0.0.1:80",
		"127.0.0.53:53":      "127.0.0.53:53",
		"0.0.0.0:6060":       "127.0.0.1:6060",
		"[::]:6060":          "[::1]:6060",
		"[::1]:9090":         "[::1]:9090",
		"10.1.2.3:6060":      "",
		"[2001:db8::1]:6060": "",
	} {
		to, ok := probeAddr(netip.MustParseAddrPort(in))
		got := ""
		if ok {
			got = to.String()
		}
		if got != want {
			t.Errorf("probeAddr(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestProbeListeners checks the order, the addresses never probed, the
// bound on probes and what is said when nothing answers.
func TestProbeListeners(t *testing.T) {
	var probed []string
	answer := map[string]bool{"http://127.0.0.1:3/debug/pprof/": true}
	probe := func(_ context.Context, u string) error {
		probed = append(probed, u)
		if answer[u] {
			return nil
		}
		return errNotIndex
	}
	ls := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), netip.MustParseAddrPort("0.0.0.0:3"), netip.MustParseAddrPort("127.0.0.1:4")}
	d := probeListeners(t.Context(), ls, probe)
	if d.URL != "http://127.0.0.1:3/debug/pprof" || strings.Join(probed, " ") != "http://127.0.0.1:2/debug/pprof/ http://127.0.0.1:3/debug/pprof/" {
		t.Errorf("found %q after probing %q", d.URL, probed)
	}
	if n := d.Note(); n != "Go runtime profiles fetched from http://127.0.0.1:3/debug/pprof/, found among the process's listening sockets" {
		t.Errorf("note %q", n)
	}

	probed = nil
	var many []netip.AddrPort
	for p := range uint16(maxProbes + 3) {
		many = append(many, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 100+p))
	}
	d = probeListeners(t.Context(), append(many, netip.MustParseAddrPort("192.168.1.5:6060")), probe)
	if d.URL != "" || len(probed) != maxProbes {
		t.Errorf("found %q after %d probes, want none after %d", d.URL, len(probed), maxProbes)
	}
	for _, want := range []string{"none of the process's listening sockets serves /debug/pprof/", "127.0.0.1:100", errNotIndex.Error(), "not probed: 127.0.0.1:108", "192.168.1.5:6060", "; give --pprof http://HOST:PORT"} {
		if !strings.Contains(d.Note(), want) {
			t.Errorf("note %q lacks %q", d.Note(), want)
		}
	}

	if d.Short != "none of the process's listening sockets serves /debug/pprof/" {
		t.Errorf("short %q", d.Short)
	}
	probed = nil
	if d := probeListeners(t.Context(), ls[:1], probe); d.URL != "" || len(probed) != 0 || !strings.Contains(d.why, "loopback and wildcard listeners only") || d.Short != "the process listens on no loopback or wildcard address" {
		t.Errorf("a non-loopback listener alone: %+v, probed %q", d, probed)
	}
	if d := probeListeners(t.Context(), nil, probe); !strings.Contains(d.why, "listens on no TCP socket") || d.Short != "the process listens on no TCP socket" {
		t.Errorf("no listener: %q", d.why)
	}
}

// TestDiscoverPprofSelf finds the pprof endpoint this test process
// serves among its own listening sockets, through /proc, and passes over
// a port that answers HTTP without the index and one that is not HTTP.
func TestDiscoverPprofSelf(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer other.Close()
	raw, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	srv := httptest.NewServer(http.DefaultServeMux) // net/http/pprof's index
	defer srv.Close()

	d := Discover(t.Context(), "", os.Getpid(), IndexProbe(nil))
	if d.URL != srv.URL+"/debug/pprof" {
		t.Fatalf("found %q, want %s/debug/pprof; why: %s", d.URL, srv.URL, d.why)
	}
	// The fetch child answers the same.
	var out, errb strings.Builder
	if code := ServeChild(t.Context(), []string{childKindIndex, srv.URL + "/debug/pprof/", "65536"}, &out, &errb); code != 0 {
		t.Errorf("fetch child: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := ServeChild(t.Context(), []string{childKindIndex, other.URL + "/debug/pprof/", "65536"}, &out, &errb); code != childExitFailed || !strings.Contains(errb.String(), errNotIndex.Error()) {
		t.Errorf("fetch child on a port without pprof: exit %d: %s", code, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("the index probe wrote %q", out.String())
	}
}

func TestDiscoverPprofNoProcess(t *testing.T) {
	d := Discover(t.Context(), t.TempDir(), 1, IndexProbe(nil))
	if d.URL != "" || !strings.Contains(d.why, "could not be read") {
		t.Errorf("an empty /proc: %+v", d)
	}
}
