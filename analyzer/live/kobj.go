package live

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/internal/units"
	"github.com/contend-dev/contend/recording"
)

// Locks the kernel holds, and locks whose waiters poll. Both are read
// from the event log's sleep and tryfail events (recording.EventSleep,
// EventTryFail), never from the futex views: a thread asleep in flock(2),
// in a page fault behind another thread's mmap, in write(2) behind
// another writer of the file or behind a full pipe, queues on a lock no
// futex word shows; a thread that fails fcntl(F_SETLK) and sleeps before
// trying again queues on a lock while looking idle.
//
// A kernel object's sleeps are one lock when they are on one object (the
// kernel frames and the call's file say which) and threads of the target
// end them: the holder's release wakes the next waiter. The holder is the
// waker; what it did between its own acquisition and that wake decides
// between I/O under the lock (judged by core.JudgeLock like a futex
// lock's) and a lock the kernel holds (KindKernelObjectLock).

// kobjKind is the kind of object a sleep in the kernel waits for.
type kobjKind uint8

const (
	kobjNone   kobjKind = iota
	kobjFlock           // flock(2)
	kobjRecord          // an fcntl record lock (POSIX or OFD)
	kobjInode           // a file's inode lock, taken by writes
	kobjMmap            // the process's mmap lock
	kobjPipe            // a pipe or socket whose reader is slower than its writers
)

// Thresholds of the kernel-object and polled locks. Each is a share or a
// count of events, never a rate per thread, so that they hold from 2 to
// 64 threads per CPU.
const (
	// kobjMinWaiters: a lock needs two threads that want it; one thread
	// asleep on a file is that thread's I/O, not a queue.
	kobjMinWaiters = 2
	// kobjMinWokenShare is the share of an object's sleeps that threads of
	// the target must end for the object to be a lock: every release
	// wakes the next waiter, so a lock's sleeps end by its users' wakes;
	// sleeps ended by interrupts and timers (a disk's completion, a
	// timeout) are waits for a device. Half leaves room for wakes from
	// outside the target (another process holding the file).
	kobjMinWokenShare = 0.5
	// polledMinFailures is the least number of logged failed attempts at
	// one point that make a polled lock: a retry loop that fails this
	// often in one recording is waiting for a holder, not meeting one
	// by chance. The same count as core.MinLoggedWaits, the least number
	// of logged waits a shape is read from.
	polledMinFailures = core.MinLoggedWaits
)

// Kernel functions that place a sleep. The names are the kernel's own
// (6.x); a kernel that renames one loses that classification, not the
// others.
var (
	// flockFrames and recordFrames wait for a file lock.
	fileLockFrames = []string{"locks_lock_inode_wait", "flock_lock_inode_wait", "posix_lock_inode_wait", "fcntl_setlk", "do_lock_file_wait", "__do_sys_flock"}
	// rwsemFrames are the sleeping side of a kernel rwsem or mutex.
	rwsemFrames = []string{"rwsem_down_read_slowpath", "rwsem_down_write_slowpath", "down_write", "down_read", "down_write_killable", "down_read_killable", "__mutex_lock", "mutex_lock", "__vma_start_write"}
	// mmapFrames take or wait for the mmap lock: page faults and mapping
	// changes.
	mmapFrames = []string{"lock_mm_and_find_vma", "do_user_addr_fault", "exc_page_fault", "__vm_munmap", "do_mprotect_pkey", "vm_mmap_pgoff", "do_madvise", "__do_sys_brk", "__do_sys_mremap", "mprotect_fixup", "mmap_read_lock_killable", "mmap_write_lock_killable", "do_vmi_munmap"}
	// pipeFrames wait for room in a pipe or a socket's send buffer.
	pipeFrames = []string{"pipe_write", "anon_pipe_write", "pipe_wait_writable", "sk_stream_wait_memory", "sock_alloc_send_pskb", "unix_stream_sendmsg", "sock_wait_for_wmem"}
)

// writeCalls are the system calls whose sleep on a file's rwsem is its
// inode lock, and whose sleep on a pipe is a full pipe.
var writeCalls = map[string]bool{
	"write": true, "pwrite64": true, "writev": true, "pwritev": true, "pwritev2": true,
	"sendmsg": true, "sendto": true, "sendmmsg": true, "splice": true,
}

