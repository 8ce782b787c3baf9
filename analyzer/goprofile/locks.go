package goprofile

import (
	"fmt"
	"sort"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// The Go lock detector: pairs where goroutines waited for a lock (block
// profile, goroutine dump) with where it was released (mutex profile) into
// locks, and judges each contended lock: I/O under the lock, a convoy of
// short critical sections, or plain contention. Contention on the Go
// runtime's internal locks is reported apart, never blamed on user code.

// minIOCPUSamples is how many CPU samples inside a contended critical
// section must be in I/O calls before the CPU profile alone says the lock
// is held across I/O. I/O mostly waits off-CPU, so its samples are few;
// three samples (30 ms at Go's 100 Hz) already mean the I/O runs under the
// lock again and again, not once at start-up. Fewer suffice when the mutex
// profile charges most of the lock's delay to the Unlock of the section
// they were taken in (goLock.ioReleaseShare).
const minIOCPUSamples = 3

// lockNode is one place of a lock: a Lock site of the block profile, a
// point where dumped goroutines wait for a lock, or an Unlock site of the
// mutex profile.
type lockNode struct {
	release bool
	site    *site // block or mutex site; nil for a dump-only point
	// dump waiters at this point (Lock sites only), and how many of them
	// wait on each lock address the dump shows.
	waiters int
	states  map[string]int
	addrs   map[string]int
	// releasing counts the dumped goroutines inside this Unlock site
	// (release nodes only).
	releasing int
	group     *gGroup // the largest dump group here
	key       core.PointKey
	flavor    core.LockFlavor
	callers   map[string]bool
	parent    int
}

func (n *lockNode) fn() string { return core.EnclosingFunc(n.key.Fn) }

func (n *lockNode) point() core.ProgramPoint {
	if n.site != nil {
		return n.site.point
	}
	return core.NewPoint(n.group.frames, n.group.pi)
}

// goLock is one lock assembled from its nodes.
type goLock struct {
	flavor   core.LockFlavor
	waits    []*lockNode
	releases []*lockNode
	// guessWhy lists the reasons of pairings that are guesses.
	guessWhy []string

	waitNS, waitCount int64 // block profile, at the Lock sites
	relNS, relCount   int64 // mutex profile, at the Unlock sites
	waiters           int   // dumped goroutines waiting
	// releasing is how many dumped goroutines were inside the lock's
	// Unlock. A Go mutex in starvation mode hands itself straight to the
	// next waiter and yields the releaser's CPU to it, so a convoy's
	// goroutines pile up runnable in Unlock while its wait queue drains.
	releasing int
	states    map[string]int
	addrs     map[string]int // dumped waiters per lock address
	// addrNS is the measured delay per lock address, when the waits name
	// their lock (the uprobes' go-lockwaits view).
	addrNS map[string]int64
}

// addrSpread returns how many distinct lock addresses the dumped waiters
// wait on, how many wait on the busiest address, how many waiters have a
// known address, and the busiest address.
func (l *goLock) addrSpread() (distinct, most, named int, mostAddr string) {
	for a, c := range l.addrs {
		distinct++
		named += c
		if c > most || c == most && a < mostAddr {
			most, mostAddr = c, a
		}
	}
	return distinct, most, named, mostAddr
}

// wait is the lock's total waiting: measured at the waiters when the block
// profile has it, else the delay the mutex profile charges to the
// releasers.
func (l *goLock) wait() int64 {
	if l.waitNS > 0 {
		return l.waitNS
	}
	return l.relNS
}

// contentions is the lock's number of contended acquisitions: counted by
// the waiters (block profile) when it has them, as the wait is, else by
// the releasers (mutex profile).
func (l *goLock) contentions() int64 {
	if l.waitNS > 0 {
		return l.waitCount
	}
	return l.relCount
}

// guess reports whether the lock's main Lock site and main Unlock site are
// paired by a guess (not locked and unlocked by one function).
func (l *goLock) guess() bool {
	w, r := l.topWait(), l.topRelease()
	if w == nil || r == nil {
		return false
	}
	kind, _ := pairing(w, r)
	return kind != pairDirect
}

// topWait is the Lock site where most waiting happened (or most dumped
// goroutines wait), nil when only Unlock sites are known.
func (l *goLock) topWait() *lockNode {
	var best *lockNode
	for _, n := range l.waits {
		if best == nil || nodeWait(n) > nodeWait(best) || nodeWait(n) == nodeWait(best) && n.waiters > best.waiters {
			best = n
		}
	}
	return best
}

func (l *goLock) topRelease() *lockNode {
	var best *lockNode
	for _, n := range l.releases {
		if best == nil || n.site.value > best.site.value {
			best = n
		}
	}
	return best
}

func nodeWait(n *lockNode) int64 {
	if n.site != nil {
		return n.site.value
	}
	return 0
}

// family folds RWMutex read and write sides into one lock family.
func family(f core.LockFlavor) core.LockFlavor {
	if f == core.FlavorRWRead {
		return core.FlavorRWWrite
	}
	return f
}

// goLocks assembles the locks of the Go data: nodes for the Lock sites
// (block profile and dump) and Unlock sites (mutex profile), joined into
// locks by pairing, heaviest first.
func goLocks(g *Data) []*goLock {
	nodes := lockNodes(g)
	u := newUnion(nodes)
	pairNodes(nodes, u)
	return assemble(nodes, u)
}

// lockNodes returns one node per Lock site of the block profile or the
// dump (a site in both is one node) and per Unlock site of the mutex
// profile.
func lockNodes(g *Data) []*lockNode {
	var nodes []*lockNode
	byKey := map[siteKey]*lockNode{}
	for _, s := range g.block {
		if s.sc.Class != core.ClassLock {
			continue
		}
		n := &lockNode{site: s, key: s.key, flavor: s.sc.Flavor, callers: s.callers}
		byKey[siteKey{PointKey: s.key, flavor: family(s.sc.Flavor)}] = n
		nodes = append(nodes, n)
	}
	for _, gr := range g.groups {
		if gr.sc.Class != core.ClassLock {
			continue
		}
		k := siteKey{PointKey: gr.key, flavor: family(gr.sc.Flavor)}
		n := byKey[k]
		if n == nil {
			n = &lockNode{key: gr.key, flavor: gr.sc.Flavor, callers: map[string]bool{}}
			for i := gr.pi + 1; gr.pi >= 0 && i < len(gr.frames) && i <= gr.pi+callerDepth; i++ {
				n.callers[core.EnclosingFunc(gr.frames[i].Func)] = true
			}
			byKey[k] = n
			nodes = append(nodes, n)
		}
		n.addGroup(gr)
	}
	relByKey := map[siteKey]*lockNode{}
	for _, s := range g.mutex {
		if s.sc.Class == core.ClassUnlock {
			n := &lockNode{release: true, site: s, key: s.key, flavor: s.sc.Flavor, callers: s.callers}
			relByKey[siteKey{PointKey: s.key, flavor: family(s.sc.Flavor)}] = n
			nodes = append(nodes, n)
		}
	}
	// Dumped goroutines inside an Unlock count at the mutex profile's
	// site of that Unlock; without one nothing pairs them with a Lock.
	for _, gr := range g.groups {
		if gr.sc.Class != core.ClassUnlock {
			continue
		}
		if n := relByKey[siteKey{PointKey: gr.key, flavor: family(gr.sc.Flavor)}]; n != nil {
			n.releasing += gr.count
		}
	}
	return nodes
}

// addGroup counts a dumped group of waiters at the node.
func (n *lockNode) addGroup(gr *gGroup) {
	if n.states == nil {
		n.states = map[string]int{}
	}
	n.waiters += gr.count
	n.states[gr.state] += gr.count
	if gr.lockAddr != "" {
		if n.addrs == nil {
			n.addrs = map[string]int{}
		}
		n.addrs[gr.lockAddr] += gr.count
	}
	if n.group == nil || gr.count > n.group.count {
		n.group = gr
	}
}

// union joins nodes into locks (union-find over the node indexes) and
// keeps the reasons of the pairings that are guesses.
type union struct {
	nodes []*lockNode
	edges []unionEdge
}

type unionEdge struct {
	i, j   int
	reason string // "" for a direct pairing
}

func newUnion(nodes []*lockNode) *union {
	for i := range nodes {
		nodes[i].parent = i
	}
	return &union{nodes: nodes}
}

func (u *union) find(i int) int {
	for u.nodes[i].parent != i {
		u.nodes[i].parent = u.nodes[u.nodes[i].parent].parent
		i = u.nodes[i].parent
	}
	return i
}

func (u *union) link(i, j int, reason string) {
	u.edges = append(u.edges, unionEdge{i, j, reason})
	if a, b := u.find(i), u.find(j); a != b {
		u.nodes[b].parent = a
	}
}

// famKey indexes release sites by a name (function, receiver, caller) and
// lock family.
type famKey struct {
	name string
	fam  core.LockFlavor
}

// pairNodes links Lock sites with the Unlock sites of the same lock:
// directly (one function locks and unlocks) or through a receiver type
// first, then, for sites that found no partner that way, through a shared
// caller. Release sites are indexed by function, receiver and caller so
// that pairing stays linear in the number of sites.
func pairNodes(nodes []*lockNode, u *union) {
	byFn, byRecv := map[famKey][]int{}, map[famKey][]int{}
	for j, r := range nodes {
		if !r.release {
			continue
		}
		fam := family(r.flavor)
		byFn[famKey{r.fn(), fam}] = append(byFn[famKey{r.fn(), fam}], j)
		if rt := core.ReceiverType(r.fn()); rt != "" {
			byRecv[famKey{rt, fam}] = append(byRecv[famKey{rt, fam}], j)
		}
	}
	partnered := make([]bool, len(nodes))
	for i, w := range nodes {
		if w.release {
			continue
		}
		fam := family(w.flavor)
		cands := byFn[famKey{w.fn(), fam}]
		if rt := core.ReceiverType(w.fn()); rt != "" {
			cands = append(cands[:len(cands):len(cands)], byRecv[famKey{rt, fam}]...)
		}
		for _, j := range cands {
			if kind, reason := pairing(w, nodes[j]); kind == pairDirect || kind == pairReceiver {
				u.link(i, j, reason)
				partnered[i], partnered[j] = true, true
			}
		}
	}
	pairByCaller(nodes, u, partnered)
}

// pairByCaller pairs the sites left unpartnered through a shared caller (a
// plain lockState/unlockState pair of helpers called from one place),
// since two locks of one worker loop share its callers too; a caller above
// more than maxCallerFanout unpaired Unlock sites is a dispatcher, not the
// caller of one helper pair.
func pairByCaller(nodes []*lockNode, u *union, partnered []bool) {
	byCaller := map[famKey][]int{}
	for j, r := range nodes {
		if r.release && !partnered[j] {
			for c := range r.callers {
				byCaller[famKey{c, family(r.flavor)}] = append(byCaller[famKey{c, family(r.flavor)}], j)
			}
		}
	}
	for i, w := range nodes {
		if w.release || partnered[i] {
			continue
		}
		for _, c := range sortedKeys(w.callers) {
			cands := byCaller[famKey{c, family(w.flavor)}]
			if len(cands) > maxCallerFanout {
				continue
			}
			for _, j := range cands {
				if kind, reason := pairing(w, nodes[j]); kind == pairCaller {
					u.link(i, j, reason)
				}
			}
		}
	}
}

// assemble builds one lock per component of the union, heaviest first.
func assemble(nodes []*lockNode, u *union) []*goLock {
	comps := map[int]*goLock{}
	var locks []*goLock
	for i, n := range nodes {
		root := u.find(i)
		l := comps[root]
		if l == nil {
			l = &goLock{flavor: family(n.flavor), states: map[string]int{}}
			comps[root] = l
			locks = append(locks, l)
		}
		l.add(n)
	}
	for _, e := range u.edges {
		if e.reason != "" {
			l := comps[u.find(e.i)]
			l.guessWhy = append(l.guessWhy, e.reason)
		}
	}
	for _, l := range locks {
		l.guessWhy = dedupe(l.guessWhy)
		if len(l.guessWhy) > maxGuessReasons {
			l.guessWhy = append(l.guessWhy[:maxGuessReasons], fmt.Sprintf("%d more such pairings", len(l.guessWhy)-maxGuessReasons))
		}
	}
	sort.SliceStable(locks, func(i, j int) bool { return locks[i].wait() > locks[j].wait() })
	return locks
}

// add adds a node's figures to the lock.
func (l *goLock) add(n *lockNode) {
	if n.release {
		l.releases = append(l.releases, n)
		l.relNS += n.site.value
		l.relCount += n.site.count
		l.releasing += n.releasing
		return
	}
	l.waits = append(l.waits, n)
	if n.site != nil {
		l.waitNS += n.site.value
		l.waitCount += n.site.count
		for a, ns := range n.site.addrNS {
			if l.addrNS == nil {
				l.addrNS = map[string]int64{}
			}
			l.addrNS[a] += ns
		}
	}
	l.waiters += n.waiters
	for s, c := range n.states {
		l.states[s] += c
	}
	for a, c := range n.addrs {
		if l.addrs == nil {
			l.addrs = map[string]int{}
		}
		l.addrs[a] += c
	}
}

// maxCallerFanout is how many unpaired Unlock sites one caller may sit
// above for a shared caller to pair Lock and Unlock sites: a pair of
// locking helpers is released in one or two places under its caller; a
// function above more is a dispatcher over many locks.
const maxCallerFanout = 4

// maxGuessReasons bounds the pairing guesses spelled out in a finding's
// evidence; a lock of a type with many methods would list dozens.
const maxGuessReasons = 3

// pairKind says how a Lock site and an Unlock site were found to belong to
// one lock.
type pairKind uint8

const (
	pairNone     pairKind = iota
	pairDirect            // one function locks and unlocks (Lock … defer Unlock)
	pairReceiver          // methods of one receiver type: a guess
	pairCaller            // called from one function: a weaker guess
)

// pairing decides whether Lock site w and Unlock site r belong to one
// lock, and for a guess says why in words.
func pairing(w, r *lockNode) (pairKind, string) {
	wf, rf := w.fn(), r.fn()
	if wf == rf {
		return pairDirect, ""
	}
	a, b := core.ShortFuncName(wf), core.ShortFuncName(rf)
	if a > b {
		a, b = b, a
	}
	wt, rt := core.ReceiverType(wf), core.ReceiverType(rf)
	if wt != "" && wt == rt {
		return pairReceiver, fmt.Sprintf("%s and %s are methods of %s, taken to use one mutex", a, b, core.ShortFuncName(wt))
	}
	if wt != "" && rt != "" {
		return pairNone, "" // methods of different types guard different objects
	}
	var shared []string
	for c := range w.callers {
		if r.callers[c] && !core.IsMachinery(recording.Frame{Func: c}) {
			shared = append(shared, c)
		}
	}
	if len(shared) == 0 {
		return pairNone, ""
	}
	sort.Strings(shared)
	return pairCaller, fmt.Sprintf("%s and %s are both called from %s, taken to use one mutex", a, b, core.ShortFuncName(shared[0]))
}

// sortedKeys returns the keys of m in order, for deterministic iteration.
func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// csFuncs are the functions that run inside the lock's critical sections:
// the functions that lock it and those that unlock it, with the line range
// between Lock and Unlock where one function does both.
type csFuncs struct {
	funcs map[string]bool
	// lockLine, unlockLine per exact function name (not closures).
	lockLine, unlockLine map[string]int
}

func (l *goLock) critical() csFuncs {
	cs := csFuncs{funcs: map[string]bool{}, lockLine: map[string]int{}, unlockLine: map[string]int{}}
	for _, n := range l.waits {
		cs.funcs[n.fn()] = true
		if n.key.Line > 0 && (cs.lockLine[n.key.Fn] == 0 || n.key.Line < cs.lockLine[n.key.Fn]) {
			cs.lockLine[n.key.Fn] = n.key.Line
		}
	}
	for _, n := range l.releases {
		cs.funcs[n.fn()] = true
		if n.key.Line > cs.unlockLine[n.key.Fn] {
			cs.unlockLine[n.key.Fn] = n.key.Line
		}
	}
	return cs
}

// inside returns the index of the outermost frame of frames that runs
// inside a critical section of the lock, or -1. A frame of a locking
// function must lie at or before the line of its Unlock, and after its
// Lock when that is known: I/O done after the Unlock is not under the lock.
// Functions whose Unlock line is unknown are left out rather than guessed.
func (cs csFuncs) inside(frames []recording.Frame) int {
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		if !cs.funcs[core.EnclosingFunc(f.Func)] {
			continue
		}
		lo, hi := cs.lockLine[f.Func], cs.unlockLine[f.Func]
		switch {
		case f.Func != core.EnclosingFunc(f.Func):
			// A closure of a locking function, run where it is called.
		case hi == 0:
			// Where the section ends is unknown (the Unlock was not
			// sampled): a call after the Lock may well follow the Unlock.
			continue
		case f.Line > hi, lo > 0 && f.Line < lo:
			continue
		}
		return i
	}
	return -1
}

