package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/internal/testbin"
	"github.com/contend-dev/contend/recording"
)

// helperNoFile is the descriptor limit of the serve helper: far fewer
// than the connections the test opens, so that a listener without a
// bound runs out.
const helperNoFile = 128

// helperTimeout stands for the server's header and idle timeouts in the
// serve helper, so that the test's idle connections are dropped in a
// fraction of a second rather than in the real 5 and 20 seconds.
const helperTimeout = 150 * time.Millisecond

// serveMetricsHelper lowers RLIMIT_NOFILE to helperNoFile, serves
// MetricsServer on Listener at 127.0.0.1 and prints its address. Its
// /metrics answers "open N limit M peak P": the descriptors open while it
// answers and the most connections it ever held at once. It exits 3 if
// the server stops.
func serveMetricsHelper() int {
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: helperNoFile, Max: helperNoFile}); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 2
	}
	var held, peak atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Opening a file here is what a window does all the time: it
		// shows that descriptors are left for the recording.
		f, err := os.Open("/proc/self/stat")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f.Close()
		open, limit := Descriptors()
		fmt.Fprintf(w, "open %d limit %d peak %d\n", open, limit, peak.Load())
	})
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	srv := MetricsServer(h, logf)
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout = helperTimeout, helperTimeout, helperTimeout
	fmt.Printf("addr=%s\n", ln.Addr())
	err = srv.Serve(&countingListener{Listener: Listener(ln, logf), held: &held, peak: &peak})
	fmt.Fprintln(os.Stderr, "serve:", err)
	return 3
}

// countingListener counts the connections Listener hands out and not yet
// closed, and the most at once: a connection leaves the count before its
// Close gives its slot back, so the count never runs ahead of the
// slots (the server's ConnState hooks run after the close, and would).
type countingListener struct {
	net.Listener
	held, peak *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.held.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countingConn{Conn: c, held: l.held}, nil
}

type countingConn struct {
	net.Conn
	once sync.Once
	held *atomic.Int64
}

func (c *countingConn) Close() error {
	c.once.Do(func() { c.held.Add(-1) })
	return c.Conn.Close()
}

// lockedBuffer is a buffer a child process writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Issue 33 row 11: 20,000 idle connections to the agent's port took every
// descriptor the agent had; it decided its target was gone, and exited
// saying the kernel lacked a feature. Rebuilt at a smaller scale: a server
// limited to 128 descriptors gets 400 connections, half of them idle from
// the start, half idle after one request. It holds at most
// MaxConnections at once and closes the rest at once, never runs out of
// descriptors (no failed accept), still opens files, serves a fresh
// client once the idle ones time out, and keeps running.
func TestMetricsServerSurvivesIdleFlood(t *testing.T) {
	const flood = 400
	cmd := testbin.HelperCmd("serve")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr=")
	if err != nil || !ok {
		t.Fatalf("helper said %q (%v); stderr %s", line, err, stderr.String())
	}

	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		idle = append(idle, c)
		if i%2 == 1 {
			// A whole request, then nothing: the connection is kept
			// alive and idle once answered.
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		}
	}

	// The connections past MaxConnections were closed as accepted; the
	// fresh client is served once the idle ones time out, or turned
	// away while they hold every slot, and tries again, as a scraper
	// does at its next scrape.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	var resp *http.Response
	for {
		resp, err = client.Get("http://" + addr + "/metrics")
		if err == nil || time.Since(start) > 20*time.Second {
			break
		}
		time.Sleep(helperTimeout / 4)
	}
	if err != nil {
		t.Fatalf("fresh client after %s: %v; stderr %s", time.Since(start), err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fresh client: %s: %s", resp.Status, body)
	}
	var open, limit, peak int
	if _, err := fmt.Sscanf(string(body), "open %d limit %d peak %d", &open, &limit, &peak); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	t.Logf("served after %s: %d descriptors open of %d, at most %d connections at once", time.Since(start).Round(time.Millisecond), open, limit, peak)
	if peak > MaxConnections {
		t.Errorf("%d connections held at once, want at most %d", peak, MaxConnections)
	}
	if limit != helperNoFile || open >= limit-MaxConnections {
		t.Errorf("%d descriptors open of %d: too few left", open, limit)
	}
	if strings.Contains(stderr.String(), "cannot accept") {
		t.Errorf("the server ran out of descriptors:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "turned away") {
		t.Errorf("no connection turned away, none logged:\n%s", stderr.String())
	}
	select {
	case err := <-exited:
		t.Fatalf("the server stopped: %v\n%s", err, stderr.String())
	default:
	}
}

// flakyListener fails its first fails accepts with err, then hands out
// one end of a pipe per accept.
type flakyListener struct {
	mu     sync.Mutex
	fails  int
	err    error
	closed chan struct{}
	once   sync.Once
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
	}
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", l.err)}
	}
	c, _ := net.Pipe()
	return c, nil
}

