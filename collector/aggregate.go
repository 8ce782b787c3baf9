package collector

import "time"

// aggregates is the content of the kernel's aggregate maps over some
// interval: one drain period as read from the kernel (the maps hold one
// drain period, see ct_gen in bpf/helpers.bpf.h), or the sum of many.
type aggregates struct {
	waits  map[waitKey]aggVal
	locks  map[lockKey]lockVal
	wakes  map[wakeKey]wakeVal
	offcpu map[offcpuKey]offcpuVal
	edges  map[edgeKey]uint64
	oncpu  map[oncpuKey]oncpuVal
	io     map[ioKey]aggVal
	// gosync holds Go lock waits per (process, goroutine stack, kind):
	// keyed by no thread, so nothing of it is folded.
	gosync map[goSyncKey]aggVal
	// threads counts, for the entries that hold folded threads (thread id
	// foldedTID), how many exited threads each sums (see fold).
	threads foldedThreads
}

// foldedThreads counts the exited threads folded into each entry.
type foldedThreads struct {
	waits  map[waitKey]uint32
	wakes  map[wakeKey]uint32
	offcpu map[offcpuKey]uint32
	edges  map[edgeKey]uint32
	oncpu  map[oncpuKey]uint32
	io     map[ioKey]uint32
	// waiters counts, per lock, the distinct exited threads that waited
	// on it, and wakers those that woke it.
	waiters map[lockKey]uint32
	wakers  map[lockKey]uint32
}

func newAggregates() *aggregates {
	return &aggregates{
		waits:  map[waitKey]aggVal{},
		locks:  map[lockKey]lockVal{},
		wakes:  map[wakeKey]wakeVal{},
		offcpu: map[offcpuKey]offcpuVal{},
		edges:  map[edgeKey]uint64{},
		oncpu:  map[oncpuKey]oncpuVal{},
		io:     map[ioKey]aggVal{},
		gosync: map[goSyncKey]aggVal{},
		threads: foldedThreads{
			waits:   map[waitKey]uint32{},
			wakes:   map[wakeKey]uint32{},
			offcpu:  map[offcpuKey]uint32{},
			edges:   map[edgeKey]uint32{},
			oncpu:   map[oncpuKey]uint32{},
			io:      map[ioKey]uint32{},
			waiters: map[lockKey]uint32{},
			wakers:  map[lockKey]uint32{},
		},
	}
}

// entries counts the entries of every map: what the aggregates cost in
// memory, at a few tens of bytes each.
func (a *aggregates) entries() int {
	return len(a.waits) + len(a.locks) + len(a.wakes) + len(a.offcpu) + len(a.edges) + len(a.oncpu) + len(a.io) + len(a.gosync) +
		len(a.threads.waits) + len(a.threads.wakes) + len(a.threads.offcpu) + len(a.threads.edges) + len(a.threads.oncpu) + len(a.threads.io) +
		len(a.threads.waiters) + len(a.threads.wakers)
}

// add adds b into a.
func (a *aggregates) add(b *aggregates) {
	addMap(a.waits, b.waits, addAgg)
	addMap(a.locks, b.locks, addLock)
	addMap(a.wakes, b.wakes, addWake)
	addMap(a.offcpu, b.offcpu, addOffcpu)
	addMap(a.edges, b.edges, func(x, y uint64) uint64 { return x + y })
	addMap(a.oncpu, b.oncpu, addOncpu)
	addMap(a.io, b.io, addAgg)
	addMap(a.gosync, b.gosync, addAgg)
	a.threads.add(&b.threads)
}

func (t *foldedThreads) add(b *foldedThreads) {
	sum := func(x, y uint32) uint32 { return x + y }
	addMap(t.waits, b.waits, sum)
	addMap(t.wakes, b.wakes, sum)
	addMap(t.offcpu, b.offcpu, sum)
	addMap(t.edges, b.edges, sum)
	addMap(t.oncpu, b.oncpu, sum)
	addMap(t.io, b.io, sum)
	addMap(t.waiters, b.waiters, sum)
	addMap(t.wakers, b.wakers, sum)
}