// sleepCalls are the calls a polling loop sleeps in between tries.
var sleepCalls = map[string]bool{
	"nanosleep": true, "clock_nanosleep": true, "select": true, "pselect6": true,
	"poll": true, "ppoll": true, "sched_yield": true,
}

// kernelFuncs returns the names of the leading kernel frames of a stack.
func kernelFuncs(fr []recording.Frame) []string {
	var out []string
	for _, f := range fr {
		if !f.Kernel {
			break
		}
		out = append(out, f.Func)
	}
	return out
}

// firstOf returns the first of names (leaf first) that is in set, "".
func firstOf(names, set []string) string {
	for _, n := range names {
		if slices.Contains(set, n) {
			return n
		}
	}
	return ""
}

// classifySleep says which object a sleep waits for, and the kernel frame
// that shows it.
func classifySleep(e *recording.Event, kf []string) (kobjKind, string) {
	o := e.Obj
	switch {
	case e.Syscall == "flock":
		return kobjFlock, firstOf(kf, fileLockFrames)
	case strings.HasPrefix(e.Syscall, "fcntl") && o != nil && o.Range != nil:
		return kobjRecord, firstOf(kf, fileLockFrames)
	}
	if m := firstOf(kf, mmapFrames); m != "" {
		if r := firstOf(kf, rwsemFrames); r != "" {
			return kobjMmap, r
		}
	}
	if p := firstOf(kf, pipeFrames); p != "" && writeCalls[e.Syscall] {
		return kobjPipe, p
	}
	if o != nil && (strings.HasPrefix(o.Path, "pipe:") || strings.HasPrefix(o.Path, "socket:")) {
		return kobjNone, ""
	}
	if r := firstOf(kf, rwsemFrames); r != "" && writeCalls[e.Syscall] && o.Key() != "" {
		return kobjInode, r
	}
	return kobjNone, ""
}

// fileName names a call's file: its path, else its device and inode.
func fileName(o *recording.Object) string {
	if o == nil {
		return "an unknown file"
	}
	if o.Path != "" {
		return o.Path
	}
	return fmt.Sprintf("dev %s inode %d", o.Dev, o.Inode)
}

// rangeName words a record lock's range: "bytes 0–4095".
func rangeName(r *recording.LockRange) string {
	if r == nil {
		return ""
	}
	if r.Len == 0 {
		return fmt.Sprintf("bytes %d to the end", r.Start)
	}
	return fmt.Sprintf("bytes %d–%d", r.Start, r.Start+r.Len-1)
}

// fileGroup groups a file's lock sleeps by device and inode (and range),
// whether or not the path was read: a process that exits before its fd is
// read leaves only the inode, and its sleeps are on the same lock as the
// others'. "" for the objects that are not a file's lock.
func fileGroup(kind kobjKind, o *recording.Object) string {
	k := o.Key()
	if k == "" {
		return ""
	}
	switch kind {
	case kobjFlock:
		return "flock " + k
	case kobjRecord:
		return fmt.Sprintf("record-lock %s %d+%d", k, o.Range.Start, o.Range.Len)
	case kobjInode:
		return "inode-lock " + k
	}
	return ""
}

// kobjLock is one kernel object its sleepers queue on.
type kobjLock struct {
	kind  kobjKind
	key   string // core.LockID.Key
	name  string // what is locked, for headlines and evidence
	group string // the grouping key (the key, and the process for per-process objects)
	frame string // the kernel frame the waiters sleep in
	// named is -1 while the file is known only by device and inode.
	named  int
	call   string // the waiters' system call, "" for a page fault
	sleeps []*recording.Event
	// waiters counts the sleeps of each thread; woken those a thread of
	// the target ended; holders the wakes each thread made.
	waiters map[int]int
	woken   int
	holders map[int]int
	waitNS  int64
	// points sums the waiting by program point; frames keeps a stack of
	// each.
	points map[core.PointKey]int64
	frames map[core.PointKey][]recording.Frame
	pis    map[core.PointKey]int
}

// userPart returns the user frames of an event's stack and the index of
// its program point in them (-1 when none).
func userPart(fr []recording.Frame) ([]recording.Frame, int) {
	i := 0
	for i < len(fr) && fr[i].Kernel {
		i++
	}
	u := fr[i:]
	return u, callerOfWrapper(u, livePointIndex(u))
}