// holderFacts are what the goroutine dump and the CPU profile show inside
// a lock's critical sections.
type holderFacts struct {
	// dump: goroutines inside a critical section in I/O.
	inIO    int
	ioGroup *gGroup
	ioFrame string
	ioAt    int
	// CPU: time inside the critical sections (not waiting) and in I/O there.
	csNS, ioNS int64
	ioFuncs    map[string]int64
	// I/O calls the probes saw sleep inside the critical sections (live
	// recordings): how many, how long, by I/O function.
	ioSleeps, ioSleepNS int64
	ioSleepFuncs        map[string]int64
	// waitCPU: CPU spent acquiring (spinning in lockSlow) at the Lock sites.
	waitCPU int64
	// ioIn holds the critical-section functions (enclosing functions of the
	// Lock and Unlock sites) inside which I/O was seen.
	ioIn map[string]bool
	// how says how the goroutine in I/O was found to hold the lock
	// (holderInSection, or one of dumpHolder's inferences); holderFn is
	// the function it holds the lock in, when inferred.
	how, holderFn string
	// holdWaits holds, by the point they wait at, dumped goroutines that
	// wait for another lock from inside this lock's critical section.
	holdWaits map[core.PointKey]*gGroup
}

// sectionIO returns the index of the I/O frame of frames called from
// inside a critical section whose frame is frames[k] (cs.inside), or -1,
// and notes the section's function in h.ioIn when there is one.
func (h *holderFacts) sectionIO(frames []recording.Frame, k int) int {
	io := core.IOIndex(frames, k)
	if io >= 0 {
		h.ioIn[core.EnclosingFunc(frames[k].Func)] = true
	}
	return io
}

