package collector

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// recorderNice is the nice value contend's threads take while recording.
//
// contend competes for CPU with its target, and a target in a convoy often
// has dozens of runnable threads: the scheduler then gives contend 1/N of a
// CPU, so attaching (about 0.3 CPU-seconds of BPF verification and symbol
// loading) stretches over many seconds, the 100 ms /proc samples arrive
// late and the ring buffer is drained late. At nice -10 a contend thread
// weighs about ten times a nice-0 target thread. contend's own CPU use stays
// around 5% of one CPU while recording, so the target loses little.
const recorderNice = -10

// raisePriority renices every thread of this process to recorderNice. On
// Linux the nice value is per thread and inherited by threads created
// later, so the Go runtime's future threads follow. It is best effort:
// without CAP_SYS_NICE the threads keep their priority.
func raisePriority() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		cur, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		// Getpriority returns 20 - nice; never lower a priority someone
		// already raised further.
		if err != nil || 20-cur <= recorderNice {
			continue
		}
		_ = unix.Setpriority(unix.PRIO_PROCESS, tid, recorderNice)
	}
}