// callerOfWrapper moves a point off the C library's system-call wrappers
// (flock, fcntl, write, usleep) to the program's function that called
// them: the program point is the caller of the call that slept or failed,
// unless only a thread's entry lies above.
func callerOfWrapper(fr []recording.Frame, pi int) int {
	for pi >= 0 && pi+1 < len(fr) && isLibc(fr[pi]) && !threadEntryFuncs[core.NormNative(fr[pi+1].Func)] {
		pi++
	}
	return pi
}

// isLibc reports whether f is in the C library.
func isLibc(f recording.Frame) bool {
	return strings.HasPrefix(f.Module, "libc.so") || strings.HasPrefix(f.Module, "libc-") || strings.HasPrefix(f.Module, "libpthread")
}

// stackOf returns an event's frames, nil when it has none.
func (ld *Data) stackOf(e *recording.Event) []recording.Frame {
	if e.Stack < 0 || e.Stack >= len(ld.rec.Stacks) {
		return nil
	}
	return ld.rec.Stacks[e.Stack].Frames
}

// commOf names a process for a key that must survive a restart.
func (ld *Data) commOf(pid int) string {
	for _, p := range ld.rec.Meta.Processes {
		if p.PID == pid && p.Comm != "" {
			return p.Comm
		}
	}
	return ld.rec.Meta.Comm
}

// kobjLocks groups the log's sleeps in the kernel by object.
func (ld *Data) kobjLocks() []*kobjLock {
	byGroup := map[string]*kobjLock{}
	var order []string
	for i := range ld.rec.Events {
		e := &ld.rec.Events[i]
		if e.Kind != recording.EventSleep || e.Dur <= 0 {
			continue
		}
		fr := ld.stackOf(e)
		kind, frame := classifySleep(e, kernelFuncs(fr))
		if kind == kobjNone {
			continue
		}
		user, pi := userPart(fr)
		pk := core.KeyOf(user, pi)
		key, name, group := ld.kobjNames(kind, e, pk)
		l := byGroup[group]
		if l != nil && l.named < 0 && e.Obj != nil && e.Obj.Path != "" {
			// The file was first seen by device and inode (its process
			// had exited before its fd was read); a sleep that read the
			// path names it.
			l.key, l.name, l.named = key, name, 1
		}
		if l == nil {
			l = &kobjLock{kind: kind, key: key, name: name, group: group, frame: frame, call: e.Syscall,
				waiters: map[int]int{}, holders: map[int]int{}, points: map[core.PointKey]int64{},
				frames: map[core.PointKey][]recording.Frame{}, pis: map[core.PointKey]int{}}
			if e.Obj != nil && e.Obj.Path == "" {
				l.named = -1
			}
			byGroup[group] = l
			order = append(order, group)
		}
		l.sleeps = append(l.sleeps, e)
		l.waiters[e.TID]++
		l.waitNS += e.Dur
		if e.Peer > 0 && e.Peer != e.TID && ld.isTarget(e.Peer) {
			l.woken++
			l.holders[e.Peer]++
		}
		l.points[pk] += e.Dur
		if l.frames[pk] == nil {
			l.frames[pk], l.pis[pk] = user, pi
		}
	}
	out := make([]*kobjLock, 0, len(order))
	for _, g := range order {
		byGroup[g].foldTruncated()
		out = append(out, byGroup[g])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].waitNS > out[j].waitNS })
	return out
}

// kobjNames names the kernel object a sleep of kind waited on, by the
// sleep's object and, for a pipe, the point pk that writes it: key is
// the name that survives a restart, name the one shown, and group the
// object the sleeps are grouped by (the file's identity where there is
// one, else key).
func (ld *Data) kobjNames(kind kobjKind, e *recording.Event, pk core.PointKey) (key, name, group string) {
	switch kind {
	case kobjFlock:
		name = "flock on " + fileName(e.Obj)
		key = "flock " + fileName(e.Obj)
	case kobjRecord:
		name = "record lock on " + fileName(e.Obj) + ", " + rangeName(e.Obj.Range)
		key = fmt.Sprintf("record-lock %s %d+%d", fileName(e.Obj), e.Obj.Range.Start, e.Obj.Range.Len)
	case kobjInode:
		name = "inode lock of " + fileName(e.Obj)
		key = "inode-lock " + fileName(e.Obj)
	case kobjMmap:
		name = "mmap_lock of " + ld.commOf(e.PID)
		key = "mmap-lock " + ld.commOf(e.PID)
		group = fmt.Sprintf("%s pid %d", key, e.PID)
	case kobjPipe:
		// A pipe's inode is new at every start: the point that writes
		// it names it across runs.
		what := "pipe"
		if e.Obj != nil && strings.HasPrefix(e.Obj.Path, "socket:") {
			what = "socket"
		}
		name = fmt.Sprintf("%s written in %s", what, core.ShortFunc(pk.Fn))
		if e.Obj != nil && e.Obj.Path != "" {
			name += " (" + e.Obj.Path + ")"
		}
		key = what + " written at " + pk.Fn
		if e.Obj != nil && e.Obj.Key() != "" {
			group = e.Obj.Key()
		}
	}
	if group == "" {
		group = fileGroup(kind, e.Obj)
	}
	if group == "" {
		group = key
	}
	return key, name, group
}

