package collector

import (
	"cmp"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
)

// stackSource names the stacks and lock addresses the kernel recorded
// (the resolver; a fake in unit tests). The stacks it returns may be
// shared: callers copy before they change one.
type stackSource interface {
	userStack(hash uint64) recording.Stack
	kernelStack(hash uint64) recording.Stack
	eventStack(pid, tid uint32, ts uint64, hash uint64) recording.Stack
	// openStack returns the stack of a call still in progress, unwound
	// from a copy taken while it was; false when there is none.
	openStack(pid, tid uint32, ts uint64) (recording.Stack, bool)
	lock(k lockKey) lockInfo
}

// Frames standing for data recorded without a stack. They are the only
// frames of their samples and appear in pprof as such.
const (
	frameShortWaits  = "[short waits]"   // futex waits below the stack threshold
	frameShortCalls  = "[short calls]"   // I/O calls below the I/O threshold
	frameStackLost   = "[stack lost]"    // the kernel could not record the stack
	frameNoStack     = "[stack unknown]" // a stack whose frames were not kept
	frameSpilled     = "[stack not kept: map full]"
	frameOtherWaker  = "[other process]" // a wakeup by a task outside the target
	frameNotInTarget = "[no user stack]" // a wakeup without a waking task
	frameInProgress  = "[in progress]"   // a wait or I/O call not ended whose stack could not be copied
)

// maxLockThreads bounds LockStat.Waiters and Wakers: 256 distinct threads
// already say "everyone"; longer lists only bloat locks.json.
const maxLockThreads = 256

// lockLabelFormat formats recording.LabelLock.
const lockLabelFormat = "0x%x"

// viewInput is what the views of one interval are built from.
type viewInput struct {
	snap *snapshot
	// open holds the waits and I/O calls in progress at the end of the
	// interval, with their time inside it.
	open    []openSpan
	stacks  stackSource
	start   time.Time
	dur     time.Duration
	onCPUHz int
	// probes lists the families attached; views of the others are not
	// produced.
	probes map[string]bool
	// exe is the base name of the target's executable: its mapping comes
	// first in every profile, which is what pprof names the profile by.
	exe string
	// words names the futex waits of colliding stack ids per thread and
	// word (wordstacks.go); nil names every wait after its stack id.
	words map[wordKey]recording.Stack
	// goSync is set when the Go lock probes are attached to a process:
	// the go-lockwaits view is built, empty when no goroutine waited.
	goSync bool
	// goCover is how much of the interval the Go lock probes were
	// attached for: less than dur once they were taken off.
	goCover time.Duration
}

// userFrames returns the frames of user stack hash, or a synthetic frame:
// none names what a stack-less sample stands for.
func userFrames(src stackSource, hash uint64, none string) []recording.Frame {
	switch hash {
	case stackNone:
		return syntheticFrame(none)
	case stackSpilled:
		return syntheticFrame(frameSpilled)
	case stackLost:
		return syntheticFrame(frameStackLost)
	}
	st := src.userStack(hash)
	if len(st.Frames) == 0 {
		return syntheticFrame(frameNoStack)
	}
	return st.Frames
}

// openFrames returns the frames of a call in progress: its unwound
// stack, or "[in progress]" when none could be taken.
func openFrames(src stackSource, o openSpan) []recording.Frame {
	if st, ok := src.openStack(o.pid, o.tid, o.ts); ok && len(st.Frames) > 0 {
		return st.Frames
	}
	return syntheticFrame(frameInProgress)
}

// threadLabels returns the labels of a sample of thread tid of process
// pid: pid and tid, or for folded exited threads (tid foldedTID) pid and
// the number of threads folded.
func threadLabels(pid, tid, folded uint32) sampleLabels {
	l := sampleLabels{str: map[string]string{}, num: map[string]int64{recording.LabelPID: int64(pid)}}
	if tid == foldedTID {
		l.num[recording.LabelThreads] = int64(max(folded, 1))
	} else {
		l.num[recording.LabelTID] = int64(tid)
	}
	return l
}

// lockLabels adds the labels of lock k to l.
func lockLabels(src stackSource, l sampleLabels, k lockKey) sampleLabels {
	li := src.lock(k)
	l.str[recording.LabelLock] = fmt.Sprintf(lockLabelFormat, k.Addr)
	l.str[recording.LabelLockKey] = recording.LockKey(int(k.PID), k.Addr, li.shared)
	if n := li.display(); n != "" {
		l.str[recording.LabelLockName] = n
	}
	return l
}

