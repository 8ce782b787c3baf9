package collector

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
)

func testSource() *fakeStacks {
	// Stack 3: lock_inline is inlined into locker at the same address.
	s3 := []recording.Frame{
		{Func: "lock_inline", File: "l.h", Line: 4, Module: "app", Addr: 0x1010, Inlined: true},
		{Func: "locker", File: "l.c", Line: 9, Module: "app", Addr: 0x1010},
		{Func: "main", File: "m.c", Line: 2, Module: "app", Addr: 0x2020},
	}
	return &fakeStacks{
		user: map[uint64][]recording.Frame{
			33: s3,
			34: s3, // another hash naming the same frames (an ambiguous stack)
			35: frames("libc.so.6", "spin", "start_thread"),
		},
		kernel: map[uint64][]recording.Frame{
			39: {{Func: "do_syscall_64", Addr: 0xffffffff81000000, Kernel: true}},
		},
		locks:  map[uint64]string{0xabc: "big_lock (app)"},
		shared: map[uint64]*recording.SharedLock{0x5000: {Dev: "00:01", Inode: 77, Offset: 0x40, Path: "/dev/zero (deleted)"}},
	}
}

func allProbes() map[string]bool {
	return map[string]bool{ProbeFutex: true, ProbeSched: true, ProbeOnCPU: true, ProbeIO: true}
}

// sampleBy returns the samples of p whose leaf function is leaf.
func sampleBy(p *profile.Profile, leaf string) []*profile.Sample {
	var out []*profile.Sample
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == leaf {
			out = append(out, s)
		}
	}
	return out
}