// foldTruncated moves the waiting of a point whose user stack is the C
// library's wrapper alone (flock, write: the unwinding stopped there, as
// it does for a process that exits before its stack is unwound in user
// space) to the heaviest point whose stack goes on from the same frames:
// it is that call, with its callers lost. Without it a short-lived
// program's one call site is two points, and which weighs more changes
// from run to run.
func (l *kobjLock) foldTruncated() {
	for k, fr := range l.frames {
		if len(fr) == 0 || slices.ContainsFunc(fr, func(f recording.Frame) bool { return !isLibc(f) }) {
			continue
		}
		var into core.PointKey
		found := false
		for k2, fr2 := range l.frames {
			if k2 == k || len(fr2) <= len(fr) || !slices.EqualFunc(fr, fr2[:len(fr)], sameFrame) {
				continue
			}
			if !found || l.points[k2] > l.points[into] {
				into, found = k2, true
			}
		}
		if found {
			l.points[into] += l.points[k]
			delete(l.points, k)
			delete(l.frames, k)
			delete(l.pis, k)
		}
	}
}

// point returns the lock's heaviest program point, and how many there are.
func (l *kobjLock) point() (core.ProgramPoint, core.PointKey) {
	keys := make([]core.PointKey, 0, len(l.points))
	for k := range l.points {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if l.points[keys[i]] != l.points[keys[j]] {
			return l.points[keys[i]] > l.points[keys[j]]
		}
		return core.FuncAt(keys[i].Fn, keys[i].File, keys[i].Line) < core.FuncAt(keys[j].Fn, keys[j].File, keys[j].Line)
	})
	k := keys[0]
	return core.NewPoint(l.frames[k], l.pis[k]), k
}

// holdFacts measures the holds the log shows. A thread asleep on a file
// or mmap lock is woken by every release of it (the kernel wakes the
// waiters blocked on a lock when its holder lets it go), so while it
// sleeps the lock stays with one holder: the thread whose wake-up ends
// the sleep. That hold covers at least the sleep up to the wake-up (the
// sched_waking, not the end of the sleep, which also holds the waiter's
// time in the run queue), and starts no earlier than the holder's own
// last sleep on the object. It adds the holder's I/O inside each hold,
// for file and mmap locks only: a writer's own write is the inode lock's
// critical section, and a pipe's reader is not its writers' holder.
func (ld *Data) holdFacts(l *kobjLock) (holds int, holdNS, ioNS int64, calls map[string]int64) {
	calls = map[string]int64{}
	ends := map[int][]int64{}
	for _, e := range l.sleeps {
		ends[e.TID] = append(ends[e.TID], e.End())
	}
	for _, v := range ends {
		slices.Sort(v)
	}
	countIO := l.kind == kobjFlock || l.kind == kobjRecord || l.kind == kobjMmap
	for _, e := range l.sleeps {
		h := e.Peer
		if h <= 0 || h == e.TID || !ld.isTarget(h) {
			continue
		}
		rel := ld.wokenBy(e.TID, h, e.T, e.End())
		if rel < 0 {
			continue
		}
		acq := e.T
		if v := ends[h]; len(v) > 0 {
			if i := sort.Search(len(v), func(i int) bool { return v[i] >= rel }); i > 0 && v[i-1] > acq {
				acq = v[i-1]
			}
		}
		if acq >= rel {
			continue
		}
		holds++
		holdNS += rel - acq
		if te := ld.ev.thread(h); te != nil && countIO {
			te.io.each(acq, rel, func(io recording.Event, overlap int64) {
				ioNS += overlap
				calls[io.Syscall] += overlap
			})
		}
	}
	return holds, holdNS, ioNS, calls
}