// buildViews builds the pprof view of every attached family. Sample types
// and labels follow the contract in recording/recording.go.
func buildViews(in viewInput) map[recording.View]*profile.Profile {
	out := map[recording.View]*profile.Profile{}
	if in.probes[ProbeFutex] {
		out[recording.ViewFutexWait] = futexWaitView(in)
		out[recording.ViewFutexWake] = futexWakeView(in)
	}
	if in.probes[ProbeSched] {
		out[recording.ViewOffCPU] = offCPUView(in)
		out[recording.ViewWakes] = wakesView(in)
	}
	if in.probes[ProbeOnCPU] {
		out[recording.ViewOnCPU] = onCPUView(in)
	}
	if in.probes[ProbeIO] {
		out[recording.ViewIO] = ioView(in)
	}
	if in.goSync {
		out[recording.ViewGoLockWaits] = goLockWaitsView(in)
	}
	return out
}

// futexWaitView builds the futex-wait view: the ended waits per thread,
// lock, operation, owner and stack, then each futex wait still in
// progress at the end of the interval as one wait of its time in it.
func futexWaitView(in viewInput) *profile.Profile {
	s, src := in.snap, in.stacks
	b := newProfileBuilder(in.exe, [][2]string{{"waits", "count"}, {"delay", "nanoseconds"}}, in.start, in.dur)
	for _, k := range sortedKeysBy(s.waits, compareWaitKey) {
		v := s.waits[k]
		l := lockLabels(src, threadLabels(k.PID, k.TID, s.threads.waits[k]), lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared})
		l.str[recording.LabelOp] = opName(k.Op)
		if k.Owner != 0 && k.Owner != foldedTID {
			l.num[recording.LabelOwner] = int64(k.Owner)
		}
		fr := userFrames(src, k.Stack, frameShortWaits)
		if st, ok := in.words[wordKey{k.TID, k.Addr, k.Stack}]; ok && len(st.Frames) > 0 {
			fr = st.Frames
		}
		b.add(fr, []int64{int64(v.Count), int64(v.TotalNS)}, l)
	}
	for _, o := range in.open {
		if o.io {
			continue
		}
		l := lockLabels(src, threadLabels(o.pid, o.tid, 0), o.lockKey())
		l.str[recording.LabelOp] = opName(o.op)
		l.num[recording.LabelInProgress] = 1
		if o.owner != 0 {
			l.num[recording.LabelOwner] = int64(o.owner)
		}
		b.add(openFrames(src, o), []int64{1, int64(o.dur)}, l)
	}
	return b.build()
}

// futexWakeView builds the futex-wake view: wake calls and threads woken
// per waking thread, lock and stack.
func futexWakeView(in viewInput) *profile.Profile {
	s, src := in.snap, in.stacks
	b := newProfileBuilder(in.exe, [][2]string{{"wakes", "count"}, {"woken", "count"}}, in.start, in.dur)
	for _, k := range sortedKeysBy(s.wakes, compareWakeKey) {
		v := s.wakes[k]
		l := lockLabels(src, threadLabels(k.PID, k.TID, s.threads.wakes[k]), lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared})
		// Every wake the probes see woke a thread and carries
		// its stack (or stackLost); an entry without one has
		// no frames to show.
		b.add(userFrames(src, k.Stack, frameNoStack), []int64{int64(v.Wakes), int64(v.Woken)}, l)
	}
	return b.build()
}

// offCPUView builds the off-CPU view per thread, state and stack. It
// carries a third value, runqueue/nanoseconds, the part of the off-CPU
// time spent runnable waiting for a CPU.
func offCPUView(in viewInput) *profile.Profile {
	s := in.snap
	b := newProfileBuilder(in.exe, [][2]string{{"switches", "count"}, {"offcpu", "nanoseconds"}, {"runqueue", "nanoseconds"}}, in.start, in.dur)
	for _, k := range sortedKeysBy(s.offcpu, compareOffcpuKey) {
		v := s.offcpu[k]
		l := threadLabels(k.PID, k.TID, s.threads.offcpu[k])
		l.str[recording.LabelState] = stateName(k.State)
		b.add(userFrames(in.stacks, k.Stack, frameStackLost), []int64{int64(v.Count), int64(v.TotalNS), int64(v.RunqNS)}, l)
	}
	off := b.build()
	// pprof shows the last sample type unless told otherwise; the
	// view is about time off CPU, of which runqueue is one part.
	off.DefaultSampleType = "offcpu"
	return off
}