func TestBuildViews(t *testing.T) {
	snap := newSnapshot()
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 11, Stack: 33, Owner: 12, Op: opWait}] = aggVal{Count: 2, TotalNS: 3000}
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 11, Stack: 34, Owner: 12, Op: opWait}] = aggVal{Count: 1, TotalNS: 1000}
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 13, Stack: stackNone, Op: opLockPI}] = aggVal{Count: 9, TotalNS: 90}
	snap.waits[waitKey{Addr: 0xdef, PID: 9, TID: 13, Stack: stackLost, Op: opFutexWait}] = aggVal{Count: 1, TotalNS: 20000}
	folded := waitKey{Addr: 0x5000, PID: 10, TID: foldedTID, Stack: 35, Owner: foldedTID, Op: opWait, Shared: 1}
	snap.waits[folded] = aggVal{Count: 40, TotalNS: 80000}
	snap.threads.waits[folded] = 17
	snap.wakes[wakeKey{Addr: 0xabc, PID: 9, TID: 12, Stack: 33}] = wakeVal{Wakes: 4, Woken: 4}
	snap.wakes[wakeKey{Addr: 0xabc, PID: 9, TID: 12, Stack: stackNone}] = wakeVal{Wakes: 6}
	snap.offcpu[offcpuKey{PID: 9, TID: 11, Stack: 33, State: 1}] = offcpuVal{Count: 3, TotalNS: 7000, RunqNS: 100}
	snap.edges[edgeKey{WakerPID: 9, Waker: 12, WakeePID: 9, Wakee: 11, Stack: 33}] = 4
	snap.edges[edgeKey{WakeePID: 9, Wakee: 11, Stack: stackNone, Ctx: 1}] = 2
	snap.oncpu[oncpuKey{PID: 9, TID: 14, UStack: 35, KStack: 39}] = oncpuVal{Count: 2, PeriodNS: 20202020}
	snap.oncpu[oncpuKey{PID: 9, TID: 14, UStack: 35, KStack: stackNone}] = oncpuVal{Count: 5, PeriodNS: 50505050}
	snap.io[ioKey{PID: 9, TID: 15, NR: 74, Stack: 33}] = aggVal{Count: 1, TotalNS: 400000}
	snap.io[ioKey{PID: 9, TID: 15, NR: 1, Stack: stackNone}] = aggVal{Count: 50, TotalNS: 5000}

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	views := buildViews(viewInput{snap: snap, stacks: testSource(), start: start, dur: 2 * time.Second, onCPUHz: 99, probes: allProbes(), exe: "app"})
	if len(views) != len(recording.LiveViews) {
		t.Fatalf("%d views, want %d", len(views), len(recording.LiveViews))
	}
	for v, p := range views {
		if err := p.CheckValid(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatalf("%s: write: %v", v, err)
		}
		back, err := profile.Parse(&buf)
		if err != nil {
			t.Fatalf("%s: parse: %v", v, err)
		}
		if len(back.Sample) != len(p.Sample) || back.Mapping[0].File != "app" {
			t.Errorf("%s: round trip %d samples (want %d), first mapping %q", v, len(back.Sample), len(p.Sample), back.Mapping[0].File)
		}
		if p.TimeNanos != start.UnixNano() || p.DurationNanos != int64(2*time.Second) {
			t.Errorf("%s: time %d duration %d", v, p.TimeNanos, p.DurationNanos)
		}
	}

	fw := views[recording.ViewFutexWait]
	if got := []string{fw.SampleType[0].Type, fw.SampleType[0].Unit, fw.SampleType[1].Type, fw.SampleType[1].Unit}; !cmp.Equal(got, []string{"waits", "count", "delay", "nanoseconds"}) {
		t.Errorf("futex-wait sample types %v", got)
	}
	// Stacks 33 and 34 name the same frames with the same labels: one sample.
	long := sampleBy(fw, "lock_inline")
	if len(long) != 1 || !cmp.Equal(long[0].Value, []int64{3, 4000}) {
		t.Fatalf("merged long waits: %v", long)
	}
	s := long[0]
	if len(s.Location) != 2 || len(s.Location[0].Line) != 2 || s.Location[0].Line[1].Function.Name != "locker" {
		t.Errorf("inlined frame not folded into its caller's location: %+v", s.Location[0])
	}
	wantStr := map[string][]string{"lock": {"0xabc"}, "lock_key": {"9:0xabc"}, "lock_name": {"big_lock (app)"}, "op": {"wait"}}
	wantNum := map[string][]int64{"pid": {9}, "tid": {11}, "owner": {12}}
	if !cmp.Equal(s.Label, wantStr) || !cmp.Equal(s.NumLabel, wantNum) {
		t.Errorf("labels %v %v, want %v %v", s.Label, s.NumLabel, wantStr, wantNum)
	}
	short := sampleBy(fw, frameShortWaits)
	if len(short) != 1 || short[0].NumLabel["owner"] != nil || short[0].Label["op"][0] != "lock_pi" {
		t.Errorf("short waits: %+v", short)
	}
	if lost := sampleBy(fw, frameStackLost); len(lost) != 1 || lost[0].Label["lock_name"] != nil {
		t.Errorf("lost-stack wait: %+v", lost)
	}
	// Seventeen exited threads folded onto one sample of a lock in
	// shared memory: no tid, the thread count, the shared identity.
	f := sampleBy(fw, "spin")
	if len(f) != 1 || f[0].NumLabel["tid"] != nil || f[0].NumLabel["owner"] != nil || f[0].NumLabel["threads"][0] != 17 || f[0].NumLabel["pid"][0] != 10 {
		t.Fatalf("folded sample: %+v", f)
	}
	if got := f[0].Label["lock_key"][0]; got != "shared:00:01:77:0x40" || f[0].Label["lock_name"][0] != "/dev/zero (deleted)+0x40" {
		t.Errorf("shared lock labels %v", f[0].Label)
	}

	if nobody := sampleBy(views[recording.ViewFutexWake], frameNoStack); len(nobody) != 1 || nobody[0].Value[0] != 6 {
		t.Errorf("wakes without a stack: %+v", nobody)
	}
	off := views[recording.ViewOffCPU]
	if len(off.SampleType) != 3 || off.SampleType[2].Type != "runqueue" || off.Sample[0].Label["state"][0] != "sleeping" || off.Sample[0].Value[2] != 100 {
		t.Errorf("offcpu: %v %+v", off.SampleType, off.Sample[0])
	}
	// go tool pprof opens the view on off-CPU time, not on its runqueue
	// part: the default survives the file.
	var buf bytes.Buffer
	if err := off.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if back, err := profile.Parse(&buf); err != nil {
		t.Error(err)
	} else if back.DefaultSampleType != "offcpu" {
		t.Errorf("offcpu default sample type after a round trip: %q, want offcpu", back.DefaultSampleType)
	}
	irq := sampleBy(views[recording.ViewWakes], "[hardirq]")
	if len(irq) != 1 || irq[0].NumLabel["tid"] != nil || irq[0].NumLabel["pid"] != nil || irq[0].Label["context"][0] != "hardirq" || irq[0].NumLabel["wakee"][0] != 11 || irq[0].NumLabel["wakee_pid"][0] != 9 {
		t.Errorf("interrupt wake edge: %+v", irq)
	}
	on := views[recording.ViewOnCPU]
	if on.Period != 10101010 || on.PeriodType.Type != "cpu" {
		t.Errorf("oncpu period %d %v", on.Period, on.PeriodType)
	}
	if k := sampleBy(on, "do_syscall_64"); len(k) != 1 || len(k[0].Location) != 3 || k[0].Location[1].Line[0].Function.Name != "spin" || k[0].Location[0].Mapping.File != "[kernel]" {
		t.Errorf("kernel+user sample: %+v", k)
	}
	io := views[recording.ViewIO]
	if fs := sampleBy(io, "lock_inline"); len(fs) != 1 || fs[0].Label["syscall"][0] != "fsync" {
		t.Errorf("fsync sample: %+v", fs)
	}
	if w := sampleBy(io, frameShortCalls); len(w) != 1 || w[0].Label["syscall"][0] != "write" || w[0].Value[0] != 50 {
		t.Errorf("short writes: %+v", w)
	}

	only := buildViews(viewInput{snap: snap, stacks: testSource(), probes: map[string]bool{ProbeSched: true}})
	if len(only) != 2 || only[recording.ViewOffCPU] == nil || only[recording.ViewWakes] == nil {
		t.Errorf("sched only: views %v", only)
	}
}