// wokenBy returns when waker woke tid within [from, to] (its last such
// wakeup), -1 when the log holds none.
func (ld *Data) wokenBy(tid, waker int, from, to int64) int64 {
	te := ld.ev.thread(tid)
	if te == nil {
		return -1
	}
	w := te.wokenAt.ev
	i := sort.Search(len(w), func(i int) bool { return w[i].T > to })
	for i--; i >= 0 && w[i].T >= from; i-- {
		if w[i].TID == waker {
			return w[i].T
		}
	}
	return -1
}

// kernelLocks adds the finding of every significant lock the kernel
// holds, weighed against all the lock waiting (the futex locks' of locks
// and the kernel objects'), and adds to waiting each thread's sleeps on
// the objects it reports.
func (ld *Data) kernelLocks(a *core.Output, locks []*LockGroup, waiting map[int]int64) {
	kl := ld.kobjLocks()
	if len(kl) == 0 {
		return
	}
	total := int64(0)
	for _, g := range locks {
		if !g.idle {
			total += g.waitNS
		}
	}
	var kwait int64
	for _, l := range kl {
		kwait += l.waitNS
	}
	total += kwait
	active := ld.activeThreads(locks)
	if ld.dur > 0 {
		active += float64(kwait) / float64(ld.dur)
	}
	for _, l := range kl {
		if len(l.waiters) < kobjMinWaiters || float64(l.woken) < kobjMinWokenShare*float64(len(l.sleeps)) {
			continue
		}
		if !core.Significant(l.waitNS, total, ld.dur, active) {
			continue
		}
		a.Res.Findings = append(a.Res.Findings, ld.kernelFinding(l))
		for _, e := range l.sleeps {
			waiting[e.TID] += e.Dur
		}
	}
}

// kernelFinding judges one kernel object: I/O under it when its holders'
// I/O explains the waiting, as for a futex lock, else a lock the kernel
// holds with its object's remedy.
func (ld *Data) kernelFinding(l *kobjLock) core.Finding {
	pt, _ := l.point()
	holds, holdNS, ioNS, calls := ld.holdFacts(l)
	mean := 0.0
	rate := 0.0
	if ld.dur > 0 {
		mean = float64(l.waitNS) / float64(ld.dur)
		rate = float64(l.woken) / ld.dur.Seconds()
	}
	call := l.call
	if call == "" {
		call = "a page fault"
	}
	waitsEv := core.Fact("events", core.EvKernelWaits, "sleeps", len(l.sleeps), "threads", len(l.waiters),
		"wait_s", time.Duration(l.waitNS), "dur_s", ld.dur, "mean", mean, "woken", l.woken, "rate", rate,
		"object", l.name, "frame", l.frame, "call", call)
	items := make([]core.Item, 0, len(calls))
	for _, c := range core.ByCount(calls) {
		items = append(items, core.Item{Name: c, Value: core.Seconds(calls[c])})
	}
	share := 0.0
	if holdNS > 0 {
		share = float64(ioNS) / float64(holdNS)
	}
	holder := ""
	if hk := ld.holderPoint(l); hk != "" {
		holder = hk
	}
	holderEv := core.Fact("events", core.EvKernelHolder, "holds", holds, "hold_s", time.Duration(holdNS),
		"io_s", time.Duration(ioNS), "share", share, "holders", len(l.holders), "holder", holder, "calls", items)
	id := core.LockID{Key: l.key, Name: l.name}
	if holds > 0 && share >= core.IOMinExplained {
		c := &core.LockCase{
			Path: core.PathLive, ID: id, Unit: "threads", Population: ld.population, CPUs: ld.cpus(),
			What: l.name + " in " + core.ShortFunc(pt.Function), Point: pt, Points: len(l.points),
			Participants: len(l.waiters), Counted: true, Known: true, Mean: mean,
			WaitNS: l.waitNS, Contentions: int64(len(l.sleeps)), HandoffRate: rate,
			Ev: []core.Evidence{waitsEv}, Sources: 2,
			IO: core.IOFacts{Explains: true, Share: share, Calls: items, Holders: len(l.holders),
				Ev: []core.Evidence{holderEv}},
		}
		if len(items) > 0 {
			c.IO.Call = items[0].Name
		}
		return core.JudgeLock(c, ld.dur)
	}
	r := core.RemedyFileLock
	switch l.kind {
	case kobjMmap:
		r = core.RemedyMmapLock
	case kobjPipe:
		r = core.RemedyPipeWriter
	}
	who := core.Participants(len(l.waiters), ld.population, "threads", true, mean)
	v := core.Verdict{
		Kind: core.KindKernelObjectLock, Remedy: r,
		Sugg:     core.Sugg{Whom: "thread", WaitS: core.Seconds(l.waitNS), Fn: core.ShortFunc(pt.Function), Object: l.name, Call: call, CPUs: ld.cpus()},
		Headline: fmt.Sprintf("%s sleep in the kernel at ONE program point: %s, held by the thread that wakes them", who, l.name),
		Unit:     "threads", Population: ld.population, Participants: len(l.waiters), Counted: true,
		WaitSeconds: core.Seconds(l.waitNS), Point: pt, Lock: &id,
		Evidence:   kernelEvidence(waitsEv, holderEv, holds),
		Confidence: core.ConfidenceOf(2, false),
		Duration:   ld.dur,
	}
	return core.Judge(v)
}

