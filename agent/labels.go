package agent

import "github.com/contend-dev/contend/analyzer"

// labelOther stands for every lock and program point past the top N of a
// process, so that a process contributes at most N+1 series per metric.
const labelOther = "other"

// labelUnknown is the point label of a lock whose waiters' program point
// the analysis could not name.
const labelUnknown = "unknown"

// lockKey returns the lock and point label values of a lock row: the
// lock's stable key (the same across restarts and load addresses; its
// name, then its address, only when the analysis gave none) and the key
// of the program point its waiters sit at. These are the one place where
// metric series are keyed by lock and program point.
func lockKey(l analyzer.LockRow) (lock, point string) {
	lock = l.Lock.Key
	if lock == "" {
		lock = l.Lock.Name
	}
	if lock == "" {
		lock = l.Lock.Address
	}
	if lock == "" {
		lock = labelUnknown
	}
	point = labelUnknown
	if l.Waiter != nil {
		point = pointKey(*l.Waiter)
	}
	return lock, point
}

// pointKey returns the point label value of a program point: its stable
// key ("module!function", module-relative for unnamed code), else its
// function in full (a short name can be ambiguous across packages).
func pointKey(p analyzer.ProgramPoint) string {
	if p.Key != "" {
		return p.Key
	}
	if p.Function == "" {
		return labelUnknown
	}
	return p.Function
}