// addMap adds every entry of src into dst.
func addMap[K comparable, V any](dst, src map[K]V, add func(a, b V) V) {
	for k, v := range src {
		if cur, ok := dst[k]; ok {
			dst[k] = add(cur, v)
		} else {
			dst[k] = v
		}
	}
}

func addAgg(a, b aggVal) aggVal {
	return aggVal{Count: a.Count + b.Count, TotalNS: a.TotalNS + b.TotalNS, MaxNS: max(a.MaxNS, b.MaxNS)}
}

func addLock(a, b lockVal) lockVal {
	a.Waits += b.Waits
	a.Blocked += b.Blocked
	a.Timeouts += b.Timeouts
	a.TotalNS += b.TotalNS
	a.RunqNS += b.RunqNS
	a.MaxNS = max(a.MaxNS, b.MaxNS)
	for i := range a.Hist {
		a.Hist[i] += b.Hist[i]
	}
	return a
}

func addWake(a, b wakeVal) wakeVal {
	return wakeVal{Wakes: a.Wakes + b.Wakes, Woken: a.Woken + b.Woken}
}

func addOffcpu(a, b offcpuVal) offcpuVal {
	return offcpuVal{Count: a.Count + b.Count, TotalNS: a.TotalNS + b.TotalNS, RunqNS: a.RunqNS + b.RunqNS}
}

func addOncpu(a, b oncpuVal) oncpuVal {
	return oncpuVal{Count: a.Count + b.Count, PeriodNS: a.PeriodNS + b.PeriodNS}
}

// foldedTID stands for the thread id of an entry that sums the data of
// exited threads (see fold). Thread ids stay below 2^22 (PID_MAX_LIMIT).
const foldedTID = ^uint32(0)

// threadKey names one thread of one process.
type threadKey struct{ pid, tid uint32 }

// fold moves the entries of the threads in gone into entries with the
// thread id foldedTID (an owner, waker or wakee in gone becomes foldedTID
// too), counting in a.threads how many threads each folded entry sums,
// and per lock how many distinct exited threads waited on it or woke it.
// Threads that live milliseconds would otherwise leave entries behind by
// the hundred thousand; folded, the aggregates grow with the program's
// locks and stacks, not with its thread count. It returns how many entries
// it removed.
func (a *aggregates) fold(gone map[threadKey]bool) int { return a.foldThreads(gone, true) }

// foldAgain is fold for the late entries of threads folded already (their
// last data, drained after their exit): each was counted among its locks'
// distinct waiters and wakers when it was first folded, and is not
// counted again (TestChurnNothingLost checks it).
func (a *aggregates) foldAgain(gone map[threadKey]bool) int { return a.foldThreads(gone, false) }

