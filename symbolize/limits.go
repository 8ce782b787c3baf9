package symbolize

import (
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
)

// Budgets of the memory that tables derived from a target's objects may
// take: sections inflated from compressed DWARF, the DWARF index built
// over .debug_info and .debug_line, symbol tables and unwind indexes.
// Mapped sections cost page cache, not these budgets. A target controls
// its objects, so each of these tables is bounded: an object over its
// budget keeps what it has and loses the rest (symbols without inline
// frames, say), and a warning says so.
var (
	// objectBudget: per object. The compressed DWARF of a large C++
	// program inflates to a few hundred MiB; its index and symbols are a
	// fraction of that: 512 MiB holds all of such an object's tables.
	objectBudget int64 = 512 << 20
	// processBudget: for all objects of one process (or one File), so
	// that a process mapping many crafted objects is bounded too.
	processBudget int64 = 1 << 30
)

// maxNotedProblems bounds the distinct problems a Process keeps for its
// warnings; past it only the count grows.
const maxNotedProblems = 8

// limits is the budget and the record of problems shared by the objects
// of one Process or File.
type limits struct {
	mu   sync.Mutex
	left int64
	// faults counts lookups that panicked on malformed data and gave a
	// raw address instead; firstFault describes the first.
	faults     int
	firstFault string
	// over names the objects that went over a budget, with what they
	// lost.
	over []string
}

func newLimits() *limits { return &limits{left: processBudget} }

// objBudget is one object's part of the budget, drawn from its process's.
type objBudget struct {
	name string
	left int64
	pool *limits
	// parent, when set, makes this a part of parent's budget that can be
	// given back whole (the DWARF index, dropped when idle): takes are
	// charged to parent and counted in spent.
	parent *objBudget
	spent  int64
}

// part returns a budget drawn from b whose charges refund gives back.
func (b *objBudget) part() *objBudget {
	if b == nil {
		return nil
	}
	return &objBudget{name: b.name, parent: b}
}

// refund gives back to the parent budget and the pool what a part took.
func (b *objBudget) refund() {
	if b == nil || b.parent == nil || b.spent == 0 {
		return
	}
	b.parent.left += b.spent
	if b.parent.pool != nil {
		b.parent.pool.mu.Lock()
		b.parent.pool.left += b.spent
		b.parent.pool.mu.Unlock()
	}
	b.spent = 0
}

func (l *limits) forObject(name string) *objBudget {
	return &objBudget{name: name, left: objectBudget, pool: l}
}

// take charges n bytes to the object and its process, and reports false
// (charging nothing) when either budget would be exceeded; what is
// refused is noted once per object and use.
func (b *objBudget) take(n int64, what string) bool {
	if b == nil {
		return true
	}
	if b.parent != nil {
		if !b.parent.take(n, what) {
			return false
		}
		b.spent += n
		return true
	}
	if n < 0 || n > b.left {
		b.pool.note(fmt.Sprintf("%s: %s needs more than its %d MiB budget", b.name, what, objectBudget>>20))
		return false
	}
	b.pool.mu.Lock()
	ok := n <= b.pool.left
	if ok {
		b.pool.left -= n
	}
	b.pool.mu.Unlock()
	if !ok {
		b.pool.note(fmt.Sprintf("%s: %s does not fit in what is left of the process's %d MiB budget", b.name, what, processBudget>>20))
		return false
	}
	b.left -= n
	return true
}

// note records a problem for Warnings (once).
func (l *limits) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.over {
		if o == s {
			return
		}
	}
	if len(l.over) < maxNotedProblems {
		l.over = append(l.over, s)
	}
}

// fault records a lookup that panicked; where names the object.
func (l *limits) fault(where string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults++
	if l.firstFault == "" {
		l.firstFault = where + ": " + err.Error()
	}
}

// warnings returns the problems seen so far as one-line notes for a
// recording's warnings.
func (l *limits) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	if l.faults > 0 {
		s := "lookup"
		if l.faults > 1 {
			s = "lookups"
		}
		out = append(out, fmt.Sprintf("symbolize: %d %s hit malformed data in the target's objects and gave raw addresses (first: %s)", l.faults, s, l.firstFault))
	}
	over := append([]string(nil), l.over...)
	sort.Strings(over)
	for _, o := range over {
		out = append(out, "symbolize: "+o+"; frames there lose what it would have given")
	}
	return out
}

// guarded runs f, which parses data a target controls (its ELF objects,
// their DWARF and Go tables), and returns any panic as an error: a
// malformed table must cost a lookup, never contend itself. Memory faults
// are among them: objects are memory-mapped, and one truncated while
// mapped (a file rewritten in place rather than replaced) raises SIGBUS
// on access, which becomes a panic here.
func guarded(f func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = msg[:i]
			}
			err = fmt.Errorf("%s", msg)
		}
	}()
	f()
	return nil
}
