package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/contend-dev/contend/collector"
)

// targetFlags are the options that select the processes to watch, shared
// by record, top and agent: -p PID[,PID…] (repeatable), --comm NAME,
// --cgroup PATH.
type targetFlags struct {
	pids   []int
	comm   string
	cgroup string
	// jcmd is --jcmd: the jcmd to run against Java targets.
	jcmd string
}

// targetHelp describes the target options for a command's long help.
const targetHelp = `Choose the processes with one of:
  -p PID[,PID…]   the processes named (repeatable); one that does not exist
                  is an error, and one that exits while the others run is
                  noted with the time it left
  --comm NAME     every process named NAME (as in /proc/PID/comm, at most
                  15 bytes), including those started while watching
  --cgroup PATH   every process of a cgroup v2 directory and its
                  descendants, absolute or under the cgroup v2 mount
                  (system.slice/nginx.service), including those started
                  while watching`

// register adds the target options to f.
func (t *targetFlags) register(f *pflag.FlagSet) {
	f.IntSliceVarP(&t.pids, "pid", "p", nil, "processes to watch: -p PID[,PID…], repeatable")
	f.StringVar(&t.comm, "comm", "", "every process named `NAME`, including those started while watching")
	f.StringVar(&t.cgroup, "cgroup", "", "every process of a cgroup v2 directory `PATH` (e.g. system.slice/nginx.service)")
	f.StringVar(&t.jcmd, "jcmd", "", "Java targets: the JDK's jcmd `PATH` to run, as the JVM's user (default $JAVA_HOME/bin/jcmd, else jcmd on PATH; never one beside the target)")
}

// jcmdPath returns the jcmd that --jcmd names, checked, or "" to let the
// collector look for one; a usage error naming cmd when it is refused.
func (t *targetFlags) jcmdPath(cmd string) (string, error) {
	if t.jcmd == "" {
		return "", nil
	}
	p, err := collector.FindJcmd(t.jcmd)
	if err != nil {
		return "", usageErrorf("%s: --jcmd: %v", cmd, err)
	}
	return p, nil
}

// target returns the selection, or a usage error naming cmd.
func (t *targetFlags) target(cmd string) (collector.Target, error) {
	tg := collector.Target{PIDs: t.pids, Comm: t.comm, Cgroup: t.cgroup}
	if err := tg.Validate(); err != nil {
		return tg, usageErrorf("%s: %v", cmd, err)
	}
	return tg, nil
}

// targetLabel describes a target and the processes it has now for a
// progress line: "pid 42", "pids 42, 43 (1 left)", "processes named x (3)".
func targetLabel(t collector.Target, alive int) string {
	s := t.String()
	switch {
	case t.Follows():
		s += " (" + strconv.Itoa(alive) + " running)"
	case len(t.PIDs) > 1 && alive < len(t.PIDs):
		s += fmt.Sprintf(" (%d of %d running)", alive, len(t.PIDs))
	}
	return strings.TrimSpace(s)
}
