package agent

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits of the metrics server. A Prometheus server scrapes with one
// connection at a time, a few servers or a curl beside them make a
// handful; whatever else connects must not take the descriptors the
// probes and /proc need (each session holds hundreds: programs, maps,
// links, perf events, /proc files), nor hold a connection for long.
const (
	// MaxConnections bounds the metrics connections open at once; one
	// more is closed as soon as it is accepted. 32 leave room for
	// several scrapers and a person, and are few beside the probes'
	// descriptors.
	MaxConnections = 32
	// readHeaderTimeout bounds how long a connection may take to send
	// its request's headers: a scraper sends them at once.
	readHeaderTimeout = 5 * time.Second
	// readTimeout bounds reading a whole request (a GET has no body).
	readTimeout = 10 * time.Second
	// writeTimeout bounds writing a response: rendering the metrics
	// takes milliseconds, a client that reads slower holds a slot.
	writeTimeout = 30 * time.Second
	// idleTimeout would close a kept-alive connection with no request;
	// keep-alives are off (a scrape every few seconds gains nothing by
	// keeping a connection, while an idle one holds a slot), so it only
	// backs that up.
	idleTimeout = 5 * time.Second
	// maxHeaderBytes bounds a request's headers: a scrape sends under
	// 1 KiB.
	maxHeaderBytes = 16 << 10
)

// Backoff of an accept that failed for lack of descriptors or memory: a
// few milliseconds first (a burst of connections closing frees them at
// once), at most a second (the metrics wait that long, never longer).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// MetricsServer returns the HTTP server of the agent's metrics, serving h
// at /metrics with the timeouts above; its errors go to logf. Serve it
// on a listener from Listener.
func MetricsServer(h http.Handler, logf func(format string, args ...any)) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(logWriter(logf), "", 0),
	}
	srv.SetKeepAlivesEnabled(false)
	return srv
}

// logWriter turns a log function into the writer of a log.Logger.
type logWriter func(format string, args ...any)

func (w logWriter) Write(p []byte) (int, error) {
	if w != nil {
		w("metrics server: %s", trimNewline(p))
	}
	return len(p), nil
}

func trimNewline(p []byte) string {
	for len(p) > 0 && p[len(p)-1] == '\n' {
		p = p[:len(p)-1]
	}
	return string(p)
}

// Listener wraps the metrics listener ln: at most MaxConnections are open
// at once, and a connection beyond them is closed as soon as it is
// accepted (left in the kernel's backlog, a flood of them would keep a
// scraper waiting behind thousands); an accept that fails for lack of
// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) is retried with
// backoff, never returned: the HTTP server stops on an error it does not
// take for temporary, and a lack of descriptors says nothing about the
// target or the kernel. Both are logged to logf, a few lines at most.
func Listener(ln net.Listener, logf func(format string, args ...any)) net.Listener {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &limitListener{Listener: ln, log: logf, sem: make(chan struct{}, MaxConnections), done: make(chan struct{})}
}

// limitListener is Listener's listener.
type limitListener struct {
	net.Listener
	log       func(format string, args ...any)
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// failing is set while accepts fail, so that an episode is logged
	// once when it starts and once when it ends; shed counts the
	// connections turned away since shedLogged, when they were last
	// logged.
	mu         sync.Mutex
	failing    bool
	shed       int
	shedLogged time.Time
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			c.Close()
			l.shedOne()
		}
	}
}

// accept accepts the next connection, retrying with backoff while the
// process lacks descriptors or memory.
func (l *limitListener) accept() (net.Conn, error) {
	backoff := acceptBackoffMin
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			l.recovered()
			return c, nil
		}
		if !outOfResources(err) {
			return nil, err
		}
		l.failed(err)
		t := time.NewTimer(backoff)
		select {
		case <-l.done:
			t.Stop()
			return nil, net.ErrClosed
		case <-t.C:
		}
		backoff = min(2*backoff, acceptBackoffMax)
	}
}

// limitConn gives its slot back when it is closed, once.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// shedLogEvery spaces the lines about connections turned away: a flood
// turns thousands away a minute, in bursts as slots free up.
const shedLogEvery = time.Minute

func (l *limitListener) shedOne() {
	l.mu.Lock()
	l.shed++
	n, now := l.shed, time.Now()
	due := now.Sub(l.shedLogged) >= shedLogEvery
	if due {
		l.shed, l.shedLogged = 0, now
	}
	l.mu.Unlock()
	if due {
		l.log("%d metrics connections turned away: %d open, the most served at once (said at most once a minute)", n, MaxConnections)
	}
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *limitListener) failed(err error) {
	l.mu.Lock()
	first := !l.failing
	l.failing = true
	l.mu.Unlock()
	if first {
		open, limit := Descriptors()
		l.log("cannot accept metrics connections: %v (%s); retrying, recording goes on", err, describeDescriptors(open, limit))
	}
}

func (l *limitListener) recovered() {
	l.mu.Lock()
	was := l.failing
	l.failing = false
	l.mu.Unlock()
	if was {
		l.log("accepting metrics connections again")
	}
}

// outOfResources reports whether err is a lack of descriptors or kernel
// memory: transient conditions of this process or machine, not of the
// target or of the kernel's features.
func outOfResources(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// Descriptors returns how many descriptors this process has open and its
// limit (RLIMIT_NOFILE's soft value); open is -1 when it cannot be
// counted (counting opens /proc/self/fd, which fails when none is left).
func Descriptors() (open, limit int) {
	var rl unix.Rlimit
	limit = -1
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<31 {
		limit = int(rl.Cur)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, limit
	}
	return len(ents), limit
}

// descriptorReserve is how close to RLIMIT_NOFILE the descriptors open
// count as exhausted: a session opens tens at once (a probe family's
// maps and programs, a thread's /proc files), so fewer than 64 left is
// too few to start one.
const descriptorReserve = 64

// descriptorsExhausted reports whether this process is out of
// descriptors, or nearly: an error seen now may come from that rather
// than from what it says (cilium/ebpf reports a map it could not create
// for lack of descriptors as a kernel without the map's features).
func descriptorsExhausted() (bool, string) {
	open, limit := Descriptors()
	exhausted := open < 0 || (limit > 0 && open >= limit-descriptorReserve)
	return exhausted, describeDescriptors(open, limit)
}

func describeDescriptors(open, limit int) string {
	what := fmt.Sprintf("%d descriptors open", open)
	if open < 0 {
		what = "no descriptor left to count them"
	}
	if limit > 0 {
		what += fmt.Sprintf(", limit %d", limit)
	}
	return what
}
