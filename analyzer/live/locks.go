package live

import (
	"fmt"
	"sort"
	"strings"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// This file turns the futex words of a live recording into locks: it
// judges what each word is from the stacks that wait on and wake it (a
// mutex, a condition variable's sequence word, an idle runtime wait),
// folds the words of one lock structure into one lock, names it by the
// data symbol that holds it, and tells idle waits from contention.

// foldWindow bounds how far apart (in bytes) two futex words may lie and
// still belong to one lock structure. A glibc pthread_cond_t is 48 bytes
// and a pthread_mutex_t 40 on x86-64; a structure that pairs a condition
// variable with its mutex, or two such pairs as CPython's global
// interpreter lock does (about 200 bytes), fits in 256, while the next
// unrelated global is usually further away. Words inside the window must
// also share their threads (foldMinShared) and one of them must be a
// condition variable's: an array of mutexes (a striped lock) is never
// folded, however close its elements lie.
const foldWindow = 256

// foldMinShared is the share of the smaller of two words' thread sets
// (waiters and wakers) that must use both for them to be one lock. The
// words of one condition variable and its mutex are touched by the same
// threads, every one of them; half allows for threads seen on one word only
// in a short recording, while two unrelated locks that happen to lie close
// together are used by different threads.
const foldMinShared = 0.5

// wordRole is what a futex word is, judged from its stacks.
type wordRole uint8

const (
	roleUnknown wordRole = iota
	roleMutex            // a lock word: waiters in pthread_mutex_lock, __lll_lock_wait
	roleCond             // a condition variable's sequence word
	roleIdle             // an idle wait: a Go idle thread, a thread join
	roleQueue            // a hand-rolled lock queue: one word per waiter (foldQueues)
)

// liveMachinery reports whether a program point may not be at f in a live
// stack: core/frames.go's machinery and the collector's placeholder frames.
func liveMachinery(f recording.Frame) bool {
	return core.IsMachinery(f) || isSyntheticFrame(f)
}

// livePointIndex is pointIndex with liveMachinery: the first frame outside
// lock machinery and system-call plumbing, -1 when there is none. When that
// frame has no name (code of a stripped object: "libruby.so.3.1+0x20a2ad")
// the first named frame above it is the point instead, unless the only
// names above are a thread's entry (start_thread, main): a static helper
// of a library is better told by the exported function that called it, a
// stripped program's own code by its address.
func livePointIndex(frames []recording.Frame) int {
	first := -1
	for i, f := range frames {
		if liveMachinery(f) {
			continue
		}
		if first < 0 {
			first = i
		}
		if unnamed(f) {
			continue
		}
		if i != first && threadEntryFuncs[core.NormNative(f.Func)] {
			break
		}
		return i
	}
	return first
}

// unnamed reports whether a frame has no symbol: its name is its address
// ("0x7f…") or its module and offset ("libruby.so.3.1+0x20a2ad").
func unnamed(f recording.Frame) bool {
	return f.Func == "" || strings.HasPrefix(f.Func, "0x") || f.Module != "" && strings.HasPrefix(f.Func, f.Module+"+0x")
}

// threadEntryFuncs are where every thread's or process's stack starts;
// they name no program point.
var threadEntryFuncs = map[string]bool{
	"start_thread": true, "clone": true, "clone3": true, "libc_start_main": true,
	"libc_start_call_main": true, "start": true, "main": true, "runtime.goexit": true,
}

// roleOf judges a stack: the leaf-most frame that marks a role decides (a
// thread in pthread_cond_wait that re-takes the mutex waits on the mutex
// word, and its leaf-most marker is __lll_lock_wait).
func roleOf(frames []recording.Frame) (wordRole, string) {
	for _, f := range frames {
		if f.Kernel {
			continue
		}
		n := f.Func
		if core.GoPackage(n) == "" {
			n = core.NormNative(n)
		}
		switch core.NativeRoleFuncs[n] {
		case core.NativeMutex:
			return roleMutex, ""
		case core.NativeCond:
			return roleCond, ""
		case core.NativeJoin:
			return roleIdle, "waiting for a thread to exit (pthread_join)"
		}
	}
	// Go calls futex only inside its runtime: a thread parked with no
	// goroutine to run (notesleep, stopm), the profiler's reader, the
	// signal loop. Goroutines waiting for a sync.Mutex park in the runtime
	// without a futex call of their own, and show in the Go profiles.
	goFrames := false
	for _, f := range frames {
		if !f.Kernel && core.GoPackage(f.Func) != "" {
			goFrames = true
			break
		}
	}
	if goFrames {
		if sc := core.ClassifyFrames(frames, -1); sc.Class == core.ClassIdle {
			return roleIdle, sc.Reason
		}
		return roleIdle, "Go runtime-internal wait (a thread of the Go runtime, not a user lock)"
	}
	return roleUnknown, ""
}

// futexWord is one futex address of the recording.
type futexWord struct {
	addr uint64
	name string
	stat recording.LockStat
	role wordRole
	// idleReason says why an idle word is not contention.
	idleReason string
	// waiters and wakers are the threads that waited on and woke the
	// word; wokeWaiters those whose wakes woke somebody.
	waiters, wakers, wokeWaiters map[int]bool
	waitS, wakeS                 []*liveSample
}

// users returns the threads that waited on or woke the word.
func (w *futexWord) users() map[int]bool {
	u := map[int]bool{}
	for t := range w.waiters {
		u[t] = true
	}
	for t := range w.wakers {
		u[t] = true
	}
	return u
}

// futexWords gathers every futex address of the recording with its role.
func (ld *Data) futexWords() []*futexWord {
	words := map[uint64]*futexWord{}
	get := func(addr uint64) *futexWord {
		w := words[addr]
		if w == nil {
			w = &futexWord{addr: addr, waiters: map[int]bool{}, wakers: map[int]bool{}, wokeWaiters: map[int]bool{}}
			words[addr] = w
		}
		return w
	}
	for _, st := range ld.rec.Locks {
		w := get(st.Addr)
		w.stat, w.name = st, st.Name
		for _, t := range st.Waiters {
			w.waiters[t] = true
		}
		for _, t := range st.Wakers {
			w.wakers[t] = true
		}
	}
	for _, s := range ld.waits {
		w := get(s.addr)
		w.waitS = append(w.waitS, s)
		w.waiters[s.tid] = true
		if w.name == "" {
			w.name = s.lockName
		}
	}
	for _, s := range ld.wakes {
		w := get(s.addr)
		w.wakeS = append(w.wakeS, s)
		w.wakers[s.tid] = true
		if value(s, 1) > 0 {
			w.wokeWaiters[s.tid] = true
		}
		if w.name == "" {
			w.name = s.lockName
		}
	}
	out := make([]*futexWord, 0, len(words))
	for _, w := range words {
		w.role, w.idleReason = w.judgeRole()
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// judgeRole weighs the roles of the word's wait stacks by their delay
// (and its wake stacks by their wakes): the heaviest role wins.
func (w *futexWord) judgeRole() (wordRole, string) {
	weight := map[wordRole]int64{}
	reasons := map[string]int64{}
	for _, s := range w.waitS {
		if s.synthetic() {
			continue
		}
		r, why := roleOf(s.userFrames())
		weight[r] += value(s, 1) + 1
		if why != "" {
			reasons[why] += value(s, 1) + 1
		}
	}
	for _, s := range w.wakeS {
		if s.synthetic() {
			continue
		}
		r, why := roleOf(s.userFrames())
		if r == roleIdle && why != "" {
			reasons[why]++
		}
		weight[r] += value(s, 0)
	}
	best, bestW := roleUnknown, int64(0)
	for _, r := range []wordRole{roleMutex, roleCond, roleIdle} {
		if weight[r] > bestW {
			best, bestW = r, weight[r]
		}
	}
	reason := ""
	if best == roleIdle {
		for _, k := range core.ByCount(reasons) {
			reason = k
			break
		}
	}
	return best, reason
}

// sameObject reports whether two words may lie in one structure: both in
// the same module's data (named by a symbol of that module) or both
// unnamed (heap or stack memory).
func sameObject(a, b *futexWord) bool {
	if a.name == "" || b.name == "" {
		return a.name == b.name
	}
	_, ma := core.SymbolModule(a.name)
	_, mb := core.SymbolModule(b.name)
	return ma == mb
}

// shared returns the share of the smaller thread set that is in both.
func shared(a, b map[int]bool) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return 0
	}
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// LockGroup is one lock: a futex word, or the words of one lock structure
// folded together.
type LockGroup struct {
	words []*futexWord
	role  wordRole
	// idle is set for waits that are not contention; idleReason says why.
	idle       bool
	idleReason string
	// turns is set for a condition variable that its own waiters wake:
	// threads taking turns on a lock built from it (an interpreter's
	// global lock). use holds the figures it was judged on.
	turns bool
	use   *turnUse
	// queue is set for a hand-rolled lock queue: words of one waiter each,
	// waited on at one program point (foldQueues).
	queue bool
	// interp names the interpreter whose global lock this is, if any.
	interp string

	waits, blocked, timeouts, woken uint64
	waitNS                          int64
	// runqNS is the part of waitNS the woken waiters spent runnable,
	// waiting for a CPU (LockStat.RunqNS; 0 in older recordings).
	runqNS          int64
	maxNS           uint64
	hist            []uint64
	waiters, wakers map[int]bool
	truncated       bool
	owners          map[int]uint64
	// seen is the most distinct waiters the kernel counted on one of the
	// group's words (LockStat.WaitersSeen), exited threads included:
	// their samples are folded without a thread id, so waiters alone
	// undercounts a program whose threads live milliseconds.
	seen int

	// facts caches the lock's measured figures (liveData.factsOf).
	facts *lockFacts
	// jvm is set for a lock built from a JVM's park words (live/jvm.go).
	jvm *jvmLock
	// rwBase is the address of the pthread_rwlock_t whose words the group
	// folds (live/rwlock.go), 0 for any other lock.
	rwBase uint64
}

// addrs returns the group's addresses.
func (g *LockGroup) addrs() []uint64 {
	out := make([]uint64, len(g.words))
	for i, w := range g.words {
		out[i] = w.addr
	}
	return out
}

// name names the lock: the base of its structure when the words' places
// in it are known (as its key does, so the name and the key agree), else
// the data symbol of its lowest word, or of each symbol its words span
// ("pool_cv + pool_mu (idle)"), or its address; a hand-rolled queue by
// its words.
func (g *LockGroup) name() string {
	if g.queue {
		return fmt.Sprintf("a queue of %d per-thread wait words", len(g.words))
	}
	var syms []string
	module := ""
	seen := map[string]bool{}
	for _, w := range g.words {
		if w.name == "" {
			continue
		}
		s, m := core.SymbolModule(w.name)
		module = m
		if !seen[s] {
			seen[s] = true
			syms = append(syms, s)
		}
	}
	switch {
	case len(syms) == 0:
		return fmt.Sprintf("0x%x", g.words[0].addr)
	case len(syms) == 1:
		if b, ok := lockBase(g); ok && b.sym == syms[0] {
			return b.name()
		}
		for _, w := range g.words {
			if w.name != "" {
				return w.name
			}
		}
	}
	if module != "" {
		return strings.Join(syms, " + ") + " (" + module + ")"
	}
	return strings.Join(syms, " + ")
}

// id returns the LockID of the group.
func (g *LockGroup) id(ld *Data) core.LockID {
	if g.jvm != nil {
		return g.jvm.id()
	}
	addr := g.words[0].addr
	if b, ok := lockBase(g); ok && sharedKey(g) == "" {
		addr = b.addr
	}
	id := core.LockID{Key: ld.liveLockKey(g), Address: fmt.Sprintf("0x%x", addr), Name: g.name()}
	if id.Name == id.Address {
		id.Name = ""
	}
	if len(g.words) > 1 {
		for _, w := range g.words {
			id.Words = append(id.Words, fmt.Sprintf("0x%x", w.addr))
		}
	}
	if o, n := g.topOwner(); o > 0 && n*2 >= g.ownerSeen() {
		id.Owner = o
	}
	return id
}

// topOwner returns the owner seen most often at wait time and how often.
func (g *LockGroup) topOwner() (int, uint64) {
	best, bestN := 0, uint64(0)
	for o, n := range g.owners {
		if n > bestN || n == bestN && o < best {
			best, bestN = o, n
		}
	}
	return best, bestN
}

func (g *LockGroup) ownerSeen() uint64 {
	var n uint64
	for _, c := range g.owners {
		n += c
	}
	return n
}

// waitSamples returns the futex-wait samples of every word.
func (g *LockGroup) waitSamples() []*liveSample {
	var out []*liveSample
	for _, w := range g.words {
		out = append(out, w.waitS...)
	}
	return out
}

// wakeSamples returns the futex-wake samples of every word.
func (g *LockGroup) wakeSamples() []*liveSample {
	var out []*liveSample
	for _, w := range g.words {
		out = append(out, w.wakeS...)
	}
	return out
}

// lockGroups folds the recording's futex words into locks and judges each
// idle or not.
func (ld *Data) lockGroups() []*LockGroup {
	words := ld.futexWords()
	parent := make([]int, len(words))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	users := make([]map[int]bool, len(words))
	for i, w := range words {
		users[i] = w.users()
	}
	for i := range words {
		for j := i + 1; j < len(words) && words[j].addr-words[i].addr < foldWindow; j++ {
			a, b := words[i], words[j]
			if a.role != roleCond && b.role != roleCond {
				continue
			}
			if a.role == roleIdle || b.role == roleIdle || !sameObject(a, b) || shared(users[i], users[j]) < foldMinShared {
				continue
			}
			parent[find(j)] = find(i)
		}
	}
	byRoot := map[int]*LockGroup{}
	var out []*LockGroup
	for i, w := range words {
		r := find(i)
		g := byRoot[r]
		if g == nil {
			g = &LockGroup{waiters: map[int]bool{}, wakers: map[int]bool{}, owners: map[int]uint64{}}
			byRoot[r] = g
			out = append(out, g)
		}
		g.words = append(g.words, w)
	}
	for _, g := range out {
		ld.sumGroup(g)
	}
	return ld.foldQueues(ld.foldRWLocks(out))
}

// minQueueWords is how many single-waiter words at one program point make
// a hand-rolled lock queue: two threads each sleeping on its own word at
// the point where they wait for the same thing already show the pattern,
// and a thread count cannot make it more or less of one.
const minQueueWords = 2

// ownWaiter reports whether a lock group is one thread's own wait word: a
// word of no known lock that one thread waits on, or a condition variable
// (with the mutex folded beside it) that one thread waits on — the threads
// that signal it may wait briefly on its mutex.
func ownWaiter(g *LockGroup) bool {
	switch g.role {
	case roleUnknown:
		return len(g.waiters) == 1
	case roleCond:
		waiters := map[int]bool{}
		for _, w := range g.words {
			for _, s := range w.waitS {
				if condSide(s.userFrames()) == condWaitSide {
					waiters[s.tid] = true
				}
			}
		}
		return len(waiters) == 1
	}
	return false
}

// foldQueues folds hand-rolled lock queues into one lock each. In such a
// queue every waiter sleeps on a word of its own (a per-thread condition
// variable or semaphore) and the thread that gives the lock up wakes the
// next waiter's word: Ruby's GVL, InnoDB's row-lock waits, RocksDB's write
// queue and PostgreSQL's LWLocks are built this way. Each word then has a
// single waiter, and nothing at the futex level ties the words together
// but where they are waited on: the same program point. Judged one by
// one, each looks like a thread idling alone; together they are one lock.
func (ld *Data) foldQueues(groups []*LockGroup) []*LockGroup {
	byPoint := map[core.PointKey][]*LockGroup{}
	var keys []core.PointKey
	for _, g := range groups {
		if g.waitNS == 0 || !ownWaiter(g) {
			continue
		}
		k := ld.waiterKey(g)
		if k.Fn == "" {
			continue
		}
		if byPoint[k] == nil {
			keys = append(keys, k)
		}
		byPoint[k] = append(byPoint[k], g)
	}
	folded := map[*LockGroup]bool{}
	var queues []*LockGroup
	for _, k := range keys {
		gs := byPoint[k]
		if len(gs) < minQueueWords {
			continue
		}
		// The mutex that guards the queue (the one pthread_cond_wait
		// re-takes, or that the waiters take to enqueue) is waited for at
		// the same point: it is part of the same lock.
		for _, g := range groups {
			if g.waitNS > 0 && !ownWaiter(g) && (g.role == roleMutex || g.role == roleCond) && ld.waiterKey(g) == k {
				gs = append(gs, g)
			}
		}
		q := &LockGroup{queue: true, waiters: map[int]bool{}, wakers: map[int]bool{}, owners: map[int]uint64{}}
		for _, g := range gs {
			q.words = append(q.words, g.words...)
			folded[g] = true
		}
		sort.Slice(q.words, func(i, j int) bool { return q.words[i].addr < q.words[j].addr })
		ld.sumGroup(q)
		queues = append(queues, q)
	}
	if len(queues) == 0 {
		return groups
	}
	out := make([]*LockGroup, 0, len(groups)-len(folded)+len(queues))
	for _, g := range groups {
		if !folded[g] {
			out = append(out, g)
		}
	}
	return append(out, queues...)
}

// participants counts the distinct threads that waited on the group:
// those named in its samples (a folded sample of exited threads has no
// thread id) or, when more, those the kernel counted.
func (g *LockGroup) participants() int {
	n := len(g.waiters)
	if g.waiters[0] {
		n-- // the folded samples' missing tid
	}
	return max(n, g.seen)
}

// sumGroup adds up a group's figures and judges whether it is idle.
func (ld *Data) sumGroup(g *LockGroup) {
	roles := map[wordRole]int{}
	for _, w := range g.words {
		roles[w.role]++
		ld.addWord(g, w)
	}
	g.role = groupRole(g, roles)
	ld.judgeIdle(g)
}

// addWord adds one of the group's words to the group's figures: its
// kernel statistics (or, without a locks.json entry, what the views
// counted), its owners in the target, its waiters and wakers.
func (ld *Data) addWord(g *LockGroup, w *futexWord) {
	st := w.stat
	g.waits += st.Waits
	g.blocked += st.Blocked
	g.timeouts += st.Timeouts
	g.woken += st.Woken
	g.waitNS += int64(st.WaitNS)
	g.runqNS += int64(st.RunqNS)
	g.maxNS = max(g.maxNS, st.MaxNS)
	g.truncated = g.truncated || st.WaitersTruncated
	g.seen = max(g.seen, st.WaitersSeen)
	for i, n := range st.Hist {
		for len(g.hist) <= i {
			g.hist = append(g.hist, 0)
		}
		g.hist[i] += n
	}
	for o, n := range st.Owners {
		if w.role != roleCond && ld.isTarget(o) {
			g.owners[o] += n
		}
	}
	if st.Waits == 0 && st.Addr == 0 {
		// No locks.json entry: fall back to the views.
		for _, s := range w.waitS {
			g.waits += uint64(value(s, 0))
			g.waitNS += value(s, 1)
		}
		for _, s := range w.wakeS {
			g.woken += uint64(value(s, 1))
		}
	}
	for t := range w.waiters {
		g.waiters[t] = true
	}
	for t := range w.wakers {
		g.wakers[t] = true
	}
}

// groupRole returns the role of a group whose words have the roles
// counted in roles: a queue stays one, a condition variable or a mutex
// among the words makes the group one, and it is idle only when every
// word is.
func groupRole(g *LockGroup, roles map[wordRole]int) wordRole {
	switch {
	case g.queue:
		return roleQueue
	case roles[roleCond] > 0:
		return roleCond
	case roles[roleMutex] > 0:
		return roleMutex
	case roles[roleIdle] > 0 && roles[roleIdle] == len(g.words):
		return roleIdle
	default:
		return roleUnknown
	}
}

// judgeIdle sets, from the group's role and figures, whether it is idle
// (a wait for work or an event, not a lock) and why; for a condition
// variable or a queue also the interpreter it belongs to and whether its
// threads take turns on it.
func (ld *Data) judgeIdle(g *LockGroup) {
	switch g.role {
	case roleUnknown:
		// A word of no known lock (a semaphore, a hand-rolled futex)
		// that one thread waited on and nobody released more than once
		// while recording is a wait for an event — a thread's exit, a
		// signal, work to arrive — not a lock threads take in turn.
		if len(g.waiters) == 1 && g.woken <= 1 {
			g.idle = true
			g.idleReason = "waiting alone on a semaphore or futex that nobody released during the recording (a wait for an event: a thread's exit, a signal, work to arrive)"
		}
	case roleIdle:
		g.idle = true
		for _, w := range g.words {
			if w.idleReason != "" {
				g.idleReason = w.idleReason
				break
			}
		}
	case roleCond, roleQueue:
		selfWoken, busy := ld.condUse(g)
		g.interp = interpreterOf(g)
		// Threads taking turns: a lock built from a condition variable
		// that its waiters hand to each other while they compute, or an
		// interpreter's lock queue. Any other hand-rolled queue that its
		// waiters hand on is a lock like a mutex (a database's row lock,
		// a write queue), judged by its hand-offs and holds.
		g.turns = selfWoken && busy && (g.role == roleCond || g.interp != "")
		switch {
		case g.turns, selfWoken && busy:
		case selfWoken && g.queue:
			g.idle = true
			g.idleReason = "threads that each wait on a word of their own and wake each other, but together keep the CPU busy less than a quarter of the time (they wait mostly for something else)"
		case selfWoken:
			g.idle = true
			g.idleReason = "threads that wake each other on a condition variable but together keep it busy less than a quarter of the time (they wait mostly for something else)"
		case g.queue:
			g.idle = true
			g.idleReason = "idle threads, each parked on a word of its own, woken by a thread that never waits there (a producer handing out work)"
		default:
			g.idle = true
			g.idleReason = "idle threads parked on a condition variable, woken by a producer's signal"
		}
	}
}

// Thresholds that tell a condition variable of an idle pool from one that
// threads take turns on. Neither depends on how many threads there are or
// on how many CPUs: a lock that serializes N threads gives each 1/N of its
// time, so no per-thread share can tell an idle thread from one that waits
// its turn behind N-1 others.
const (
	// turnMinSelfWake is the share of a condition variable's hand-offs
	// (wakes that woke a waiter) that its own waiters must make for it to
	// be a lock they take turns on. Workers of an idle pool are woken by a
	// producer that never waits there itself; threads taking turns on a
	// lock built from a condition variable (an interpreter's global lock)
	// wake each other when they drop it. Half leaves room for a producer
	// that also wakes them now and then.
	turnMinSelfWake = 0.5
	// turnMinBusy is how busy the waiters, taken together, must keep the
	// lock for their waiting to come from it: their CPU and run-queue time
	// per second of wall time, in CPUs. One holder at a time runs under a
	// lock that serializes its users, so a busy lock keeps them near one
	// CPU; an idle pool's workers, waiting for work, use a few hundredths.
	// A quarter is where queueing alone cannot keep even minMeanWaiting
	// (0.1) threads waiting on a server busy that share of the time (a
	// single server at utilisation 0.25 queues 0.25²/0.75 = 0.08 on
	// average): a group that waits much more while keeping the lock busy
	// less is waiting for something else.
	turnMinBusy = 0.25
)

// turnUse is how the waiters of a condition-variable lock use it.
type turnUse struct {
	// waiters is how many threads wait on the condition variable;
	// selfShare the share of its hand-offs they make themselves.
	waiters   int
	selfShare float64
	// cpu and runq are the waiters' CPU and run-queue time per second of
	// wall time (CPUs' worth); demand their sum.
	cpu, runq, demand float64
	// mean is how many of them wait on the lock on average.
	mean float64
}

// condUse tells how a condition-variable lock is used: selfWoken when its
// waiters make the hand-offs (turnMinSelfWake), busy when together they
// keep it busy (turnMinBusy). Threads taking turns on a lock built from
// it are both; an idle pool's workers are neither.
func (ld *Data) condUse(g *LockGroup) (selfWoken, busy bool) {
	// The condition variable's waiters are the threads that sleep inside
	// pthread_cond_wait (on any word of the structure); a producer that
	// sleeps only inside pthread_cond_signal, waiting for the waiters of
	// an old group to quiesce, is not one of them.
	condWaiters := map[int]bool{}
	for _, w := range g.words {
		for _, s := range w.waitS {
			if g.queue || condSide(s.userFrames()) == condWaitSide {
				condWaiters[s.tid] = true
			}
		}
	}
	// A hand-off is a signal (pthread_cond_signal or broadcast) that woke
	// a waiter. Wakes from inside pthread_cond_wait (a waiter releasing
	// its group reference, waking a quiescing signaller) hand nothing
	// over. When no waker stack names its side (stacks lost), every wake
	// that woke somebody counts.
	var wakes, selfWakes, anyWakes, anySelf int64
	for _, w := range g.words {
		if w.role != roleCond && !g.queue {
			continue
		}
		for _, s := range w.wakeS {
			n := value(s, 1)
			anyWakes += n
			if condWaiters[s.tid] {
				anySelf += n
			}
			if condSide(s.userFrames()) != condSignalSide {
				continue
			}
			wakes += n
			if condWaiters[s.tid] {
				selfWakes += n
			}
		}
	}
	if wakes == 0 {
		wakes, selfWakes = anyWakes, anySelf
	}
	if len(condWaiters) < 2 || wakes == 0 {
		return false, false
	}
	u := &turnUse{waiters: len(condWaiters), selfShare: float64(selfWakes) / float64(wakes)}
	u.cpu, u.runq = ld.demand(condWaiters)
	u.demand = u.cpu + u.runq
	if ld.dur > 0 {
		u.mean = float64(g.waitNS) / float64(ld.dur)
	}
	g.use = u
	return u.selfShare >= turnMinSelfWake, u.demand >= turnMinBusy
}

// condSideOf tells the two sides of a condition variable apart.
type condSideOf uint8

const (
	condNone condSideOf = iota
	condWaitSide
	condSignalSide
)

// condWaitFuncs and condSignalFuncs are the waiting and signalling entry
// points of condition variables (normalised names).
var (
	condWaitFuncs = map[string]bool{
		"pthread_cond_wait": true, "pthread_cond_timedwait": true, "pthread_cond_clockwait": true,
		"pthread_cond_wait_common": true, "std::condition_variable::wait": true, "std::__1::condition_variable::wait": true,
	}
	condSignalFuncs = map[string]bool{
		"pthread_cond_signal": true, "pthread_cond_broadcast": true,
		"std::condition_variable::notify_one": true, "std::condition_variable::notify_all": true,
	}
)

// condSide returns which side of a condition variable a stack is on: the
// leaf-most entry point decides.
func condSide(frames []recording.Frame) condSideOf {
	for _, f := range frames {
		if f.Kernel {
			continue
		}
		n := core.NormNative(f.Func)
		switch {
		case condWaitFuncs[n]:
			return condWaitSide
		case condSignalFuncs[n]:
			return condSignalSide
		}
	}
	return condNone
}

// demand returns the CPU time and the run-queue time (runnable without a
// CPU) of a set of threads per second of wall time: how many CPUs' worth
// they used and how many more they waited for.
func (ld *Data) demand(tids map[int]bool) (cpu, runq float64) {
	if ld.dur <= 0 || len(tids) == 0 {
		return 0, 0
	}
	var cpuS float64
	var runqNS int64
	for t := range tids {
		if th := ld.threads[t]; th != nil {
			cpuS += th.cpu()
			runqNS += th.runqNS
		}
	}
	return cpuS / ld.dur.Seconds(), core.Seconds(runqNS) / ld.dur.Seconds()
}