// wakesView builds the wakes view: the wakeups of target threads per
// waker, wakee, context and waker stack. A wakeup from outside the
// target, or from no task, stands under a synthetic frame saying so.
func wakesView(in viewInput) *profile.Profile {
	s := in.snap
	b := newProfileBuilder(in.exe, [][2]string{{"wakes", "count"}}, in.start, in.dur)
	for _, k := range sortedKeysBy(s.edges, compareEdgeKey) {
		l := sampleLabels{
			str: map[string]string{recording.LabelContext: contextName(k.Ctx)},
			num: map[string]int64{recording.LabelWakeePID: int64(k.WakeePID)},
		}
		if k.Wakee != foldedTID {
			l.num[recording.LabelWakee] = int64(k.Wakee)
		}
		if k.Waker == foldedTID || k.Wakee == foldedTID {
			l.num[recording.LabelThreads] = int64(max(s.threads.edges[k], 1))
		}
		none := frameNotInTarget
		if k.Waker != 0 {
			l.num[recording.LabelPID] = int64(k.WakerPID)
			if k.Waker != foldedTID {
				l.num[recording.LabelTID] = int64(k.Waker)
			}
			none = frameOtherWaker
		}
		if k.Ctx != 0 {
			none = "[" + contextName(k.Ctx) + "]"
		}
		b.add(userFrames(in.stacks, k.Stack, none), []int64{int64(s.edges[k])}, l)
	}
	return b.build()
}

// onCPUView builds the on-CPU view per thread and stack, the kernel
// frames above the user ones, with the sampling period of in.onCPUHz.
func onCPUView(in viewInput) *profile.Profile {
	s, src := in.snap, in.stacks
	b := newProfileBuilder(in.exe, [][2]string{{"samples", "count"}, {"cpu", "nanoseconds"}}, in.start, in.dur)
	b.p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	if in.onCPUHz > 0 {
		b.p.Period = int64(time.Second) / int64(in.onCPUHz)
	}
	for _, k := range sortedKeysBy(s.oncpu, compareOncpuKey) {
		v := s.oncpu[k]
		var frames []recording.Frame
		switch {
		case k.KStack >= stackFirst:
			frames = append(frames, src.kernelStack(k.KStack).Frames...)
		case k.KStack == stackLost:
			frames = append(frames, recording.Frame{Func: frameStackLost, Kernel: true})
		}
		frames = append(frames, userFrames(src, k.UStack, frameStackLost)...)
		b.add(frames, []int64{int64(v.Count), int64(v.PeriodNS)}, threadLabels(k.PID, k.TID, s.threads.oncpu[k]))
	}
	return b.build()
}

// ioView builds the I/O view: the ended calls per thread, syscall and
// stack, then each I/O call still in progress at the end of the interval
// as one call of its time in it.
func ioView(in viewInput) *profile.Profile {
	s, src := in.snap, in.stacks
	b := newProfileBuilder(in.exe, [][2]string{{"calls", "count"}, {"latency", "nanoseconds"}}, in.start, in.dur)
	for _, k := range sortedKeysBy(s.io, compareIOKey) {
		v := s.io[k]
		l := threadLabels(k.PID, k.TID, s.threads.io[k])
		l.str[recording.LabelSyscall] = syscallName(k.NR)
		b.add(userFrames(src, k.Stack, frameShortCalls), []int64{int64(v.Count), int64(v.TotalNS)}, l)
	}
	for _, o := range in.open {
		if !o.io {
			continue
		}
		l := threadLabels(o.pid, o.tid, 0)
		l.str[recording.LabelSyscall] = syscallName(o.nr)
		l.num[recording.LabelInProgress] = 1
		b.add(openFrames(src, o), []int64{1, int64(o.dur)}, l)
	}
	return b.build()
}

