package goendpoint

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/contend-dev/contend/internal/procroot"
)

// Limits of reading a process's listening sockets, with the reasoning
// behind each.
const (
	// maxNetLines bounds the lines read from one /proc/PID/net/tcp file:
	// the file lists every TCP socket of the network namespace (the
	// whole machine's, outside containers), about 150 bytes a line; a
	// busy server has tens of thousands of connections, so 1M lines
	// (150 MB of text read line by line, nothing kept but the matching
	// listeners) covers any real host while a file that never ends is
	// still cut.
	maxNetLines = 1 << 20
	// maxNetLineBytes bounds one line: a real line is under 200 bytes.
	maxNetLineBytes = 4 << 10
	// maxListeners bounds the listening sockets kept for one process: a
	// service listens on a handful of ports, so 64 keeps every real one.
	maxListeners = 64
)

// tcpListen is the st value of a listening socket in /proc/net/tcp
// (TCP_LISTEN in the kernel's tcp_states.h).
const tcpListen = 0x0A

// listener is one listening TCP socket of a process.
type listener struct {
	addr  netip.AddrPort
	inode uint64
}

// socketInodes returns the inodes of the sockets among fd link targets
// ("socket:[12345]"); other targets are skipped.
func socketInodes(targets []string) map[uint64]bool {
	out := map[uint64]bool{}
	for _, t := range targets {
		s, ok := strings.CutPrefix(t, "socket:[")
		if !ok {
			continue
		}
		s, ok = strings.CutSuffix(s, "]")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			out[n] = true
		}
	}
	return out
}

// parseListeners reads a /proc/net/tcp or tcp6 file from r and returns
// the sockets in LISTEN state whose inode is in inodes, at most
// maxListeners. Lines that do not parse are skipped and counted (bad):
// one odd line must not hide the others. procfs's NetTCP is not used:
// it keeps every socket of the namespace in memory and fails the whole
// file on one line it cannot read.
func parseListeners(r io.Reader, inodes map[uint64]bool) (out []listener, bad int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxNetLineBytes)
	for n := 0; sc.Scan(); n++ {
		if n == 0 {
			continue // the header
		}
		if n > maxNetLines {
			return out, bad, fmt.Errorf("more than %d lines", maxNetLines)
		}
		l, ok := parseListenLine(sc.Text())
		switch {
		case !ok:
			bad++
		case l.inode != 0 && inodes[l.inode]:
			if !slices.ContainsFunc(out, func(o listener) bool { return o.addr == l.addr }) {
				out = append(out, l)
			}
			if len(out) >= maxListeners {
				return out, bad, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, bad, err
	}
	return out, bad, nil
}

// parseListenLine parses one line of /proc/net/tcp{,6}:
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
//
// and reports false for a line that is not a listening socket or does
// not parse.
func parseListenLine(line string) (listener, bool) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return listener{}, false
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil || st != tcpListen {
		return listener{}, false
	}
	hexAddr, hexPort, ok := strings.Cut(f[1], ":")
	if !ok {
		return listener{}, false
	}
	addr, ok := parseProcAddr(hexAddr)
	if !ok {
		return listener{}, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || port == 0 {
		return listener{}, false
	}
	inode, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return listener{}, false
	}
	return listener{addr: netip.AddrPortFrom(addr, uint16(port)), inode: inode}, true
}

// parseProcAddr decodes an address of /proc/net/tcp{,6}: 8 hex digits
// (IPv4) or 32 (IPv6), each 32-bit word in the host's byte order
// (little-endian on the machines contend runs on). A v4-mapped IPv6
// address is returned as IPv4.
func parseProcAddr(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	a, ok := netip.AddrFromSlice(b)
	return a.Unmap(), ok
}

// probeAddr returns the address to connect to for a listener on this
// host: itself on loopback, the loopback address of its family for a
// wildcard listener, and false for any other address, which contend
// never connects to.
func probeAddr(l netip.AddrPort) (netip.AddrPort, bool) {
	a := l.Addr()
	switch {
	case a.IsLoopback():
		return l, true
	case a.IsUnspecified() && a.Is4():
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), l.Port()), true
	case a.IsUnspecified():
		return netip.AddrPortFrom(netip.IPv6Loopback(), l.Port()), true
	}
	return netip.AddrPort{}, false
}

// errOtherNetns reports a process in another network namespace: its
// loopback is not the one contend would connect to.
var errOtherNetns = errors.New("the process is in another network namespace, whose loopback contend cannot reach")

// listeningSockets returns the TCP sockets process pid listens on: its
// socket descriptors (/proc/PID/fd) joined with the LISTEN entries of
// /proc/PID/net/tcp and tcp6, IPv4 first. It refuses a process in
// another network namespace than contend's (errOtherNetns).
func listeningSockets(procRoot string, pid int) ([]netip.AddrPort, error) {
	self, err1 := os.Readlink(procroot.Path(procRoot, "self", "ns", "net"))
	theirs, err2 := os.Readlink(procroot.Path(procRoot, strconv.Itoa(pid), "ns", "net"))
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	if self != theirs {
		return nil, errOtherNetns
	}
	fs, err := procroot.FS(procRoot)
	if err != nil {
		return nil, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return nil, err
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return nil, fmt.Errorf("open files: %w", err)
	}
	inodes := socketInodes(targets)
	if len(inodes) == 0 {
		return nil, nil
	}
	var out []netip.AddrPort
	for _, name := range []string{"tcp", "tcp6"} {
		path := procroot.Path(procRoot, strconv.Itoa(pid), "net", name)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return out, err
		}
		ls, _, err := parseListeners(f, inodes)
		f.Close()
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		for _, l := range ls {
			out = append(out, l.addr)
		}
	}
	return out, nil
}