func TestBuildLocks(t *testing.T) {
	snap := newSnapshot()
	var hot lockVal
	hot.Waits, hot.Blocked, hot.TotalNS, hot.MaxNS = 5, 4, 9000, 5000
	hot.Hist[3], hot.Hist[12] = 4, 1
	lk := lockKey{Addr: 0xabc, PID: 9}
	snap.locks[lk] = hot
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 11, Stack: 33, Owner: 12}] = aggVal{Count: 3}
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 13, Stack: stackNone, Owner: 12}] = aggVal{Count: 1}
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 13, Stack: stackNone, Owner: 11}] = aggVal{Count: 1}
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 11, Stack: stackNone}] = aggVal{Count: 1}
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: foldedTID, Stack: stackNone, Owner: foldedTID}] = aggVal{Count: 1}
	snap.threads.waiters[lk] = 30
	snap.wakes[wakeKey{Addr: 0xabc, PID: 9, TID: 12, Stack: 33}] = wakeVal{Wakes: 3, Woken: 3}
	snap.wakes[wakeKey{Addr: 0x123, PID: 9, TID: 12}] = wakeVal{Wakes: 7} // wakes only
	// The same word of shared memory, waited on in two processes.
	snap.locks[lockKey{Addr: 0x5000, PID: 10, Shared: 1}] = lockVal{Waits: 1}
	snap.locks[lockKey{Addr: 0x7000, PID: 11, Shared: 1}] = lockVal{Waits: 1}
	src := testSource()
	src.shared[0x7000] = src.shared[0x5000]
	locks := buildLocks(snap, nil, src)
	want := []recording.LockStat{
		{
			Addr: 0xabc, PID: 9, Name: "big_lock (app)", Key: "9:0xabc", Waits: 5, Blocked: 4, WaitNS: 9000, MaxNS: 5000,
			Hist:  []uint64{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			Wakes: 3, Woken: 3,
			Waiters: []int{11, 13}, Wakers: []int{12}, WaitersSeen: 32, WakersSeen: 1,
			Owners: map[int]uint64{12: 4, 11: 1},
		},
		{Addr: 0x123, PID: 9, Key: "9:0x123", Wakes: 7, Hist: []uint64{}, Wakers: []int{12}, WakersSeen: 1},
		{Addr: 0x5000, PID: 10, Name: "/dev/zero (deleted)+0x40", Shared: src.shared[0x5000], Key: "shared:00:01:77:0x40", Waits: 1, Hist: []uint64{}},
		{Addr: 0x7000, PID: 11, Name: "/dev/zero (deleted)+0x40", Shared: src.shared[0x5000], Key: "shared:00:01:77:0x40", Waits: 1, Hist: []uint64{}},
	}
	if diff := cmp.Diff(want, locks); diff != "" {
		t.Errorf("locks (-want +got):\n%s", diff)
	}

	many := newSnapshot()
	many.locks[lockKey{Addr: 1, PID: 9}] = lockVal{Waits: maxLockThreads + 5}
	for tid := uint32(1); tid <= maxLockThreads+5; tid++ {
		many.waits[waitKey{Addr: 1, PID: 9, TID: tid}] = aggVal{Count: 1}
	}
	l := buildLocks(many, nil, testSource())[0]
	if len(l.Waiters) != maxLockThreads || !l.WaitersTruncated || l.Waiters[0] != 1 || l.WaitersSeen != maxLockThreads+5 {
		t.Errorf("%d waiters (%d seen), truncated %v", len(l.Waiters), l.WaitersSeen, l.WaitersTruncated)
	}
}

