package goendpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// Limits of looking for a pprof endpoint among a Go target's listening
// sockets, with the reasoning behind each.
const (
	// probeTimeout bounds one probe. The port is on loopback and
	// net/http/pprof's index is a static page, answered in well under a
	// millisecond; a second covers a loaded target, and a port that
	// accepts and then stays silent (another protocol) costs no more.
	probeTimeout = time.Second
	// maxProbeBody bounds the body read from a probed port: the index
	// page is about 5 KiB, 64 KiB also holds a framework's page around
	// it, and no more is ever read from a port that is not pprof.
	maxProbeBody = 64 << 10
	// maxProbes bounds the ports probed: a service listens on a handful.
	// Eight silent ports at probeTimeout delay the start of a recording
	// by at most 8 s, and only when no port answers at once.
	maxProbes = 8
)

// Discovery is what looking for a pprof endpoint found.
type Discovery struct {
	// URL is the endpoint's /debug/pprof base, "" when none was found.
	URL string
	// Short says, when URL is "", in a few words why none was found, for
	// each kind of data Meta.GoData lists absent; why says it in full.
	Short string
	why   string
	// skipped lists listening addresses not probed (not loopback or
	// wildcard, or past maxProbes), for the note.
	skipped []string
}

// Note is the sentence for Meta.Warnings and stderr.
func (d Discovery) Note() string {
	if d.URL != "" {
		return fmt.Sprintf("Go runtime profiles fetched from %s/, found among the process's listening sockets", d.URL)
	}
	return "no Go runtime profiles: " + d.why + "; give --pprof http://HOST:PORT where the program serves net/http/pprof"
}

// probeFunc checks that u answers as net/http/pprof's index page.
type probeFunc func(ctx context.Context, u string) error

// IndexProbe returns the probe of the endpoints: in a fetch child made by
// child when set (as the user who ran contend), else in this process.
func IndexProbe(child func(ctx context.Context, args ...string) *exec.Cmd) probeFunc {
	if child != nil {
		return func(ctx context.Context, u string) error {
			_, err := runFetchChild(ctx, child, childKindIndex, u, maxProbeBody, maxChildError)
			return err
		}
	}
	client := fetchClient(nil)
	return func(ctx context.Context, u string) error {
		return getIndex(ctx, client, u, maxProbeBody)
	}
}

// Discover looks for a net/http/pprof endpoint that process pid
// serves itself: it probes `GET /debug/pprof/` on each TCP port the
// process listens on at a loopback or wildcard address (never another
// host, never another address of this one), in the order /proc lists
// them, and returns the first that answers with the index page.
func Discover(ctx context.Context, procRoot string, pid int, probe probeFunc) Discovery {
	addrs, err := listeningSockets(procRoot, pid)
	if err != nil {
		return Discovery{
			why:   fmt.Sprintf("no --pprof was given, and the listening sockets of pid %d could not be read: %v", pid, err),
			Short: "its listening sockets could not be read",
		}
	}
	return probeListeners(ctx, addrs, probe)
}

// probeListeners probes the listening addresses addrs in order and
// returns the first pprof endpoint that answers.
func probeListeners(ctx context.Context, addrs []netip.AddrPort, probe probeFunc) Discovery {
	var d Discovery
	if len(addrs) == 0 {
		d.why = "no --pprof was given, and the process listens on no TCP socket that could serve net/http/pprof"
		d.Short = "the process listens on no TCP socket"
		return d
	}
	var tried []string
	var lastErr error
	for _, a := range addrs {
		to, ok := probeAddr(a)
		if !ok || len(tried) == maxProbes {
			d.skipped = append(d.skipped, a.String())
			continue
		}
		u := "http://" + to.String() + "/debug/pprof"
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := probe(pctx, u+"/")
		cancel()
		if err == nil {
			d.URL = u
			return d
		}
		tried = append(tried, to.String())
		lastErr = err
	}
	switch {
	case len(tried) == 0:
		d.why = fmt.Sprintf("no --pprof was given, and the process listens only on addresses contend does not connect to (%s): it probes loopback and wildcard listeners only", strings.Join(d.skipped, ", "))
		d.Short = "the process listens on no loopback or wildcard address"
	default:
		d.Short = "none of the process's listening sockets serves /debug/pprof/"
		d.why = fmt.Sprintf("no --pprof was given, and none of the process's listening sockets serves /debug/pprof/ (probed %s; last: %v)", strings.Join(tried, ", "), lastErr)
		if len(d.skipped) > 0 {
			d.why += fmt.Sprintf("; not probed: %s", strings.Join(d.skipped, ", "))
		}
	}
	return d
}

// errNotIndex reports an answer that is not net/http/pprof's index.
var errNotIndex = errors.New("answered, but not with net/http/pprof's index page")

// getIndex fetches u, reading at most limit bytes of body, and checks
// that it is net/http/pprof's index page: it names /debug/pprof/ and
// links the goroutine profile.
func getIndex(ctx context.Context, client *http.Client, u string, limit int64) error {
	body, err := get(ctx, client, u, limit)
	if err != nil {
		var se *statusError
		if errors.As(err, &se) {
			// The port answered HTTP; which status is not worth more.
			return fmt.Errorf("%w (%d %s)", errNotIndex, se.code, http.StatusText(se.code))
		}
		return err
	}
	if !bytes.Contains(body, []byte("/debug/pprof/")) || !bytes.Contains(body, []byte("goroutine")) {
		return errNotIndex
	}
	return nil
}