func (l *flakyListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *flakyListener) Addr() net.Addr { return &net.TCPAddr{} }

// An accept that fails for lack of descriptors is retried, said once when
// it starts and once when it ends, and never reaches the server (which
// would stop on it); any other failure does reach it.
func TestListenerRetriesOutOfDescriptors(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	ln := Listener(&flakyListener{fails: 5, err: syscall.EMFILE, closed: make(chan struct{})}, logf)
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	c.Close()
	mu.Lock()
	if len(lines) != 2 || !strings.Contains(lines[0], "cannot accept metrics connections") || !strings.Contains(lines[0], "too many open files") || !strings.Contains(lines[1], "again") {
		t.Errorf("logged %q, want one line when accepts fail and one when they work again", lines)
	}
	mu.Unlock()

	// Closed while backing off: the accept ends at once.
	ln = Listener(&flakyListener{fails: 1 << 30, err: syscall.ENFILE, closed: make(chan struct{})}, nil)
	done := make(chan error, 1)
	go func() { _, err := ln.Accept(); done <- err }()
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("accept after close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("accept still backing off 10 s after the listener closed")
	}

	ln = Listener(&flakyListener{fails: 1, err: syscall.EINVAL, closed: make(chan struct{})}, nil)
	if _, err := ln.Accept(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("accept: %v, want EINVAL returned", err)
	}
}

// A session that fails with a kernel error once the probes were attached
// (cilium/ebpf says "not supported" of a map it could not create for lack
// of descriptors) ends no agent: the window fails, the error is logged,
// and the next session starts.
func TestKernelErrorAfterAttachNotFatal(t *testing.T) {
	sl := startSleeper(t)
	pid := sl.Process.Pid
	rec := asWindow(readLive(t, "c-stripe-bad"), pid, "sleep", false)
	var starts int
	f := &fakeSessions{recs: []*recording.Recording{rec}, n: 1000, endAfter: 1}
	f.startFn = func(collector.Options) error {
		starts++
		switch starts {
		case 2:
			return fmt.Errorf("load io probes: %w: map create: read- and write-only maps not supported", collector.ErrKernel)
		case 3:
			f.cancel()
		}
		return nil
	}
	var logged []string
	o := Options{Target: collector.Target{PIDs: []int{pid}}, Log: func(format string, args ...any) {
		logged = append(logged, fmt.Sprintf(format, args...))
	}}
	runFake(t, o, f)
	if starts != 3 {
		t.Errorf("%d sessions started, want 3 (the second failing)", starts)
	}
	if !strings.Contains(strings.Join(logged, "\n"), "cannot record") {
		t.Errorf("the failed session was not logged: %q", logged)
	}
}

// The first session failing with a kernel error while the agent is out
// of descriptors ends the agent with ErrDescriptors, not with the kernel
// error: the kernel is not the cause.
func TestKernelErrorOutOfDescriptors(t *testing.T) {
	sl := startSleeper(t)
	f := &fakeSessions{startFn: func(collector.Options) error {
		return fmt.Errorf("load io probes: %w: map create: read- and write-only maps not supported", collector.ErrKernel)
	}}
	a := newFake(t, Options{Target: collector.Target{PIDs: []int{sl.Process.Pid}}}, f)
	// Fewer descriptors left than descriptorReserve, though not none, so
	// that the test itself can go on.
	lowerNoFile(t, descriptorReserve/2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.Run(ctx)
	if !errors.Is(err, ErrDescriptors) || errors.Is(err, collector.ErrKernel) {
		t.Errorf("Run: %v, want ErrDescriptors and not ErrKernel", err)
	}
}

// A -p process whose /proc files cannot be opened for lack of
// descriptors is not taken for gone.
func TestResolverOutOfDescriptors(t *testing.T) {
	sl := startSleeper(t)
	pid := sl.Process.Pid
	r, err := newResolver(collector.Target{PIDs: []int{pid}}, "")
	if err != nil {
		t.Fatal(err)
	}
	lowerNoFile(t, 0)
	tg, ok, err := r.session()
	restoreNoFile(t)
	if !ok || len(tg.PIDs) != 1 || !errors.Is(err, syscall.EMFILE) {
		t.Errorf("session: %v %v %v, want pid %d kept and EMFILE", tg, ok, err, pid)
	}
}

var savedNoFile unix.Rlimit

// lowerNoFile sets this process's RLIMIT_NOFILE soft limit so that
// spare descriptors are left, until restoreNoFile or the test's end. The
// limit bounds descriptor numbers, and a new descriptor takes the lowest
// free one: the limit is that number plus spare.
func lowerNoFile(t *testing.T, spare int) {
	t.Helper()
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &savedNoFile); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	lim := uint64(fd + spare)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim, Max: savedNoFile.Max}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restoreNoFile(t) })
}

func restoreNoFile(t *testing.T) {
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &savedNoFile); err != nil {
		t.Error(err)
	}
}