func (g *Data) holders(l *goLock) holderFacts {
	cs := l.critical()
	var h holderFacts
	h.ioFuncs = map[string]int64{}
	h.ioSleepFuncs = map[string]int64{}
	h.ioIn = map[string]bool{}
	for _, gr := range g.groups {
		k := cs.inside(gr.frames)
		if k < 0 {
			continue
		}
		if gr.sc.Class == core.ClassLock {
			// Waiting for a lock from inside this lock's critical
			// section (above its own wait point): it holds this lock
			// and waits for another one.
			if k > gr.pi && gr.pi >= 0 {
				if h.holdWaits == nil {
					h.holdWaits = map[core.PointKey]*gGroup{}
				}
				if prev := h.holdWaits[gr.key]; prev == nil || gr.count > prev.count {
					h.holdWaits[gr.key] = gr
				}
			}
			continue
		}
		if io := h.sectionIO(gr.frames, k); io >= 0 {
			h.inIO += gr.count
			if h.ioGroup == nil || gr.state == "syscall" && h.ioGroup.state != "syscall" {
				h.ioGroup, h.ioFrame, h.ioAt = gr, gr.frames[io].Func, k
			}
			h.how = core.HolderInSection
		}
	}
	// Without a release site the critical sections are unknown: look for
	// the holder in the dump instead.
	if h.inIO == 0 && len(l.releases) == 0 && len(g.groups) > 0 && !g.stateInferred {
		g.dumpHolder(l, &h)
	}
	waitKeys := map[core.PointKey]bool{}
	for _, n := range l.waits {
		waitKeys[n.key] = true
	}
	g.cpuWalk(func(frames []recording.Frame, ns int64) {
		pi := core.PointIndex(frames)
		if pi >= 0 && waitKeys[core.KeyOf(frames, pi)] && core.ClassifyFrames(frames, pi).Class == core.ClassLock {
			h.waitCPU += ns
			return
		}
		k := cs.inside(frames)
		if k < 0 {
			return
		}
		h.csNS += ns
		if io := h.sectionIO(frames, k); io >= 0 {
			h.ioNS += ns
			h.ioFuncs[frames[io].Func] += ns
		}
	})
	// I/O waits off the CPU, where the CPU profile sees only the few
	// samples of its system calls' own work (none at all in some runs of
	// the kvstore fixture, whose committer holds the lock across
	// fdatasync); the probes see every call that slept.
	g.ioWalk(func(frames []recording.Frame, calls, ns int64) {
		k := cs.inside(frames)
		if k < 0 {
			return
		}
		if io := h.sectionIO(frames, k); io >= 0 {
			h.ioSleeps += calls
			h.ioSleepNS += ns
			h.ioSleepFuncs[frames[io].Func] += ns
		}
	})
	return h
}