func TestInProgressViewsAndLocks(t *testing.T) {
	snap := newSnapshot()
	var hot lockVal
	hot.Waits, hot.Blocked, hot.TotalNS, hot.MaxNS = 2, 2, 3000, 2000
	hot.Hist[10] = 2
	snap.locks[lockKey{Addr: 0xabc, PID: 9}] = hot
	snap.waits[waitKey{Addr: 0xabc, PID: 9, TID: 11, Stack: 33, Owner: 12, Op: opWait}] = aggVal{Count: 2, TotalNS: 3000}
	open := []openSpan{
		// Thread 13 blocked on 0xabc behind 12 for 1.5s, thread 14 on a
		// lock with no finished wait at all, thread 15 in fsync.
		{openCall: openCall{pid: 9, tid: 13, addr: 0xabc, owner: 12, op: opWait}, dur: 1500000000},
		{openCall: openCall{pid: 9, tid: 14, addr: 0xfff, op: opLockPI, owner: 13}, dur: 1024},
		{openCall: openCall{pid: 9, tid: 15, io: true, nr: 74}, dur: 700000000},
	}
	views := buildViews(viewInput{snap: snap, open: open, stacks: testSource(), probes: allProbes(), exe: "app"})
	for v, p := range views {
		if err := p.CheckValid(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	fw := sampleBy(views[recording.ViewFutexWait], frameInProgress)
	if len(fw) != 2 {
		t.Fatalf("%d in-progress wait samples, want 2", len(fw))
	}
	byTID := map[int64]*profile.Sample{}
	for _, s := range fw {
		byTID[s.NumLabel[recording.LabelTID][0]] = s
		if len(s.Location) != 1 || s.NumLabel[recording.LabelInProgress][0] != 1 {
			t.Errorf("in-progress sample %+v: want one frame and in_progress=1", s)
		}
	}
	if s := byTID[13]; s == nil || !cmp.Equal(s.Value, []int64{1, 1500000000}) || s.Label["lock"][0] != "0xabc" || s.NumLabel["owner"][0] != 12 || s.Label["op"][0] != "wait" {
		t.Errorf("thread 13's wait: %+v", s)
	}
	if s := byTID[14]; s == nil || s.Label["op"][0] != "lock_pi" || s.Label["lock"][0] != "0xfff" {
		t.Errorf("thread 14's wait: %+v", s)
	}
	io := sampleBy(views[recording.ViewIO], frameInProgress)
	if len(io) != 1 || io[0].Label["syscall"][0] != "fsync" || io[0].Value[1] != 700000000 || io[0].NumLabel["tid"][0] != 15 {
		t.Errorf("in-progress fsync: %+v", io)
	}

	locks := buildLocks(snap, open, testSource())
	if len(locks) != 2 {
		t.Fatalf("%d locks, want 2: %+v", len(locks), locks)
	}
	l := locks[0]
	if l.Addr != 0xabc || l.Waits != 3 || l.Blocked != 3 || l.InProgress != 1 || l.WaitNS != 1500003000 || l.MaxNS != 1500000000 {
		t.Errorf("lock 0xabc: %+v", l)
	}
	var sum uint64
	for _, n := range l.Hist {
		sum += n
	}
	if sum != l.Waits || l.Hist[30] != 1 { // 2^30 ns <= 1.5 s < 2^31 ns
		t.Errorf("histogram %v: want %d waits, the open one in slot 30", l.Hist, l.Waits)
	}
	if !cmp.Equal(l.Waiters, []int{11, 13}) || l.Owners[12] != 3 {
		t.Errorf("waiters %v owners %v", l.Waiters, l.Owners)
	}
	if o := locks[1]; o.Addr != 0xfff || o.Waits != 1 || o.InProgress != 1 || o.Hist[10] != 1 || o.Owners[13] != 1 {
		t.Errorf("lock with only an open wait: %+v", o)
	}
	// The snapshot's own aggregates are left as they were.
	if snap.locks[lockKey{Addr: 0xabc, PID: 9}].Waits != 2 || len(snap.locks) != 1 {
		t.Errorf("buildLocks changed the snapshot: %+v", snap.locks)
	}
}

func TestClipOpen(t *testing.T) {
	calls := []openCall{{tid: 1, ts: 100}, {tid: 2, ts: 500}, {tid: 3, ts: 1200}}
	got := clipOpen(calls, 300, 1000)
	want := []openSpan{{openCall: calls[0], dur: 700}, {openCall: calls[1], dur: 500}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(openSpan{}, openCall{})); diff != "" {
		t.Errorf("clipOpen (-want +got):\n%s", diff)
	}
	start := callStart{TS: 10, Addr: 0xabc, Owner: 8, Op: opWait, NR: nrFutex, Shared: 1, Stack: stackLost}
	if got := openFromStart(7<<32|9, start); got != (openCall{pid: 7, tid: 9, ts: 10, nr: nrFutex, addr: 0xabc, owner: 8, op: opWait, shared: true}) || got.start() != start {
		t.Errorf("openFromStart = %+v", got)
	}
	io := callStart{TS: 20, NR: 74, IP: 1, SP: 2, BP: 3, Stack: stackLost}
	if got := openFromStart(7<<32|9, io); got != (openCall{pid: 7, tid: 9, ts: 20, io: true, nr: 74, ip: 1, sp: 2, bp: 3}) || got.start() != io {
		t.Errorf("openFromStart of an I/O call = %+v", got)
	}
}

// Samples with the same labels share one pair of label maps, and samples
// with other labels have maps of their own with their own values.
func TestProfileBuilderSharesLabels(t *testing.T) {
	b := newProfileBuilder("app", [][2]string{{"waits", "count"}}, time.Unix(0, 0), time.Second)
	l := func(tid int64, lock string) sampleLabels {
		return sampleLabels{str: map[string]string{recording.LabelLock: lock}, num: map[string]int64{recording.LabelTID: tid}}
	}
	b.add(syntheticFrame("a"), []int64{1}, l(11, "0xabc"))
	b.add(syntheticFrame("b"), []int64{2}, l(11, "0xabc"))
	b.add(syntheticFrame("b"), []int64{4}, l(12, "0xabc"))
	b.add(syntheticFrame("b"), []int64{8}, l(11, "0xdef"))
	b.add(syntheticFrame("a"), []int64{16}, l(11, "0xabc")) // merged into the first
	p := b.build()
	if len(p.Sample) != 4 || p.Sample[0].Value[0] != 17 {
		t.Fatalf("%d samples, first %v; want 4, the first 17", len(p.Sample), p.Sample[0].Value)
	}
	same := func(i, j int) bool {
		return reflect.ValueOf(p.Sample[i].Label).UnsafePointer() == reflect.ValueOf(p.Sample[j].Label).UnsafePointer() &&
			reflect.ValueOf(p.Sample[i].NumLabel).UnsafePointer() == reflect.ValueOf(p.Sample[j].NumLabel).UnsafePointer()
	}
	if !same(0, 1) {
		t.Error("two samples of tid 11 on lock 0xabc have label maps of their own, want one pair shared")
	}
	if same(0, 2) || same(0, 3) || same(2, 3) {
		t.Error("samples with other labels share label maps")
	}
	for i, want := range []struct {
		tid  int64
		lock string
	}{{11, "0xabc"}, {11, "0xabc"}, {12, "0xabc"}, {11, "0xdef"}} {
		s := p.Sample[i]
		if s.NumLabel[recording.LabelTID][0] != want.tid || s.Label[recording.LabelLock][0] != want.lock {
			t.Errorf("sample %d labels %v %v, want tid %d lock %s", i, s.Label, s.NumLabel, want.tid, want.lock)
		}
	}
}