// kernelEvidence lists a kernel object's facts: the sleeps, and the
// holds when the log shows any.
func kernelEvidence(waits, holder core.Evidence, holds int) []core.Evidence {
	if holds == 0 {
		return []core.Evidence{waits}
	}
	return []core.Evidence{waits, holder}
}

// holderPoint names where the wakes of a lock's waiters came from: the
// waker's program point at its wake, from the log's wakeup events, else
// the waking threads' names.
func (ld *Data) holderPoint(l *kobjLock) string {
	comms := map[string]int{}
	for tid, n := range l.holders {
		if t := ld.threads[tid]; t != nil && t.comm != "" {
			comms[t.comm] += n
		}
	}
	keys := core.ByCount(comms)
	if len(keys) == 0 {
		return ""
	}
	if len(keys) > 3 {
		keys = keys[:3]
	}
	return "threads " + strings.Join(keys, ", ")
}

// polledLock is one object threads fail to take and sleep between tries.
type polledLock struct {
	key, name string
	objKey    string
	call, err string
	fails     []*recording.Event
	threads   map[int]bool
	// points are the failures' program points; the sleeps at them count.
	points map[core.PointKey]int
	frames []recording.Frame
	pi     int
	// sleeps, sleepNS: the sleeps between tries; sleepCall their call.
	sleeps    int
	sleepNS   int64
	sleepCall map[string]int64
	// sleepKeys are the program points of those sleeps, as the idle rows
	// key them.
	sleepKeys map[core.PointKey]bool
	// sleepBy is each thread's sleeping between tries.
	sleepBy map[int]int64
}

// polledLocks groups the failed attempts by object and finds the sleeps
// their threads take between tries at the same program point.
func (ld *Data) polledLocks() []*polledLock {
	byKey := map[string]*polledLock{}
	var order []string
	for i := range ld.rec.Events {
		e := &ld.rec.Events[i]
		if e.Kind != recording.EventTryFail {
			continue
		}
		user, pi := userPart(ld.stackOf(e))
		obj := e.Obj
		var key, name string
		if obj != nil && obj.Range != nil {
			name = "record lock on " + fileName(obj) + ", " + rangeName(obj.Range)
			key = fmt.Sprintf("record-lock %s %d+%d", fileName(obj), obj.Range.Start, obj.Range.Len)
		} else {
			name = "flock on " + fileName(obj)
			key = "flock " + fileName(obj)
		}
		p := byKey[key]
		if p == nil {
			p = &polledLock{key: key, name: name, objKey: obj.Key(), call: strings.TrimSpace(e.Syscall + " " + cmdOf(obj)),
				threads: map[int]bool{}, points: map[core.PointKey]int{}, sleepCall: map[string]int64{}, sleepKeys: map[core.PointKey]bool{}, sleepBy: map[int]int64{}, pi: -1}
			if obj != nil {
				p.err = obj.Err
			}
			byKey[key] = p
			order = append(order, key)
		}
		p.fails = append(p.fails, e)
		p.threads[e.TID] = true
		pk := core.KeyOf(user, pi)
		p.points[pk]++
		if p.frames == nil && pi >= 0 {
			p.frames, p.pi = user, pi
		}
	}
	out := make([]*polledLock, 0, len(order))
	for _, k := range order {
		p := byKey[k]
		ld.polledSleeps(p)
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].fails) > len(out[j].fails) })
	return out
}

// cmdOf returns a call's lock command, "" when none.
func cmdOf(o *recording.Object) string {
	if o == nil {
		return ""
	}
	return o.Cmd
}

