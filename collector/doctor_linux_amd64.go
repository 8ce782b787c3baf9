package collector

import "github.com/contend-dev/contend/collector/probes"

// doctorFamilies lists the compiled probe objects in display order. Keep
// it in step with collector/probes: one entry per generated Load function.
var doctorFamilies = []doctorFamily{
	{"syscalls", "futex waits and wakes per lock and stack, I/O syscall durations", probes.LoadSyscalls},
	{"sched", "off-CPU time by state, wake edges", probes.LoadSched},
	{"oncpu", "on-CPU samples (perf cpu-clock)", probes.LoadOncpu},
}
