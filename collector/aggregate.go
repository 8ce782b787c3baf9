package collector

import "time"

// snapshot is the cumulative content of the kernel's aggregate maps and
// counters at one instant. The maps are never cleared in the kernel
// (deleting entries would race with programs updating them), so the data
// of an interval is the difference of two snapshots.
type snapshot struct {
	// at is the time of the snapshot since the start of the recording.
	at time.Duration

	waits  map[waitKey]aggVal
	locks  map[uint64]lockVal
	wakes  map[wakeKey]wakeVal
	offcpu map[offcpuKey]offcpuVal
	edges  map[edgeKey]uint64
	oncpu  map[oncpuKey]oncpuVal
	io     map[ioKey]aggVal
	// counters holds the kernel counters (summed over CPUs) and the
	// collector's own, by name.
	counters map[string]uint64
	// open lists the futex waits and I/O calls in progress at the
	// snapshot. They are a state, not a cumulative count: an interval's
	// are those of its end.
	open []openCall
}

func newSnapshot() *snapshot {
	return &snapshot{
		waits:    map[waitKey]aggVal{},
		locks:    map[uint64]lockVal{},
		wakes:    map[wakeKey]wakeVal{},
		offcpu:   map[offcpuKey]offcpuVal{},
		edges:    map[edgeKey]uint64{},
		oncpu:    map[oncpuKey]oncpuVal{},
		io:       map[ioKey]aggVal{},
		counters: map[string]uint64{},
	}
}

// minus returns the data of the interval (base, s]: s minus base, keeping
// entries that changed. A nil base means the start of the recording.
func (s *snapshot) minus(base *snapshot) *snapshot {
	if base == nil {
		return s
	}
	d := &snapshot{
		at:     s.at - base.at,
		waits:  subMap(s.waits, base.waits, subAgg),
		locks:  subMap(s.locks, base.locks, subLock),
		wakes:  subMap(s.wakes, base.wakes, subWake),
		offcpu: subMap(s.offcpu, base.offcpu, subOffcpu),
		edges: subMap(s.edges, base.edges, func(a, b uint64) (uint64, bool) {
			return a - b, a > b
		}),
		oncpu:    subMap(s.oncpu, base.oncpu, subOncpu),
		io:       subMap(s.io, base.io, subAgg),
		counters: map[string]uint64{},
		open:     s.open,
	}
	for k, v := range s.counters {
		d.counters[k] = sat(v, base.counters[k])
	}
	return d
}

// subMap returns cur minus base entry by entry; sub reports whether the
// difference is worth keeping (something happened in the interval).
func subMap[K comparable, V any](cur, base map[K]V, sub func(a, b V) (V, bool)) map[K]V {
	out := make(map[K]V)
	for k, v := range cur {
		b, ok := base[k]
		if !ok {
			out[k] = v
			continue
		}
		if d, keep := sub(v, b); keep {
			out[k] = d
		}
	}
	return out
}

// sat returns a-b, or 0 when a torn read left a below b.
func sat(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// intervalMax is the maximum of an interval given the cumulative maxima at
// its ends: a maximum that rose happened inside the interval; one that did
// not rise is only an upper bound, which bound (if non-zero) tightens.
func intervalMax(cur, base, bound uint64) uint64 {
	if cur > base {
		return cur
	}
	if bound > 0 && bound < cur {
		return bound
	}
	return cur
}

func subAgg(a, b aggVal) (aggVal, bool) {
	d := aggVal{Count: sat(a.Count, b.Count), TotalNS: sat(a.TotalNS, b.TotalNS)}
	d.MaxNS = intervalMax(a.MaxNS, b.MaxNS, d.TotalNS)
	return d, d.Count > 0
}

func subWake(a, b wakeVal) (wakeVal, bool) {
	d := wakeVal{Wakes: sat(a.Wakes, b.Wakes), Woken: sat(a.Woken, b.Woken)}
	return d, d.Wakes > 0
}

func subOffcpu(a, b offcpuVal) (offcpuVal, bool) {
	d := offcpuVal{Count: sat(a.Count, b.Count), TotalNS: sat(a.TotalNS, b.TotalNS), RunqNS: sat(a.RunqNS, b.RunqNS)}
	return d, d.Count > 0
}

func subOncpu(a, b oncpuVal) (oncpuVal, bool) {
	d := oncpuVal{Count: sat(a.Count, b.Count), PeriodNS: sat(a.PeriodNS, b.PeriodNS)}
	return d, d.Count > 0
}

func subLock(a, b lockVal) (lockVal, bool) {
	d := lockVal{
		Waits:    sat(a.Waits, b.Waits),
		Blocked:  sat(a.Blocked, b.Blocked),
		Timeouts: sat(a.Timeouts, b.Timeouts),
		TotalNS:  sat(a.TotalNS, b.TotalNS),
		Wakes:    sat(a.Wakes, b.Wakes),
		Woken:    sat(a.Woken, b.Woken),
	}
	top := -1
	for i := range d.Hist {
		d.Hist[i] = sat(a.Hist[i], b.Hist[i])
		if d.Hist[i] > 0 {
			top = i
		}
	}
	// The highest non-empty slot bounds the interval's longest wait.
	var bound uint64
	if top >= 0 && top < 63 {
		bound = uint64(1)<<(top+1) - 1
	}
	d.MaxNS = intervalMax(a.MaxNS, b.MaxNS, bound)
	if d.Waits == 0 {
		d.MaxNS = 0
	}
	return d, d.Waits > 0 || d.Wakes > 0
}
