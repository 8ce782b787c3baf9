package analyzer

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/contend-dev/contend/recording"
)

// The Go lock detector: pairs where goroutines waited for a lock (block
// profile, goroutine dump) with where it was released (mutex profile) into
// locks, and judges each contended lock: I/O under the lock, a convoy of
// short critical sections, or plain contention. Contention on the Go
// runtime's internal locks is reported apart, never blamed on user code.

func init() { register(detectGoLocks) }

// minIOCPUSamples is how many CPU samples inside a contended critical
// section must be in I/O calls before the CPU profile alone says the lock
// is held across I/O. I/O mostly waits off-CPU, so its samples are few;
// three samples (30 ms at Go's 100 Hz) already mean the I/O runs under the
// lock again and again, not once at start-up.
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
	group   *gGroup // the largest dump group here
	key     pointKey
	flavor  lockFlavor
	callers map[string]bool
	parent  int
}

func (n *lockNode) fn() string { return enclosingFunc(n.key.fn) }

func (n *lockNode) point() ProgramPoint {
	if n.site != nil {
		return n.site.point
	}
	return newPoint(n.group.frames, n.group.pi)
}

// goLock is one lock assembled from its nodes.
type goLock struct {
	flavor   lockFlavor
	waits    []*lockNode
	releases []*lockNode
	// guessWhy lists the reasons of pairings that are guesses.
	guessWhy []string

	waitNS, waitCount int64 // block profile, at the Lock sites
	relNS, relCount   int64 // mutex profile, at the Unlock sites
	waiters           int   // dumped goroutines waiting
	states            map[string]int
	addrs             map[string]int // dumped waiters per lock address
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
func family(f lockFlavor) lockFlavor {
	if f == flavorRWRead {
		return flavorRWWrite
	}
	return f
}

// goLocks assembles the locks of the Go data.
func goLocks(g *goData) []*goLock {
	var nodes []*lockNode
	byKey := map[siteKey]*lockNode{}
	for _, s := range g.block {
		if s.sc.class != classLock {
			continue
		}
		n := &lockNode{site: s, key: s.key, flavor: s.sc.flavor, callers: s.callers}
		byKey[siteKey{pointKey: s.key, flavor: family(s.sc.flavor)}] = n
		nodes = append(nodes, n)
	}
	for _, gr := range g.groups {
		if gr.sc.class != classLock {
			continue
		}
		k := siteKey{pointKey: gr.key, flavor: family(gr.sc.flavor)}
		n := byKey[k]
		if n == nil {
			n = &lockNode{key: gr.key, flavor: gr.sc.flavor, callers: map[string]bool{}}
			for i := gr.pi + 1; gr.pi >= 0 && i < len(gr.frames) && i <= gr.pi+callerDepth; i++ {
				n.callers[enclosingFunc(gr.frames[i].Func)] = true
			}
			byKey[k] = n
			nodes = append(nodes, n)
		}
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
	for _, s := range g.mutex {
		if s.sc.class != classUnlock {
			continue
		}
		nodes = append(nodes, &lockNode{release: true, site: s, key: s.key, flavor: s.sc.flavor, callers: s.callers})
	}
	for i := range nodes {
		nodes[i].parent = i
	}
	find := func(i int) int {
		for nodes[i].parent != i {
			nodes[i].parent = nodes[nodes[i].parent].parent
			i = nodes[i].parent
		}
		return i
	}
	type edge struct {
		i, j   int
		reason string // "" for a direct pairing
	}
	var edges []edge
	link := func(i, j int, reason string) {
		edges = append(edges, edge{i, j, reason})
		if a, b := find(i), find(j); a != b {
			nodes[b].parent = a
		}
	}
	// Direct pairings and pairings through a receiver type first. Release
	// sites are indexed by function and receiver so pairing stays linear in
	// the number of sites.
	type famKey struct {
		name string
		fam  lockFlavor
	}
	byFn, byRecv := map[famKey][]int{}, map[famKey][]int{}
	for j, r := range nodes {
		if !r.release {
			continue
		}
		fam := family(r.flavor)
		byFn[famKey{r.fn(), fam}] = append(byFn[famKey{r.fn(), fam}], j)
		if rt := receiverType(r.fn()); rt != "" {
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
		if rt := receiverType(w.fn()); rt != "" {
			cands = append(cands[:len(cands):len(cands)], byRecv[famKey{rt, fam}]...)
		}
		for _, j := range cands {
			if kind, reason := pairing(w, nodes[j]); kind == pairDirect || kind == pairReceiver {
				link(i, j, reason)
				partnered[i], partnered[j] = true, true
			}
		}
	}
	// A shared caller only pairs sites that found no partner that way (a
	// plain lockState/unlockState pair of helpers called from one place),
	// since two locks of one worker loop share its callers too; a caller
	// above more than maxCallerFanout unpaired Unlock sites is a dispatcher,
	// not the caller of one helper pair.
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
					link(i, j, reason)
				}
			}
		}
	}
	comps := map[int]*goLock{}
	var locks []*goLock
	for i, n := range nodes {
		root := find(i)
		l := comps[root]
		if l == nil {
			l = &goLock{flavor: family(n.flavor), states: map[string]int{}}
			comps[root] = l
			locks = append(locks, l)
		}
		if n.release {
			l.releases = append(l.releases, n)
			l.relNS += n.site.value
			l.relCount += n.site.count
			continue
		}
		l.waits = append(l.waits, n)
		if n.site != nil {
			l.waitNS += n.site.value
			l.waitCount += n.site.count
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
	for _, e := range edges {
		if e.reason != "" {
			l := comps[find(e.i)]
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

// maxLockRows bounds the locks table: locks come heaviest first, a table
// longer than a few screens is not read, and in a profile with more locks
// than this the rest each hold a sliver of the waiting.
const maxLockRows = 200

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
	a, b := shortFunc(wf), shortFunc(rf)
	if a > b {
		a, b = b, a
	}
	wt, rt := receiverType(wf), receiverType(rf)
	if wt != "" && wt == rt {
		return pairReceiver, fmt.Sprintf("%s and %s are methods of %s, taken to use one mutex", a, b, shortFunc(wt))
	}
	if wt != "" && rt != "" {
		return pairNone, "" // methods of different types guard different objects
	}
	var shared []string
	for c := range w.callers {
		if r.callers[c] && !isMachinery(recording.Frame{Func: c}) {
			shared = append(shared, c)
		}
	}
	if len(shared) == 0 {
		return pairNone, ""
	}
	sort.Strings(shared)
	return pairCaller, fmt.Sprintf("%s and %s are both called from %s, taken to use one mutex", a, b, shortFunc(shared[0]))
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
		if n.key.line > 0 && (cs.lockLine[n.key.fn] == 0 || n.key.line < cs.lockLine[n.key.fn]) {
			cs.lockLine[n.key.fn] = n.key.line
		}
	}
	for _, n := range l.releases {
		cs.funcs[n.fn()] = true
		if n.key.line > cs.unlockLine[n.key.fn] {
			cs.unlockLine[n.key.fn] = n.key.line
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
		if !cs.funcs[enclosingFunc(f.Func)] {
			continue
		}
		lo, hi := cs.lockLine[f.Func], cs.unlockLine[f.Func]
		switch {
		case f.Func != enclosingFunc(f.Func):
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
	// waitCPU: CPU spent acquiring (spinning in lockSlow) at the Lock sites.
	waitCPU int64
	// ioIn holds the critical-section functions (enclosing functions of the
	// Lock and Unlock sites) inside which I/O was seen.
	ioIn map[string]bool
}

func (g *goData) holders(l *goLock) holderFacts {
	cs := l.critical()
	var h holderFacts
	h.ioFuncs = map[string]int64{}
	h.ioIn = map[string]bool{}
	for _, gr := range g.groups {
		if gr.sc.class == classLock {
			continue
		}
		k := cs.inside(gr.frames)
		if k < 0 {
			continue
		}
		if io := ioIndex(gr.frames, k); io >= 0 {
			h.ioIn[enclosingFunc(gr.frames[k].Func)] = true
			h.inIO += gr.count
			if h.ioGroup == nil || gr.state == "syscall" && h.ioGroup.state != "syscall" {
				h.ioGroup, h.ioFrame, h.ioAt = gr, gr.frames[io].Func, k
			}
		}
	}
	waitKeys := map[pointKey]bool{}
	for _, n := range l.waits {
		waitKeys[n.key] = true
	}
	g.cpuWalk(func(frames []recording.Frame, ns int64) {
		pi := pointIndex(frames)
		if pi >= 0 && waitKeys[keyOf(frames, pi)] && classifyFrames(frames, pi).class == classLock {
			h.waitCPU += ns
			return
		}
		k := cs.inside(frames)
		if k < 0 {
			return
		}
		h.csNS += ns
		if io := ioIndex(frames, k); io >= 0 {
			h.ioIn[enclosingFunc(frames[k].Func)] = true
			h.ioNS += ns
			h.ioFuncs[frames[io].Func] += ns
		}
	})
	return h
}

// lockName describes a Go lock by where it is locked and released.
func (l *goLock) name() string {
	var b strings.Builder
	b.WriteString(l.flavor.String())
	if w := l.topWait(); w != nil {
		fmt.Fprintf(&b, " locked at %s", w.key)
		if len(l.waits) > 1 {
			fmt.Fprintf(&b, " (+%d more %s)", len(l.waits)-1, plural(int64(len(l.waits)-1), "site"))
		}
	}
	if r := l.topRelease(); r != nil {
		if l.topWait() != nil {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " released at %s", r.key)
		if len(l.releases) > 1 {
			fmt.Fprintf(&b, " (+%d more %s)", len(l.releases)-1, plural(int64(len(l.releases)-1), "site"))
		}
	}
	return b.String()
}

func (l *goLock) id() *LockID {
	return &LockID{Name: l.name(), PairingGuess: l.guess()}
}

func detectGoLocks(a *analysis) {
	g := a.goData()
	if g == nil {
		return
	}
	locks := goLocks(g)
	var total int64
	for _, l := range locks {
		total += l.wait()
	}
	for i, l := range locks {
		if i < maxLockRows {
			a.res.Locks = append(a.res.Locks, g.lockRow(l))
		}
		if f, ok := g.judgeLock(l, total); ok {
			a.res.Findings = append(a.res.Findings, f)
		}
	}
	g.runtimeLocks(a, total)
}

// lockRow is the lock's row for the locks table.
func (g *goData) lockRow(l *goLock) LockRow {
	row := LockRow{Lock: *l.id(), Waits: uint64(l.contentions()), WaitSeconds: seconds(l.wait())}
	row.DistinctWaiters = l.waiters
	if m := int(math.Ceil(g.meanWaiting(l.wait()))); m > row.DistinctWaiters {
		row.DistinctWaiters = m
	}
	if w := l.topWait(); w != nil {
		p := w.point()
		row.Waiter = &p
	}
	if r := l.topRelease(); r != nil {
		p := r.site.point
		row.Waker = &p
	}
	return row
}

// judgeLock turns a lock into a finding when its waiting is significant.
func (g *goData) judgeLock(l *goLock, totalWait int64) (Finding, bool) {
	wait := l.wait()
	mean := g.meanWaiting(wait)
	dumpOnly := wait == 0
	switch {
	case dumpOnly:
		// No lock profile: a single dump can still show a pile-up.
		if l.waiters < minConvoyParticipants {
			return Finding{}, false
		}
	case !significantWait(wait, g.duration), float64(wait) < minShareOfAllWaiting*float64(totalWait):
		return Finding{}, false
	case g.duration > 0 && g.active() > 0 && mean < minShareOfActive*float64(g.active()):
		return Finding{}, false
	}
	h := g.holders(l)
	top := l.topWait()
	rel := l.topRelease()

	f := Finding{Unit: "goroutines", Population: g.population, WaitSeconds: seconds(wait), Lock: l.id()}
	if top != nil {
		f.Point = top.point()
	} else {
		f.Point = rel.site.point
	}
	if rel != nil {
		p := rel.site.point
		f.Releaser = &p
	}
	counted := l.waiters > 0 && float64(l.waiters) >= math.Ceil(mean)
	f.Participants = l.waiters
	if !counted {
		f.Participants = int(math.Ceil(mean))
	}
	// Without a dump and a duration the number of goroutines is unknown:
	// distinct call paths are no count of goroutines (Participants stays 0).
	known := counted || g.duration > 0
	sources := 0
	if wait > 0 {
		sources++
	}
	if l.waiters > 0 {
		sources++
	}

	var ev []Evidence
	if l.waiters > 0 {
		ev = append(ev, Evidence{Source: "goroutines", Text: fmt.Sprintf("%d of %d goroutines were waiting for this lock when the %s was taken: %s",
			l.waiters, g.population, g.gorSource, stateMix(l.states))})
	}
	if l.waitNS > 0 {
		t := fmt.Sprintf("%s contended %s at the Lock %s waited %s in total (%s each on average)",
			fmtCount(l.waitCount), plural(l.waitCount, "acquisition"), plural(int64(len(l.waits)), "site"),
			fmtSeconds(seconds(l.waitNS)), fmtDuration(time.Duration(l.waitNS/max(l.waitCount, 1))))
		if mean > 0 {
			t += fmt.Sprintf("; over %s that is %s goroutines waiting at any moment (Little's law)", fmtDuration(g.duration), fmtFloat(mean))
		}
		ev = append(ev, Evidence{Source: "go-block", Text: t})
	}
	if rel != nil {
		t := fmt.Sprintf("the mutex profile charges %s of waiters' delay over %s %s to the Unlock at %s",
			fmtSeconds(seconds(l.relNS)), fmtCount(l.relCount), plural(l.relCount, "contention"), rel.key)
		switch {
		case top == nil:
		case l.guess():
			t += "; paired with the Lock site by a guess"
		default:
			t += "; the same function locks and unlocks, so both are one lock"
		}
		if len(l.guessWhy) > 0 {
			t += " (" + strings.Join(l.guessWhy, "; ") + ")"
		}
		ev = append(ev, Evidence{Source: "go-mutex", Text: t})
	}
	distinct, most, named, mostAddr := l.addrSpread()
	// spread: the dump shows the waiters parked on several mutexes, none
	// holding half of them. The Lock site then takes one of a set of
	// locks (a striped array, per-object locks) and its profile figures
	// add up several locks; no single one of them is a convoy.
	spread := distinct >= 2 && 2*most < named
	// unseen: a dump with wait states was taken over the interval and
	// shows nobody waiting for this lock, while the profiles' average says
	// some goroutines always were. The waiting came in bursts (a holder
	// preempted on a busy machine, a periodic pile-up), not as the standing
	// queue a convoy is.
	unseen := l.waiters == 0 && len(g.groups) > 0 && !g.stateInferred && mean >= convoyMeanWaiting
	switch {
	case unseen:
		ev = append(ev, Evidence{Source: "goroutines", Text: fmt.Sprintf("the goroutine dump shows no goroutine waiting for this lock, although the profiles average %s waiting: the waiting came in bursts, not as a standing queue",
			fmtFloat(mean))})
	case spread:
		ev = append(ev, Evidence{Source: "goroutines", Text: fmt.Sprintf("the %d waiters whose lock the dump names wait on %d different mutexes, at most %d on any one: this point takes one of several locks, and the profiles add them up",
			named, distinct, most)})
	case distinct == 1 && named >= 2:
		ev = append(ev, Evidence{Source: "goroutines", Text: fmt.Sprintf("all %d waiters whose lock the dump names wait on the same mutex, %s", named, mostAddr)})
		if f.Lock != nil && f.Lock.Address == "" {
			id := *f.Lock
			id.Address = mostAddr
			f.Lock = &id
		}
	}
	if top != nil && top.site != nil && top.site.stacks > 1 {
		ev = append(ev, Evidence{Source: "go-block", Text: fmt.Sprintf("%d distinct call paths reach the Lock at %s", top.site.stacks, top.key)})
	}

	ioSeen := h.inIO > 0 || h.ioNS >= minIOCPUSamples*g.cpuPeriod && g.cpuPeriod > 0
	var hold time.Duration
	if g.duration > 0 && l.contentions() > 0 {
		hold = g.duration / time.Duration(l.contentions())
	}
	switch {
	case ioSeen:
		// I/O under a lock hurts the goroutines whose own critical sections
		// do no I/O (lookups stalled behind a journal write). When every
		// waiter does I/O under the lock itself, the lock serializes the
		// I/O: a different problem with a different fix.
		victims := l.ioVictims(h)
		var victimNS int64
		victimWaiters := 0
		for _, n := range victims {
			victimNS += nodeWait(n)
			victimWaiters += n.waiters
		}
		hurt := victimWaiters > 0
		if victimNS > 0 {
			hurt = significantWait(victimNS, g.duration) && float64(victimNS) >= minShareOfAllWaiting*float64(totalWait)
		}
		if hurt {
			g.ioUnderLock(&f, l, h, victims, mean, counted, &ev, &sources)
		} else {
			g.serializedIO(&f, l, h, &ev, &sources)
		}
	case !spread && !unseen && known && f.Participants >= minConvoyParticipants && (dumpOnly || mean >= convoyMeanWaiting) && (hold == 0 || hold <= maxShortHold):
		g.convoy(&f, l, h, hold, mean, counted, &ev, &sources)
	default:
		g.contention(&f, l, h, hold, mean, counted, known, &ev, &sources)
	}
	f.Evidence = ev
	f.Confidence = confidenceOf(sources, l.guess() || !counted && g.duration == 0)
	if dumpOnly && f.Confidence == ConfidenceHigh {
		f.Confidence = ConfidenceMedium
	}
	finish(&f, g.duration, counted)
	return f, true
}

// waitWhat names what the waiters do at the point: "sync.Mutex.Lock in
// stripe.(*Sub).handle (stripe.go:57)".
func waitWhat(l *goLock, p ProgramPoint) string {
	if l.topWait() == nil {
		return fmt.Sprintf("%s released at %s", l.flavor, pointString(p))
	}
	verb := "sync.Mutex.Lock"
	if w := l.topWait(); w != nil {
		switch w.flavor {
		case flavorRWWrite:
			verb = "sync.RWMutex.Lock"
		case flavorRWRead:
			verb = "sync.RWMutex.RLock"
		}
	}
	return fmt.Sprintf("%s in %s", verb, pointString(p))
}

func (g *goData) convoy(f *Finding, l *goLock, h holderFacts, hold time.Duration, mean float64, counted bool, ev *[]Evidence, sources *int) {
	f.Kind = KindLockConvoy
	f.Headline = onePoint(participants(f.Participants, f.Population, "goroutines", counted, mean), "wait", waitWhat(l, f.Point))
	switch {
	case len(l.waits) == 0:
		f.Headline = fmt.Sprintf("%s wait for ONE %s", participants(f.Participants, f.Population, "goroutines", counted, mean), waitWhat(l, f.Point))
	case len(l.waits) > 1:
		f.Headline = fmt.Sprintf("%s wait for ONE lock at %d program points: %s", participants(f.Participants, f.Population, "goroutines", counted, mean), len(l.waits), waitWhat(l, f.Point))
	}
	k := f.Participants
	short := "no I/O or blocking call was seen inside the critical section"
	if hold > 0 {
		src := "go-mutex"
		if l.waitNS > 0 {
			src = "go-block" // contentions() counts the waiters then
		}
		*ev = append(*ev, Evidence{Source: src, Text: fmt.Sprintf("the mean hold is at most %s (%s / %s contended acquisitions), short of the %s that would make the work under the lock the problem",
			fmtDuration(hold), fmtDuration(g.duration), fmtCount(l.contentions()), fmtDuration(maxShortHold))})
	}
	if h.csNS > 0 {
		*ev = append(*ev, Evidence{Source: "go-cpu", Text: fmt.Sprintf("%s of CPU ran inside the critical section, none of it in I/O calls", fmtSeconds(seconds(h.csNS)))})
		*sources++
	}
	if h.waitCPU > 0 {
		f.CPUSeconds = seconds(h.waitCPU)
		*ev = append(*ev, Evidence{Source: "go-cpu", Text: fmt.Sprintf("%s of CPU was burned spinning in sync.Mutex before parking at the Lock site", fmtSeconds(f.CPUSeconds))})
	}
	f.Suggestion = Suggestion{
		Action: stripeAction("mutexes", "goroutine"),
		Reasoning: fmt.Sprintf("%d distinct goroutines wait for one lock whose critical section is short (%s): the waiting comes from how many goroutines share the lock, not from the work under it. "+
			"If they work on disjoint keys, a lock per stripe of keys lets them proceed in parallel. The array must stay fixed: a lock stored in a map entry that another goroutine deletes and re-creates no longer excludes anyone, and two goroutines end up inside the same critical section.", k, short),
		ExpectedGain: stripeGain(k),
	}
}

func (g *goData) contention(f *Finding, l *goLock, h holderFacts, hold time.Duration, mean float64, counted, known bool, ev *[]Evidence, sources *int) {
	f.Kind = KindContention
	who := participants(f.Participants, f.Population, "goroutines", counted, mean)
	f.Headline = fmt.Sprintf("%s lost waiting for ONE lock: %s", fmtSeconds(f.WaitSeconds), waitWhat(l, f.Point))
	var why []string
	switch {
	case !known:
		why = append(why, "how many goroutines take part is unknown: there is no goroutine dump, and without the profiled duration the wait cannot be turned into an average number of waiters")
	case !counted && mean < convoyMeanWaiting:
		why = append(why, fmt.Sprintf("on average only %s goroutines wait at once, so no queue persists", fmtFloat(mean)))
	case f.Participants < minConvoyParticipants:
		why = append(why, fmt.Sprintf("%s %s part, fewer than the %d that make a convoy", who, map[bool]string{true: "takes", false: "take"}[f.Participants == 1 && counted], minConvoyParticipants))
	case mean < convoyMeanWaiting:
		why = append(why, fmt.Sprintf("on average only %s goroutines wait at once, so no queue persists", fmtFloat(mean)))
	}
	if hold > maxShortHold {
		why = append(why, fmt.Sprintf("each contended handoff takes up to %s on average (%s / %s contended acquisitions): the lock is held long, or its holder is often descheduled while holding it (more runnable goroutines than CPUs), rather than shared by a crowd of short critical sections",
			fmtDuration(hold), fmtDuration(g.duration), fmtCount(l.contentions())))
	}
	if h.csNS > 0 {
		*ev = append(*ev, Evidence{Source: "go-cpu", Text: fmt.Sprintf("%s of CPU ran inside the critical section", fmtSeconds(seconds(h.csNS)))})
		*sources++
	}
	if h.waitCPU > 0 {
		f.CPUSeconds = seconds(h.waitCPU)
	}
	missing := g.missingForLocks()
	reason := "The lock is contended"
	if len(why) > 0 {
		reason += ", but " + strings.Join(why, "; ")
	}
	reason += "."
	if missing != "" {
		reason += " " + missing
	}
	f.Suggestion = Suggestion{
		Action:    "Shorten the critical section (move work that needs no protection out of it) or take the lock less often; if more goroutines run than there are CPUs, bound them to the CPUs so a holder is not preempted; if many goroutines share it over disjoint keys, stripe it.",
		Reasoning: reason,
	}
}

// missingForLocks says which inputs would sharpen a lock verdict.
func (g *goData) missingForLocks() string {
	var want []string
	if len(g.groups) == 0 || g.stateInferred {
		want = append(want, "a goroutine dump (debug=2)")
	}
	if !g.cpuGiven {
		want = append(want, "a CPU profile")
	}
	if !g.mutexSamples {
		want = append(want, "a mutex profile")
	}
	if len(want) == 0 {
		return ""
	}
	return "Taken over the same interval, " + strings.Join(want, " and ") + " would show what the holders do."
}

// ioVictims returns the Lock sites whose own critical sections showed no
// I/O, heaviest first.
func (l *goLock) ioVictims(h holderFacts) []*lockNode {
	var out []*lockNode
	for _, n := range l.waits {
		if !h.ioIn[n.fn()] {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if nodeWait(out[i]) != nodeWait(out[j]) {
			return nodeWait(out[i]) > nodeWait(out[j])
		}
		return out[i].waiters > out[j].waiters
	})
	return out
}

// ioEvidence adds what the dump and the CPU profile show of the I/O done
// inside the lock's critical sections.
func (g *goData) ioEvidence(h holderFacts, ev *[]Evidence, sources *int) {
	if h.inIO > 0 {
		gr := h.ioGroup
		at := gr.frames[h.ioAt]
		verb := "are"
		if h.inIO == 1 {
			verb = "is"
		}
		*ev = append([]Evidence{{Source: "goroutines", Text: fmt.Sprintf("%d %s inside the critical section %s in %s (state %s), called from %s",
			h.inIO, plural(int64(h.inIO), "goroutine"), verb, shortFunc(h.ioFrame), gr.state, funcAt(at.Func, at.File, at.Line))}}, *ev...)
	}
	if h.ioNS > 0 {
		*ev = append(*ev, Evidence{Source: "go-cpu", Text: fmt.Sprintf("%s of CPU (%d samples) inside the critical section is in I/O calls (%s); I/O mostly waits off-CPU, so its wall time under the lock is larger",
			fmtSeconds(seconds(h.ioNS)), h.ioNS/max(g.cpuPeriod, 1), topFuncs(h.ioFuncs, 3))})
		*sources++
	}
}

// ioName is the I/O call most seen under the lock.
func (h holderFacts) ioName() string {
	if h.ioFrame != "" {
		return shortFunc(h.ioFrame)
	}
	return shortFunc(topKey(h.ioFuncs))
}

func (g *goData) ioUnderLock(f *Finding, l *goLock, h holderFacts, victims []*lockNode, mean float64, counted bool, ev *[]Evidence, sources *int) {
	f.Kind = KindIOUnderLock
	top := victims[0]
	f.Point = top.point()
	who := participants(f.Participants, f.Population, "goroutines", counted, mean)
	f.Headline = fmt.Sprintf("%s wait for ONE lock held across I/O (%s): %s", who, h.ioName(), waitWhat(l, f.Point))
	g.ioEvidence(h, ev, sources)
	var ioSites []string
	for _, n := range l.waits {
		if h.ioIn[n.fn()] {
			ioSites = append(ioSites, shortFunc(n.fn()))
		}
	}
	for _, n := range l.releases {
		if h.ioIn[n.fn()] && !slices.Contains(ioSites, shortFunc(n.fn())) {
			ioSites = append(ioSites, shortFunc(n.fn()))
		}
	}
	sort.Strings(ioSites)
	f.Suggestion = Suggestion{
		Action: "Move the I/O off the lock: under the lock, snapshot the state (copy or marshal it) and stamp the snapshot with a sequence number; unlock; then write the snapshot outside the lock, serialized by a separate writer lock, and skip any snapshot older than the last one written so an older snapshot never overwrites a newer one.",
		Reasoning: fmt.Sprintf("Goroutines at %s, whose own critical section does no I/O, wait for the lock while %s %s it across %s: each such wait lasts as long as the I/O (write, fsync, rename), which grows with the data and the disk, not with the work the lock protects.",
			top.key, strings.Join(ioSites, " and "), map[bool]string{true: "holds", false: "hold"}[len(ioSites) == 1], h.ioName()),
		ExpectedGain: fmt.Sprintf("the hold shrinks to the snapshot's cost; most of the %s of waiting goes away", fmtSeconds(f.WaitSeconds)),
	}
}

// serializedIO reports a lock whose waiters all do I/O under it
// themselves: the lock serializes the I/O.
func (g *goData) serializedIO(f *Finding, l *goLock, h holderFacts, ev *[]Evidence, sources *int) {
	f.Kind = KindContention
	f.Headline = fmt.Sprintf("%s lost by goroutines waiting for each other's I/O under ONE lock: %s", fmtSeconds(f.WaitSeconds), waitWhat(l, f.Point))
	g.ioEvidence(h, ev, sources)
	f.Suggestion = Suggestion{
		Action:    "If the writes must stay ordered, coalesce them: let a waiting writer skip its write when a newer state has been written meanwhile (a sequence number), or batch pending writes into one; otherwise write outside the lock.",
		Reasoning: fmt.Sprintf("Every goroutine that waits for this lock does %s under it itself, so the lock serializes the I/O rather than stalling goroutines that need no I/O; the wait is the I/O's latency times the writers queued.", h.ioName()),
	}
}

// topKey is the key with the largest value, "" for an empty map.
func topKey(m map[string]int64) string {
	if keys := byCount(m); len(keys) > 0 {
		return keys[0]
	}
	return ""
}

// topFuncs names the n functions with the largest values, shortened.
func topFuncs(m map[string]int64, n int) string {
	keys := byCount(m)
	if len(keys) > n {
		keys = keys[:n]
	}
	for i, k := range keys {
		keys[i] = shortFunc(k)
	}
	return strings.Join(keys, ", ")
}

// runtimeLocks reports contention on the Go runtime's internal locks (the
// mutex profile's runtime.unlock and runtime._LostContendedRuntimeLock
// stacks) as its own kind, grouped by the runtime function that released
// the lock.
func (g *goData) runtimeLocks(a *analysis, totalUser int64) {
	var total int64
	for _, s := range g.mutex {
		if s.sc.class == classRuntimeLock {
			total += s.value
		}
	}
	for _, s := range g.mutex {
		if s.sc.class != classRuntimeLock {
			continue
		}
		name := "Go runtime lock released in " + shortFunc(s.key.fn)
		if s.key.fn == "(runtime)" {
			name = "Go runtime locks (contention recorded without stacks: runtime._LostContendedRuntimeLock)"
		}
		a.res.Locks = append(a.res.Locks, LockRow{Lock: LockID{Name: name}, Waits: uint64(s.count), WaitSeconds: seconds(s.value), Waker: &s.point})
		if !significantWait(s.value, g.duration) || float64(s.value) < minShareOfAllWaiting*float64(total+totalUser) {
			continue
		}
		mean := g.meanWaiting(s.value)
		f := Finding{
			Kind: KindRuntimeLock, Unit: "goroutines", Population: g.population,
			Point: s.point, Lock: &LockID{Name: name}, WaitSeconds: seconds(s.value),
			Participants: int(math.Ceil(mean)),
		}
		where := shortFunc(s.key.fn)
		if s.key.fn == "(runtime)" {
			where = "the runtime"
		}
		f.Headline = fmt.Sprintf("%s lost on a lock internal to the Go runtime in %s", fmtSeconds(f.WaitSeconds), where)
		if s.user != "" {
			f.Headline += fmt.Sprintf(" (reached from %s)", shortFunc(s.user))
		}
		t := fmt.Sprintf("the mutex profile records %s %s and %s of delay on a runtime lock released in %s",
			fmtCount(s.count), plural(s.count, "contention"), fmtSeconds(f.WaitSeconds), where)
		if mean > 0 {
			t += fmt.Sprintf(" (%s goroutines waiting on average)", fmtFloat(mean))
		}
		f.Evidence = []Evidence{{Source: "go-mutex", Text: t}}
		if s.user != "" {
			f.Evidence = append(f.Evidence, Evidence{Source: "go-mutex", Text: fmt.Sprintf("user code reaches it through %s; the lock itself belongs to the runtime, not to that code", s.user)})
		}
		f.Confidence = ConfidenceMedium
		f.Suggestion = Suggestion{
			Action:    "Nothing to change in your own locks: " + runtimeHint(s.point.Stack),
			Reasoning: "Since Go 1.22 the mutex profile also records contention on the runtime's internal locks (scheduler, channels, allocator, timers, semaphore tables). The waiting is real, but no sync.Mutex of the program is involved; only reducing the runtime work that takes the lock helps.",
		}
		finish(&f, g.duration, false)
		a.res.Findings = append(a.res.Findings, f)
	}
}

// runtimeHint suggests what reduces the runtime work behind a runtime lock,
// from the runtime functions on its stack.
func runtimeHint(stack []recording.Frame) string {
	for _, fr := range stack {
		fn := fr.Func
		switch {
		case strings.HasPrefix(fn, "runtime.chan"), strings.HasPrefix(fn, "runtime.sel"), fn == "runtime.closechan":
			return "many goroutines operate on one channel; give each worker its own channel or batch the messages."
		case strings.HasPrefix(fn, "runtime.sem"):
			return "the runtime's semaphore table is contended by sync primitives on hot addresses; fewer, less shared sync.Mutex/WaitGroup operations reduce it."
		case strings.Contains(fn, "mheap") || strings.Contains(fn, "mcentral") || strings.HasPrefix(fn, "runtime.malloc") || strings.Contains(fn, "gcStart") || strings.Contains(fn, "sweep"):
			return "the allocator or the garbage collector takes it; allocate less (reuse buffers) or raise GOGC/GOMEMLIMIT."
		case strings.Contains(fn, "timer"):
			return "timers take it; create fewer timers (reuse a time.Timer rather than time.After in loops)."
		case strings.Contains(fn, "sched") || strings.Contains(fn, "globrunq") || strings.HasPrefix(fn, "runtime.newproc"):
			return "the scheduler takes it; start fewer short-lived goroutines (use a worker pool)."
		}
	}
	return "reduce the runtime work that takes it (allocation, goroutine churn, channel traffic, timers)."
}