// polledSleeps finds the sleeps of p's threads between their tries: a
// sleep whose stack passes through the failing function, or the first
// sleep after a failure whose stack meets the failure's in the retry loop
// (afterFailure).
func (ld *Data) polledSleeps(p *polledLock) {
	fns := map[string]bool{}
	for k := range p.points {
		if k.Fn != "" {
			fns[k.Fn] = true
		}
	}
	fails := map[int][]*recording.Event{}
	for _, f := range p.fails {
		fails[f.TID] = append(fails[f.TID], f)
	}
	var sleeps []*recording.Event
	for i := range ld.rec.Events {
		e := &ld.rec.Events[i]
		if e.Kind != recording.EventSleep || !p.threads[e.TID] || e.State == recording.StateUninterruptible {
			continue
		}
		if !sleepCalls[e.Syscall] {
			continue
		}
		sleeps = append(sleeps, e)
	}
	sort.SliceStable(sleeps, func(i, j int) bool { return sleeps[i].T < sleeps[j].T })
	for _, fs := range fails {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].T < fs[j].T })
	}
	// last is each thread's previous sleep's start: a failure after it
	// is one this sleep may follow.
	last := map[int]int64{}
	for _, e := range sleeps {
		prev, seen := last[e.TID]
		last[e.TID] = e.T
		user, pi := userPart(ld.stackOf(e))
		in := false
		for _, f := range user {
			if fns[f.Func] {
				in = true
				break
			}
		}
		if !in {
			in = ld.afterFailure(fails[e.TID], e, user, prev, seen)
		}
		if !in {
			continue
		}
		p.sleeps++
		p.sleepNS += e.Dur
		p.sleepCall[e.Syscall] += e.Dur
		p.sleepBy[e.TID] += e.Dur
		// The idle rows key a sleep by its first frame outside the
		// wrappers' machinery; the finding's point is the wrapper's caller.
		p.sleepKeys[core.KeyOf(user, pi)] = true
		p.sleepKeys[core.KeyOf(user, livePointIndex(user))] = true
	}
}

// retryLoopCallers is how far above the failing point a retry loop may
// sit: the point is the caller of the C library's call (SQLite's
// unixLock), its caller the loop that tries again (pager_wait_on_lock),
// whose own caller the sleep shares (sqlite3PagerSharedLock) when the
// loop's frames carry different addresses of one unnamed function. Two
// callers reach it; more would pair a try with any sleep of the thread's
// main loop.
const retryLoopCallers = 2

// afterFailure reports whether sleep e is the wait between two tries of a
// thread whose failures fs are sorted by time: the thread's first sleep
// after a failure (none of its sleeps since that failure, the previous
// one starting at prev when seen), at a stack that shares the failure's
// callers from at most retryLoopCallers above the failing point up. A
// library that tries in one function and sleeps in another, both called
// by its retry loop (SQLite's busy handler), sleeps outside the failing
// function.
func (ld *Data) afterFailure(fs []*recording.Event, e *recording.Event, user []recording.Frame, prev int64, seen bool) bool {
	i := sort.Search(len(fs), func(i int) bool { return fs[i].T > e.T })
	if i == 0 {
		return false
	}
	f := fs[i-1]
	if seen && f.T < prev {
		return false
	}
	fu, fpi := userPart(ld.stackOf(f))
	if fpi < 0 {
		return false
	}
	common := 0
	for common < len(fu) && common < len(user) && sameFrame(fu[len(fu)-1-common], user[len(user)-1-common]) {
		common++
	}
	return common > 0 && len(fu)-common <= fpi+retryLoopCallers
}

// sameFrame compares two frames by function and module.
func sameFrame(a, b recording.Frame) bool {
	return a.Func == b.Func && a.Module == b.Module
}