// goLockWaitsView builds the go-lockwaits view: the Go lock waits per
// process and waiter stack, with the value names of the runtime's block
// profile, whose meaning they share.
func goLockWaitsView(in viewInput) *profile.Profile {
	b := newProfileBuilder(in.exe, [][2]string{{"contentions", "count"}, {"delay", "nanoseconds"}}, in.start, in.dur)
	for _, k := range sortedKeysBy(in.snap.gosync, compareGoSyncKey) {
		v := in.snap.gosync[k]
		l := sampleLabels{str: map[string]string{recording.LabelLock: fmt.Sprintf(lockLabelFormat, k.Addr)}, num: map[string]int64{recording.LabelPID: int64(k.PID)}}
		b.add(userFrames(in.stacks, k.Stack, frameStackLost), []int64{int64(v.Count), int64(v.TotalNS)}, l)
	}
	p := b.build()
	p.DefaultSampleType = "delay"
	if in.goCover > 0 && in.goCover < in.dur {
		p.DurationNanos = int64(in.goCover)
	}
	return p
}

// lockKey returns the lock of an open futex wait.
func (c openCall) lockKey() lockKey {
	k := lockKey{Addr: c.addr, PID: c.pid}
	if c.shared {
		k.Shared = 1
	}
	return k
}

// buildLocks turns the per-lock aggregates, and the per-thread ones for
// waiter, waker and owner lists, into lock statistics, most wait time
// first. The futex waits in open, still in progress at the end of the
// interval, count as waits that blocked for their time in it.
func buildLocks(s *snapshot, open []openSpan, src stackSource) []recording.LockStat {
	waiters, owners := waitThreads(s.waits)
	wakers, wakes := wakeThreads(s.wakes)
	locks := maps.Clone(s.locks)
	for lk := range wakes {
		if _, ok := locks[lk]; !ok {
			locks[lk] = lockVal{}
		}
	}
	inProgress := addOpenWaits(locks, open, waiters, owners)
	out := make([]recording.LockStat, 0, len(locks))
	for lk, v := range locks {
		li := src.lock(lk)
		ls := recording.LockStat{
			Addr:       lk.Addr,
			PID:        int(lk.PID),
			Name:       li.display(),
			Shared:     li.shared,
			Key:        recording.LockKey(int(lk.PID), lk.Addr, li.shared),
			Waits:      v.Waits,
			Blocked:    v.Blocked,
			Timeouts:   v.Timeouts,
			WaitNS:     v.TotalNS,
			RunqNS:     v.RunqNS,
			MaxNS:      v.MaxNS,
			Wakes:      wakes[lk].Wakes,
			Woken:      wakes[lk].Woken,
			Owners:     owners[lk],
			InProgress: inProgress[lk],
		}
		top := 0
		for i, n := range v.Hist {
			if n > 0 {
				top = i + 1
			}
		}
		ls.Hist = append([]uint64{}, v.Hist[:top]...)
		ls.Waiters, ls.WaitersTruncated = tidList(waiters[lk])
		ls.Wakers, _ = tidList(wakers[lk])
		ls.WaitersSeen = len(waiters[lk]) + int(s.threads.waiters[lk])
		ls.WakersSeen = len(wakers[lk]) + int(s.threads.wakers[lk])
		out = append(out, ls)
	}
	sortLockStats(out)
	return out
}

// waitThreads returns, per lock of waits, the live threads that waited on
// it and, per owner the waiters named, how many waits it caused. Folded
// exited threads are left out of both: they have no tid to list.
func waitThreads(waits map[waitKey]aggVal) (waiters map[lockKey]map[int]bool, owners map[lockKey]map[int]uint64) {
	waiters = map[lockKey]map[int]bool{}
	owners = map[lockKey]map[int]uint64{}
	for k, v := range waits {
		lk := lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared}
		if k.TID != foldedTID {
			addTID(waiters, lk, int(k.TID))
		}
		if k.Owner != 0 && k.Owner != foldedTID {
			addOwner(owners, lk, int(k.Owner), v.Count)
		}
	}
	return waiters, owners
}

// wakeThreads returns, per lock of wakes, the live threads that woke it
// and the sum of its wakes over every waker and stack.
func wakeThreads(wakes map[wakeKey]wakeVal) (wakers map[lockKey]map[int]bool, perLock map[lockKey]wakeVal) {
	wakers = map[lockKey]map[int]bool{}
	perLock = map[lockKey]wakeVal{}
	for k, v := range wakes {
		lk := lockKey{Addr: k.Addr, PID: k.PID, Shared: k.Shared}
		if k.TID != foldedTID {
			addTID(wakers, lk, int(k.TID))
		}
		perLock[lk] = addWake(perLock[lk], v)
	}
	return wakers, perLock
}

