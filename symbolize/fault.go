package symbolize

import "runtime/debug"

// guarded runs f and reports whether it hit a memory fault. Object files
// are memory-mapped: should one be truncated while mapped (a file rewritten
// in place rather than replaced), reading it raises SIGBUS; with the guard
// that becomes a failed lookup instead of a crash. Other panics pass
// through.
func guarded(f func()) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); ok {
				faulted = true
				return
			}
			panic(r)
		}
	}()
	f()
	return false
}