// polledHolder measures what the object's other users did when a try
// failed: in I/O (the holder's critical section does I/O) or not seen.
func (ld *Data) polledHolder(p *polledLock, all []*polledLock) (share float64, ioNS int64, call string, holders int) {
	users := map[int]bool{}
	for _, q := range all {
		if q.objKey != "" && q.objKey == p.objKey {
			for t := range q.threads {
				users[t] = true
			}
		}
	}
	seen := map[*recording.Event]bool{}
	calls := map[string]int64{}
	inIO := map[int]bool{}
	hit := 0
	for _, f := range p.fails {
		found := false
		for u := range users {
			if u == f.TID {
				continue
			}
			te := ld.ev.thread(u)
			if te == nil {
				continue
			}
			for _, io := range ioAt(te, f.T) {
				found = true
				inIO[u] = true
				if !seen[io] {
					seen[io] = true
					ioNS += io.Dur
					calls[io.Syscall] += io.Dur
				}
			}
		}
		if found {
			hit++
		}
	}
	if len(p.fails) > 0 {
		share = float64(hit) / float64(len(p.fails))
	}
	if k := core.ByCount(calls); len(k) > 0 {
		call = k[0]
	}
	return share, ioNS, call, len(inIO)
}

// ioAt returns a thread's I/O events that span instant t.
func ioAt(te *threadEvents, t int64) []*recording.Event {
	iv := &te.io
	if len(iv.ev) == 0 {
		return nil
	}
	lo := t - iv.maxDur
	i := sort.Search(len(iv.ev), func(i int) bool { return iv.ev[i].T >= lo })
	var out []*recording.Event
	for ; i < len(iv.ev) && iv.ev[i].T <= t; i++ {
		if iv.ev[i].End() > t {
			out = append(out, iv.ev[i])
		}
	}
	return out
}

// polled adds the finding of every polled lock and returns the program
// points of the sleeps those findings account for, which the idle rows
// then leave out: a wait between failed tries is never idle.
func (ld *Data) polled(a *core.Output, waiting map[int]int64) map[core.PointKey]bool {
	done := map[core.PointKey]bool{}
	pl := ld.polledLocks()
	var logged int
	for _, p := range pl {
		logged += len(p.fails)
	}
	counted := ld.rec.Meta.Counters["ev_lock_try_fail"]
	for _, p := range pl {
		if len(p.fails) < polledMinFailures || p.sleeps == 0 || !core.SignificantWait(p.sleepNS, ld.dur) {
			continue
		}
		// The counter counts every failure, the log those the rate limit
		// kept: this lock's part of the counter is its part of the log.
		failures := float64(len(p.fails))
		if counted > uint64(logged) {
			failures = float64(counted) * float64(len(p.fails)) / float64(logged)
		}
		rate, share := 0.0, 0.0
		if ld.dur > 0 {
			rate = failures / ld.dur.Seconds()
			share = min(1, float64(p.sleepNS)/(float64(len(p.threads))*float64(ld.dur)))
		}
		hShare, ioNS, ioCall, holders := ld.polledHolder(p, pl)
		sleep := ""
		if k := core.ByCount(p.sleepCall); len(k) > 0 {
			sleep = k[0]
		}
		pt := core.NewPoint(p.frames, p.pi)
		id := core.LockID{Key: p.key, Name: p.name}
		who := core.Participants(len(p.threads), ld.population, "threads", true, 0)
		v := core.Verdict{
			Kind: core.KindPolledLock, Remedy: core.RemedyBlockingLock,
			Sugg:     core.Sugg{Whom: "thread", WaitS: core.Seconds(p.sleepNS), Fn: core.ShortFunc(pt.Function), Object: p.name, Call: p.call, Tries: rate, Asleep: share, CPUs: ld.cpus()},
			Headline: fmt.Sprintf("%s poll ONE lock at ONE program point: %s, %s failed tries a second", who, p.name, units.Rate(rate)),
			Unit:     "threads", Population: ld.population, Participants: len(p.threads), Counted: true,
			WaitSeconds: core.Seconds(p.sleepNS), Point: pt, Lock: &id,
			Evidence: []core.Evidence{
				core.Fact("events", core.EvPolledTries, "failures", failures, "logged", len(p.fails), "rate", rate,
					"threads", len(p.threads), "sleeps", p.sleeps, "sleep_s", time.Duration(p.sleepNS), "share", share,
					"dur_s", ld.dur, "object", p.name, "call", p.call, "err", p.err, "sleep", sleep),
				core.Fact("events", core.EvPolledHolder, "share", hShare, "io_s", time.Duration(ioNS), "holders", holders, "call", ioCall),
			},
			Confidence: core.ConfidenceOf(2, false),
			Duration:   ld.dur,
		}
		a.Res.Findings = append(a.Res.Findings, core.Judge(v))
		for k := range p.sleepKeys {
			done[k] = true
		}
		for tid, ns := range p.sleepBy {
			waiting[tid] += ns
		}
	}
	return done
}
