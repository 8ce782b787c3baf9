package core

// How a holder in I/O was found, for the evidence.
const (
	HolderInSection  = "inside the critical section"
	HolderByReceiver = "it waits for no lock and runs a method of the very object whose lock the others wait for"
	HolderByType     = "it waits for no lock and runs a method of the type whose methods wait for the lock"
)

// minIOSleeps is how many I/O calls the probes must see sleep inside a
// contended critical section for the lock to be held across I/O: as for
// the CPU samples, three mean the I/O runs under the lock again and
// again, not once at start-up. A count of calls, not a time or a share,
// so it holds at any number of goroutines and threads.
const MinIOSleeps = 3

// maxLockRows bounds the locks table: locks come heaviest first, a table
// longer than a few screens is not read, and in a profile with more locks
// than this the rest each hold a sliver of the waiting.
const MaxLockRows = 200

// The Go points detector fills the rows that need no verdict: program
// points where goroutines sit (with their states, wait and CPU), idle
// groups (waits that are not contention), the target's population, and
// notes about what the input lacks.

// pointRowShare is the share of all waiting or of all CPU a point without
// dumped goroutines must hold to get a row: the rows are for the TUI to
// show where time goes, and points under 1% of it are noise there.
const PointRowShare = 0.01

// chainMinShare is the share of a lock's logged waiting that a holder's
// own wait must explain to be named as a link of the chain: the same
// quarter that makes I/O under a lock worth a change of design
// (ioMinExplained); a holder that now and then waits briefly for another
// lock explains a few percent.
const ChainMinShare = IoMinExplained

// minLoggedWaits is how many logged waits the quantiles need to come from
// the event log: with fewer, p99 is the maximum of a handful, so the
// in-kernel histogram (every wait, log2 buckets) answers instead.
const MinLoggedWaits = 20
