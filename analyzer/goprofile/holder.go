package goprofile

import (
	"github.com/contend-dev/contend/analyzer/core"
)

// holderByPackage is how a holder found by packageHolder is said in the
// evidence.
const holderByPackage = "it waits for no lock and is the one goroutine of the waiters' package in I/O, while none waits for the lock's write side"

// packageHolder looks in a goroutine dump for the holder of a lock whose
// waiters name neither its address nor its holder's type: the goroutine
// that holds the write side of an RWMutex (or a Mutex) while it writes,
// from a method of another type of the same package ((*tx).commit
// holding (*store).mu while readers queue in (*store).lookup). Such a
// holder waits on nothing, so only where it is tells it.
//
// The inference is the weakest of dumpHolder's, and stands only where
// nothing else can hold the lock:
//   - every waiter waits for the read side, or every one for a Mutex, and
//     no goroutine of the waiters' package waits for the write side of
//     any RWMutex (the dump does not say which one it waits for): a
//     reader of an RWMutex blocks only while a writer holds the lock or
//     waits for it, and a waiting writer would show in the dump, so a
//     writer holds it and is running, in a system call or in I/O wait;
//   - exactly one goroutine of the dump runs code of the waiters' package
//     above an I/O call, not waiting for a lock: with two, either could be
//     writing under another of the package's locks, and the finding would
//     blame the wrong one.
//
// It returns the goroutine's group, the index of its frame that holds the
// lock (the root-most method of the package above the I/O, else the
// leaf-most function of the package) and the index of the I/O frame; nil
// when no goroutine qualifies.
func (g *Data) packageHolder(l *goLock) (gr *gGroup, at, io int) {
	pkgs := map[string]bool{}
	for _, n := range l.waits {
		if n.flavor == core.FlavorRWWrite && n.waiters > 0 {
			return nil, -1, -1
		}
		if p := core.GoPackage(n.fn()); p != "" {
			pkgs[p] = true
		}
	}
	if len(pkgs) != 1 {
		return nil, -1, -1
	}
	for _, c := range g.groups {
		if c.sc.Class == core.ClassLock && c.sc.Flavor == core.FlavorRWWrite && c.pi >= 0 && pkgs[core.GoPackage(c.frames[c.pi].Func)] {
			return nil, -1, -1 // a writer of the package waits: maybe for this lock
		}
	}
	found := 0
	for _, c := range g.groups {
		if c.sc.Class == core.ClassLock || c.sc.Class == core.ClassUnlock || !holderState(c.state) {
			continue
		}
		leaf, root := -1, -1
		for k, f := range c.frames {
			if !pkgs[core.GoPackage(f.Func)] {
				continue
			}
			if leaf < 0 {
				leaf = k
			}
			if core.ReceiverType(core.EnclosingFunc(f.Func)) != "" {
				root = k
			}
		}
		if leaf < 0 {
			continue
		}
		i := core.IOIndex(c.frames, leaf)
		if i < 0 {
			continue
		}
		found += c.count
		if root < 0 {
			root = leaf
		}
		gr, at, io = c, root, i
	}
	if found != 1 {
		return nil, -1, -1
	}
	return gr, at, io
}

// packageHolderIO notes the holder packageHolder finds, if any, as the
// goroutine in I/O under the lock.
func (g *Data) packageHolderIO(l *goLock, h *holderFacts) {
	gr, at, io := g.packageHolder(l)
	if gr == nil {
		return
	}
	h.inIO = gr.count
	h.ioGroup, h.ioFrame, h.ioAt = gr, gr.frames[io].Func, at
	h.holderFn = core.EnclosingFunc(gr.frames[at].Func)
	h.how = holderByPackage
	h.ioIn[h.holderFn] = true
}
