package collector

import "github.com/contend-dev/contend/recording"

// The kernel aggregates futex waits by (thread, futex word, stack id), and
// stack ids come from a frame-pointer walk. In code built without frame
// pointers (Debian's glibc) the walk can stop at the leaf, so every wait
// that ends in one glibc function — every pthread_cond_wait and
// pthread_cond_timedwait of a process — shares one stack id, whatever
// called it. The windows unwound in user space then disagree about the
// id (stackNamer counts the collision), and naming all its samples after
// the stack most windows show puts one caller's stack on every other.
// A JVM is the extreme case: every Java thread parks in
// pthread_cond_wait on its own park event, for a monitor, a
// java.util.concurrent lock, a sleep or an idle pool alike, and the VM's
// own threads wait there too.
//
// The event log links each window to the futex word its wait was on (a
// window and its wait event share thread and start time), so the waits
// of a colliding id are named per (thread, word) from the windows of that
// very thread and word. A word serves one purpose for most programs (one
// lock; for the JVM, one thread's monitor waits, or its parks, or its
// sleeps), which the thread's own windows show.

// wordKey is one aggregate of the futex-wait view.
type wordKey struct {
	tid   uint32
	addr  uint64
	stack uint64 // the stack's hash
}

// wordStacks names, per (thread, word, stack id), the futex waits of the
// stack ids whose windows disagree, from the windows taken for those
// threads' waits on those words; keys with no such window are absent.
func (r *resolver) wordStacks(each func(func(*rawEvent))) map[wordKey]recording.Stack {
	r.mu.Lock()
	defer r.mu.Unlock()
	votes := map[wordKey]map[string]*variant{}
	pids := map[wordKey]uint32{}
	each(func(e *rawEvent) {
		if e.Kind != kindWait || e.Stack == 0 {
			return
		}
		w := r.namer.ids[e.Stack]
		if w == nil || len(w.variants) < 2 {
			return
		}
		u, ok := r.eventPCs[evKey{e.TID, e.TS}]
		if !ok || len(u.pcs) == 0 {
			return
		}
		if fp, ok := r.rawStack(e.Stack); ok && len(fp.pcs) > 0 && fp.pcs[0] != u.pcs[0] {
			return
		}
		k := wordKey{e.TID, e.Addr, e.Stack}
		if votes[k] == nil {
			votes[k] = map[string]*variant{}
			pids[k] = e.PID
		}
		pk := pcsKey(u.pcs)
		v := votes[k][pk]
		if v == nil {
			v = &variant{pcs: u.pcs, complete: u.complete}
			votes[k][pk] = v
		}
		v.n++
	})
	out := make(map[wordKey]recording.Stack, len(votes))
	for k, vs := range votes {
		var best *variant
		for _, v := range vs {
			if best == nil || v.n > best.n || v.n == best.n && pcsKey(v.pcs) < pcsKey(best.pcs) {
				best = v
			}
		}
		st := r.symbolize(pids[k], best.pcs)
		st.Truncated = !best.complete
		out[k] = st
	}
	return out
}