func (a *aggregates) foldThreads(gone map[threadKey]bool, count bool) int {
	if len(gone) == 0 {
		return 0
	}
	before := a.entries()
	isGone := func(pid, tid uint32) bool { return tid != foldedTID && tid != 0 && gone[threadKey{pid, tid}] }
	type lockThread struct {
		l lockKey
		t uint32
	}
	seenWaiter, seenWaker := map[lockThread]bool{}, map[lockThread]bool{}
	foldMap(a.waits, a.threads.waits, addAgg, func(k waitKey) (waitKey, bool, bool) {
		moved := false
		if isGone(k.PID, k.Owner) {
			k.Owner, moved = foldedTID, true
		}
		if !isGone(k.PID, k.TID) {
			return k, moved, false
		}
		lt := lockThread{lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared}, k.TID}
		if count && !seenWaiter[lt] {
			seenWaiter[lt] = true
			a.threads.waiters[lt.l]++
		}
		k.TID = foldedTID
		return k, true, true
	})
	foldMap(a.wakes, a.threads.wakes, addWake, func(k wakeKey) (wakeKey, bool, bool) {
		if !isGone(k.PID, k.TID) {
			return k, false, false
		}
		lt := lockThread{lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared}, k.TID}
		if count && !seenWaker[lt] {
			seenWaker[lt] = true
			a.threads.wakers[lt.l]++
		}
		k.TID = foldedTID
		return k, true, true
	})
	foldThread(a.offcpu, a.threads.offcpu, addOffcpu, isGone, func(k *offcpuKey) (uint32, *uint32) { return k.PID, &k.TID })
	foldMap(a.edges, a.threads.edges, func(x, y uint64) uint64 { return x + y }, func(k edgeKey) (edgeKey, bool, bool) {
		moved := false
		if isGone(k.WakerPID, k.Waker) {
			k.Waker, moved = foldedTID, true
		}
		if isGone(k.WakeePID, k.Wakee) {
			k.Wakee, moved = foldedTID, true
		}
		return k, moved, moved
	})
	foldThread(a.oncpu, a.threads.oncpu, addOncpu, isGone, func(k *oncpuKey) (uint32, *uint32) { return k.PID, &k.TID })
	foldThread(a.io, a.threads.io, addAgg, isGone, func(k *ioKey) (uint32, *uint32) { return k.PID, &k.TID })
	return max(before-a.entries(), 0)
}

// foldThread is foldMap for a map whose keys name one thread, which
// thread returns (its process, and where its id is in the key).
func foldThread[K comparable, V any](m map[K]V, threads map[K]uint32, add func(a, b V) V, gone func(pid, tid uint32) bool, thread func(*K) (uint32, *uint32)) {
	foldMap(m, threads, add, func(k K) (K, bool, bool) {
		pid, tid := thread(&k)
		if !gone(pid, *tid) {
			return k, false, false
		}
		*tid = foldedTID
		return k, true, true
	})
}

// eachThread calls fn with every thread (process, thread id) a key of a
// names, owners, wakers and wakees included.
func (a *aggregates) eachThread(fn func(pid, tid uint32)) {
	for k := range a.waits {
		fn(k.PID, k.TID)
		fn(k.PID, k.Owner)
	}
	for k := range a.wakes {
		fn(k.PID, k.TID)
	}
	for k := range a.offcpu {
		fn(k.PID, k.TID)
	}
	for k := range a.edges {
		fn(k.WakerPID, k.Waker)
		fn(k.WakeePID, k.Wakee)
	}
	for k := range a.oncpu {
		fn(k.PID, k.TID)
	}
	for k := range a.io {
		fn(k.PID, k.TID)
	}
}

// foldMap moves each entry of m that move maps to a new key onto that
// key, adding values with add. When move reports that the entry's thread
// was folded, the exited threads the entry already summed (at least the
// one) are added to the new key's count in threads.
func foldMap[K comparable, V any](m map[K]V, threads map[K]uint32, add func(a, b V) V, move func(K) (nk K, moved, thread bool)) {
	for k, v := range m {
		nk, moved, thread := move(k)
		if !moved {
			continue
		}
		delete(m, k)
		if cur, ok := m[nk]; ok {
			m[nk] = add(cur, v)
		} else {
			m[nk] = v
		}
		if n := threads[k]; n > 0 || thread {
			threads[nk] += max(n, 1)
			delete(threads, k)
		}
	}
}

// snapshot is what the views of one interval are built from: the
// aggregates of the interval, the kernel and collector counters at its end
// (cumulative since the start, or the difference over the interval), and
// the calls in progress at its end.
type snapshot struct {
	// at is the end of the interval since the start of the recording.
	at time.Duration
	*aggregates
	counters map[string]uint64
	open     []openCall
}

func newSnapshot() *snapshot {
	return &snapshot{aggregates: newAggregates(), counters: map[string]uint64{}}
}

// sat returns a-b, or 0 when a is below b.
func sat(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
