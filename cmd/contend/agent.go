package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/agent"
	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/internal/termsafe"
)

func init() { subcommands = append(subcommands, newAgentCmd) }

// agentOptions are the options of `contend agent`.
type agentOptions struct {
	targets        targetFlags
	window         time.Duration
	listen         string
	pyroscope      string
	pyroscopeApp   string
	topN           int
	stackThreshold time.Duration
	ioThreshold    time.Duration
	hz             int
	pprofURL       string
	verbose        bool
}

// defaultListen keeps the metrics on the loopback interface unless asked:
// they name the processes on the machine and their code.
const defaultListen = "127.0.0.1:9464"

// agentMemoryLimit is the soft limit of the agent's Go heap (GOMEMLIMIT,
// when set, overrides it). Its live heap is about 40 MB between windows
// (the session's symbol tables, event log and history) and peaks near
// 80 MB while a window is built and analyzed; settleMemory collects after
// each window and raises the limit when the live heap
// needs it, so the floor can sit under the peak without the collector
// running through every window. Measured: docs/cost.md (make bench-agent).
const agentMemoryLimit = 64 << 20

// shutdownGrace bounds how long a scrape in flight may take to finish once
// the agent stops.
const shutdownGrace = 2 * time.Second

func newAgentCmd() *cobra.Command {
	var o agentOptions
	c := &cobra.Command{
		Use:   "agent (-p PID[,PID…] | --comm NAME | --cgroup PATH)",
		Short: "Record continuously and serve contention metrics to Prometheus",
		Long: `agent records its target processes continuously, in rolling windows
(--window, at most ` + agent.MaxWindow.String() + `), analyzes each window as 'contend record' would,
and serves the results as Prometheus metrics at http://ADDR/metrics
(--listen), every process under its own pid label:

  contend_lock_wait_seconds_total{comm,pid,lock,point}  time waited per lock
  contend_lock_waits_total{comm,pid,lock,point}         waits per lock
  contend_finding{comm,pid,kind,point}                  1 while the latest window has the finding
  contend_threads{comm,pid,state}                       threads by /proc state
  contend_events_lost_total{reason}                     what the probes lost

with the usual process and Go metrics. The top --top locks of each process
have their own series; the rest add up under lock="other". With
--pyroscope each window's futex-wait, off-CPU and on-CPU profiles are
pushed to Pyroscope; an unreachable server is retried with backoff while
recording goes on.

` + targetHelp + `

The probes stay attached from one window to the next (one collector
session for the target), and processes that join a --comm or --cgroup
target are recorded at once. When every process of the target is gone the
probes are detached and the agent watches for it: with --comm or --cgroup
the next process of the target (a restarted service) is recorded as soon
as it is seen; a pid given with -p is recorded only while it is the
process it was. The agent stops on SIGTERM or Ctrl-C with every probe
detached. It needs root, or CAP_BPF and CAP_PERFMON.`,
		Example: `  contend agent -p $(pgrep -n myserver)
  contend agent --comm myserver --listen :9464 --window 10s
  contend agent --cgroup system.slice/nginx.service
  contend agent --comm myserver --pyroscope http://pyroscope:4040`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runAgent(c.Context(), o, c.ErrOrStderr())
		},
	}
	f := c.Flags()
	o.targets.register(f)
	f.DurationVar(&o.window, "window", agent.DefaultWindow, "length of each recording window")
	f.StringVar(&o.listen, "listen", defaultListen, "address to serve /metrics on (:9464 for every interface)")
	f.StringVar(&o.pyroscope, "pyroscope", "", "push each window's profiles to this Pyroscope server, e.g. http://pyroscope:4040")
	f.StringVar(&o.pyroscopeApp, "pyroscope-app", "", "service_name of the pushed profiles (default: the target's command name)")
	f.IntVar(&o.topN, "top", agent.DefaultTopN, "locks and program points per process with their own metric series")
	f.DurationVar(&o.stackThreshold, "stack-threshold", collector.DefaultStackThreshold, "futex waits at least this long carry a stack")
	f.DurationVar(&o.ioThreshold, "io-threshold", collector.DefaultIOThreshold, "I/O syscalls at least this long carry a stack")
	f.IntVar(&o.hz, "hz", collector.DefaultOnCPUHz, "on-CPU sampling frequency per CPU")
	f.StringVar(&o.pprofURL, "pprof", "", "a Go target's net/http/pprof base URL, e.g. http://127.0.0.1:6060")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log a line per window")
	return c
}

// check refuses option values the agent cannot use, as usage errors.
func (o agentOptions) check() error {
	switch {
	case o.window < agent.MinWindow || o.window > agent.MaxWindow:
		return usageErrorf("agent: --window must be between %s and %s", agent.MinWindow, agent.MaxWindow)
	case o.topN <= 0:
		return usageErrorf("agent: --top must be positive")
	case o.stackThreshold <= 0 || o.ioThreshold <= 0:
		return usageErrorf("agent: --stack-threshold and --io-threshold must be positive")
	case o.hz <= 0 || o.hz > collector.MaxOnCPUHz:
		return usageErrorf("agent: --hz must be between 1 and %d", collector.MaxOnCPUHz)
	}
	if o.pyroscope != "" {
		if err := agent.CheckPyroscopeURL(o.pyroscope); err != nil {
			return usageErrorf("agent: %v", err)
		}
	}
	return nil
}

// runAgent checks the options, binds the metrics address and runs the
// agent until ctx is done.
func runAgent(ctx context.Context, o agentOptions, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	target, err := o.targets.target("agent")
	if err != nil {
		return err
	}
	jcmd, err := o.targets.jcmdPath("agent")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return usageErrorf("agent: --listen %s: address already in use", o.listen)
	}
	if err != nil {
		return usageErrorf("agent: --listen %s: %v", o.listen, err)
	}
	defer ln.Close()
	if err := collector.CheckProbePrivileges(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	logf := func(format string, args ...any) {
		// Lines name targets by their process names: escaped.
		fmt.Fprintln(stderr, "contend agent: "+termsafe.String(fmt.Sprintf(format, args...)))
	}
	limitMemory(agentMemoryLimit)
	a, err := agent.New(agent.Options{
		Target: target,
		Window: o.window,
		Record: collector.Options{
			StackThreshold: o.stackThreshold,
			IOThreshold:    o.ioThreshold,
			OnCPUHz:        o.hz,
			PprofURL:       o.pprofURL,
			GoFetchCommand: fetchChildCommand(),
			Jcmd:           jcmd,
		},
		TopN:        o.topN,
		Pyroscope:   agent.PyroscopeOptions{URL: o.pyroscope, App: o.pyroscopeApp},
		Log:         logf,
		AfterWindow: settleMemory(agentMemoryLimit),
		Verbose:     o.verbose,
	})
	if err != nil {
		return usageErrorf("agent: %v", err)
	}
	// At most agent.MaxConnections at once, each with timeouts, and an
	// accept that fails for lack of descriptors retried, not fatal: a
	// flood of connections must not take the descriptors the probes
	// need, nor end the agent.
	srv := agent.MetricsServer(promhttp.HandlerFor(a.Metrics().Registry(), promhttp.HandlerOpts{}), logf)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(agent.Listener(ln, logf)) }()
	logf("serving metrics on http://%s/metrics, windows of %s, watching %s", ln.Addr(), o.window, target)

	runErr := a.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("agent: serve metrics: %w", err)
	}
	if runErr != nil {
		return fmt.Errorf("agent: %w", runErr)
	}
	logf("stopped; every probe detached")
	return nil
}