// addOpenWaits counts each futex wait in open into locks as a wait that
// blocked for its time in the interval, and its thread and owner into
// waiters and owners. It returns how many waits per lock are still in
// progress.
func addOpenWaits(locks map[lockKey]lockVal, open []openSpan, waiters map[lockKey]map[int]bool, owners map[lockKey]map[int]uint64) map[lockKey]uint64 {
	inProgress := map[lockKey]uint64{}
	for _, o := range open {
		if o.io {
			continue
		}
		lk := o.lockKey()
		v := locks[lk]
		v.Waits++
		v.Blocked++
		v.TotalNS += o.dur
		v.MaxNS = max(v.MaxNS, o.dur)
		v.Hist[min(log2(o.dur), histSlots-1)]++
		locks[lk] = v
		inProgress[lk]++
		addTID(waiters, lk, int(o.tid))
		if o.owner != 0 {
			addOwner(owners, lk, int(o.owner), 1)
		}
	}
	return inProgress
}

// sortLockStats orders locks by wait time, most first, then by process
// and address so that equal times come out the same on every run.
func sortLockStats(locks []recording.LockStat) {
	sort.Slice(locks, func(i, j int) bool {
		if locks[i].WaitNS != locks[j].WaitNS {
			return locks[i].WaitNS > locks[j].WaitNS
		}
		if locks[i].PID != locks[j].PID {
			return locks[i].PID < locks[j].PID
		}
		return locks[i].Addr < locks[j].Addr
	})
}

// log2 returns floor(log2(v)), 0 for v <= 1: the histogram slot of a
// wait, as ct_log2 computes it in the kernel.
func log2(v uint64) int {
	if v <= 1 {
		return 0
	}
	return bits.Len64(v) - 1
}

func addTID(m map[lockKey]map[int]bool, k lockKey, tid int) {
	if m[k] == nil {
		m[k] = map[int]bool{}
	}
	m[k][tid] = true
}

// addOwner adds n waits caused by owner tid to lock k in m.
func addOwner(m map[lockKey]map[int]uint64, k lockKey, tid int, n uint64) {
	if m[k] == nil {
		m[k] = map[int]uint64{}
	}
	m[k][tid] += n
}

// tidList returns the sorted tids of set, at most maxLockThreads, and
// whether more were left out.
func tidList(set map[int]bool) ([]int, bool) {
	if len(set) == 0 {
		return nil, false
	}
	tids := make([]int, 0, len(set))
	for t := range set {
		tids = append(tids, t)
	}
	sort.Ints(tids)
	if len(tids) > maxLockThreads {
		return tids[:maxLockThreads], true
	}
	return tids, false
}

// Orders of map keys, so that profiles come out the same for the same data.

func sortedKeysBy[K comparable, V any](m map[K]V, compare func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}

func compareWaitKey(a, b waitKey) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Addr, b.Addr), cmp.Compare(a.TID, b.TID), cmp.Compare(a.Stack, b.Stack), cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Shared, b.Shared))
}

func compareWakeKey(a, b wakeKey) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Addr, b.Addr), cmp.Compare(a.TID, b.TID), cmp.Compare(a.Stack, b.Stack), cmp.Compare(a.Shared, b.Shared))
}

func compareOffcpuKey(a, b offcpuKey) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), cmp.Compare(a.State, b.State), cmp.Compare(a.Stack, b.Stack))
}

func compareEdgeKey(a, b edgeKey) int {
	return cmp.Or(cmp.Compare(a.WakeePID, b.WakeePID), cmp.Compare(a.Wakee, b.Wakee), cmp.Compare(a.WakerPID, b.WakerPID), cmp.Compare(a.Waker, b.Waker), cmp.Compare(a.Ctx, b.Ctx), cmp.Compare(a.Stack, b.Stack))
}

func compareOncpuKey(a, b oncpuKey) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), cmp.Compare(a.UStack, b.UStack), cmp.Compare(a.KStack, b.KStack))
}

func compareGoSyncKey(a, b goSyncKey) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Stack, b.Stack), cmp.Compare(a.Addr, b.Addr))
}

func compareIOKey(a, b ioKey) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), cmp.Compare(a.NR, b.NR), cmp.Compare(a.Stack, b.Stack))
}
