//go:build linux && amd64

package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/contend-dev/contend/collector/probes"
)

// sharedMaps are declared by every family (bpf/helpers.bpf.h) and created
// once, so that all families share the target set, the stacks, the
// counters, the event log, the calls in progress and the interrupt depth.
var sharedMaps = []string{"ct_targets", "ct_gen", "ct_events", "ct_counters", "ct_stacks", "ct_named", "ct_buckets", "ct_scratch", "ct_stackbuf", "ct_call_start", "ct_irq"}

// probeObject is one compiled BPF object: the families it serves and
// which of its programs a recording needs.
type probeObject struct {
	doctorFamily
	// families lists the probe families the object serves; it is loaded
	// when one of them is selected, or always when lifecycle is set.
	families []string
	// lifecycle: the object also keeps the target set and per-thread
	// state current, whatever the families (sched.bpf.c).
	lifecycle bool
	// aggregates names the object's aggregate maps (each in two
	// generations, name_0 and name_1), drained per family.
	aggregates map[string]string
	// needs says whether program prog is needed under cfg.
	needs func(prog string, cfg tracerConfig) bool
}

// objects lists the BPF objects in attach order (which is also the
// doctor's display order). A new probe family is a bpf/<family>.bpf.c, its
// bpf2go line in collector/probes/gen.go, an entry here and, for a new
// kind of attach point, a case in bpfTracer.attach.
var objects = []probeObject{
	{
		doctorFamily: doctorFamily{"futex", "futex waits that sleep and wakes that wake a thread, per lock and stack (from the scheduler: no syscall is hooked)", probes.LoadFutex},
		families:     []string{ProbeFutex},
		aggregates:   map[string]string{"ct_futex_waits": ProbeFutex, "ct_futex_locks": ProbeFutex, "ct_futex_wakes": ProbeFutex},
		needs:        func(string, tracerConfig) bool { return true },
	},
	{
		doctorFamily: doctorFamily{"io", "I/O syscalls that sleep, per stack (from the scheduler: no syscall is hooked)", probes.LoadIo},
		families:     []string{ProbeIO},
		aggregates:   map[string]string{"ct_io": ProbeIO},
		needs:        func(string, tracerConfig) bool { return true },
	},
	{
		doctorFamily: doctorFamily{"sched", "off-CPU time by state, wake edges, blocking-call starts, sleeps in the kernel with their kernel stack and file, failed non-blocking file lock attempts, thread and process lifecycle", probes.LoadSched},
		families:     []string{ProbeSched},
		lifecycle:    true,
		aggregates:   map[string]string{"ct_offcpu": ProbeSched, "ct_offcpu_spill": ProbeSched, "ct_wakes": ProbeSched},
		needs: func(prog string, cfg tracerConfig) bool {
			switch prog {
			case "ct_sched_switch":
				// It also starts the futex waits and I/O calls that
				// sleep.
				return cfg.probes[ProbeSched] || cfg.probes[ProbeFutex] || cfg.probes[ProbeIO]
			case "ct_proc_exit", "ct_target_update":
				return true
			case "ct_proc_fork", "ct_proc_exec":
				return cfg.mode != targetModePIDs
			case "ct_sched_waking", "ct_fcntl_setlk", "ct_flock_try":
				return cfg.probes[ProbeSched]
			}
			// The rest keep the interrupt depth (ct_irq), by which the
			// sched_waking probes of this family and of the futex
			// family tell a wake by a task from one by an interrupt.
			return cfg.probes[ProbeSched] || cfg.probes[ProbeFutex]
		},
	},
	{
		doctorFamily: doctorFamily{"oncpu", "on-CPU samples (perf cpu-clock)", probes.LoadOncpu},
		families:     []string{ProbeOnCPU},
		aggregates:   map[string]string{"ct_oncpu": ProbeOnCPU},
		needs:        func(string, tracerConfig) bool { return true },
	},
	{
		doctorFamily: doctorFamily{"gosync", "Go sync.Mutex and sync.RWMutex waits per goroutine stack (uprobes on a Go target's lock slow paths)", probes.LoadGosync},
		families:     []string{ProbeGoSync},
		aggregates:   map[string]string{"ct_gosync": ProbeGoSync},
		needs:        func(string, tracerConfig) bool { return true },
	},
}

// selected reports whether the object is loaded under cfg.
func (o probeObject) selected(cfg tracerConfig) bool {
	return o.lifecycle || slices.ContainsFunc(o.families, func(f string) bool { return cfg.probes[f] })
}

// bpfTracer is the BPF implementation of tracer.
type bpfTracer struct {
	// scratch holds each drained map's batch buffers (drainMap), reused
	// from one drain to the next under drainMu: allocated anew at every
	// drain, they took about half of the CPU contend record spent making
	// large slices (CPU profile, 100,000 futex calls a second).
	scratch  map[*ebpf.Map]any
	colls    map[string]*ebpf.Collection
	shared   map[string]*ebpf.Map
	maps     map[string]*ebpf.Map // every map by name
	aggs     map[string]string    // aggregate map (without generation) -> family
	probes   map[string]bool
	counters []string // kernel counter names by index
	reader   *ringbuf.Reader
	// flushed is closed by flush: run reads what the ring holds and
	// returns.
	flushed   chan struct{}
	flushOnce sync.Once
	update    *ebpf.Program // ct_target_update
	gen       uint32        // generation the probes write now

	drainMu sync.Mutex
	// statsAt is when the programs' statistics were last read, misses
	// their recursion misses then; noBatch is set on a kernel without
	// batch map operations. Guarded by drainMu.
	statsAt time.Time
	misses  uint64
	noBatch bool
	// detached is set once the probes are off: the next drain is the
	// last. Guarded by mu.
	detached bool
	mu       sync.Mutex
	links    []link.Link
	// goLinks are the Go lock uprobes, apart so that detachGo can take
	// them off alone (goProbeBudget).
	goLinks []link.Link
	// goCallers are the keys attachGo stored in ct_gosync_callers,
	// deleted by detachGo.
	goCallers []goCallerKey
	perfFDs   []int
	// notes says what the probes could not record on this kernel while
	// the rest records (an optional program that did not load).
	notes []string
}

// optionalPrograms are programs a recording does without when the kernel
// lacks their tracepoint, with what is then missing.
var optionalPrograms = map[string]string{
	"ct_fcntl_setlk": "failed non-blocking fcntl lock attempts (F_SETLK, F_OFD_SETLK) are not recorded",
	"ct_flock_try":   "failed non-blocking flock attempts (LOCK_NB) are not recorded",
}

// newTracer loads the families in cfg.probes, configured for cfg, and
// attaches them. The target set starts empty: setTarget fills it. On error
// nothing stays loaded.
func newTracer(cfg tracerConfig) (_ tracer, err error) {
	t := &bpfTracer{colls: map[string]*ebpf.Collection{}, shared: map[string]*ebpf.Map{}, maps: map[string]*ebpf.Map{}, aggs: map[string]string{}, probes: cfg.probes, flushed: make(chan struct{})}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	if !slices.ContainsFunc(AllProbes, func(f string) bool { return cfg.probes[f] }) {
		return nil, errors.New("no probe family selected")
	}
	specs, order, err := t.loadSpecs(cfg)
	if err != nil {
		return nil, err
	}
	first := specs[order[0]]
	if t.counters, err = counterNames(first); err != nil {
		return nil, err
	}
	for _, name := range sharedMaps {
		m, err := ebpf.NewMap(first.Maps[name])
		if err != nil {
			return nil, fmt.Errorf("create map %s: %w", name, classify(err))
		}
		t.shared[name] = m
	}
	for _, name := range order {
		if err := t.loadCollection(name, specs[name]); err != nil {
			return nil, err
		}
	}
	if t.update == nil {
		return nil, errors.New("load sched probes: no ct_target_update program")
	}
	if cfg.mode == targetModeCgroup {
		if err := t.maps["ct_cgroup"].Put(uint32(0), uint32(cfg.cgroupFD)); err != nil {
			return nil, fmt.Errorf("set target cgroup: %w", classify(err))
		}
	}
	if t.reader, err = ringbuf.NewReader(t.shared["ct_events"]); err != nil {
		return nil, fmt.Errorf("open ring buffer: %w", classify(err))
	}
	for _, name := range order {
		if err := t.attach(name, cfg); err != nil {
			return nil, fmt.Errorf("attach %s probes: %w", name, err)
		}
	}
	return t, nil
}

// loadSpecs reads and configures the object of every family cfg selects,
// keeping only the programs cfg needs, and records in t the aggregate
// maps of the selected families and a note per optional program the
// kernel lacks. It returns the specs by object name and the names in the
// order of objects, the order they load and attach in.
func (t *bpfTracer) loadSpecs(cfg tracerConfig) (map[string]*ebpf.CollectionSpec, []string, error) {
	specs := map[string]*ebpf.CollectionSpec{}
	var order []string
	for _, obj := range objects {
		if !obj.selected(cfg) {
			continue
		}
		spec, err := obj.load()
		if err != nil {
			return nil, nil, fmt.Errorf("load %s probes: %w", obj.name, err)
		}
		if err := configure(spec, cfg); err != nil {
			return nil, nil, fmt.Errorf("configure %s probes: %w", obj.name, err)
		}
		for name := range spec.Programs {
			if !obj.needs(name, cfg) {
				delete(spec.Programs, name)
			}
		}
		t.notes = append(t.notes, dropMissingOptional(spec)...)
		spec.Maps["ct_events"].MaxEntries = ringBufferSize
		specs[obj.name] = spec
		order = append(order, obj.name)
		for m, fam := range obj.aggregates {
			if cfg.probes[fam] {
				t.aggs[m] = fam
			}
		}
	}
	return specs, order, nil
}

// loadCollection loads the object called name from spec into the kernel,
// over the maps in t.shared, and records its collection, maps and target
// update program in t. When the kernel refuses it and it has optional
// programs, it drops them, notes why, and loads the rest.
func (t *bpfTracer) loadCollection(name string, spec *ebpf.CollectionSpec) error {
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: t.shared})
	if err != nil && hasOptional(spec) {
		// A kernel whose verifier refuses an optional program (a
		// struct file_lock the probes cannot read) records the rest.
		for p, what := range optionalPrograms {
			if spec.Programs[p] != nil {
				delete(spec.Programs, p)
				t.notes = append(t.notes, fmt.Sprintf("%s: the kernel refused the probe: %v", what, firstLine(err)))
			}
		}
		coll, err = ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: t.shared})
	}
	if err != nil {
		return fmt.Errorf("load %s probes: %w", name, classify(err))
	}
	t.colls[name] = coll
	for mn, m := range coll.Maps {
		t.maps[mn] = m
	}
	if p := coll.Programs["ct_target_update"]; p != nil {
		t.update = p
	}
	return nil
}

// configure sets the volatile constants a family's object declares.
func configure(spec *ebpf.CollectionSpec, cfg tracerConfig) error {
	evIv, evTol := bucketParams(eventRate, eventBurst, cfg.ncpu)
	wIv, wTol := bucketParams(windowRate, windowBurst, cfg.ncpu)
	var comm [16]byte
	copy(comm[:15], cfg.comm)
	vals := map[string]any{
		"event_interval_ns":   evIv,
		"event_tolerance_ns":  evTol,
		"window_interval_ns":  wIv,
		"window_tolerance_ns": wTol,
		"stack_threshold_ns":  uint64(cfg.stackThreshold),
		"io_threshold_ns":     uint64(cfg.ioThreshold),
		"runq_event_ns":       uint64(runqEventThreshold),
		"dsleep_event_ns":     uint64(dsleepEventThreshold),
		"target_mode":         uint32(cfg.mode),
		"target_comm":         comm,
	}
	for _, f := range AllProbes {
		vals[f+"_enabled"] = cfg.probes[f]
	}
	for name, v := range vals {
		vs, ok := spec.Variables[name]
		if !ok {
			continue
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// counterNames reads enum ct_counter from the object's BTF: index -> name
// ("CT_DROP_RINGBUF_EVENT" becomes "drop_ringbuf_event").
func counterNames(spec *ebpf.CollectionSpec) ([]string, error) {
	var e *btf.Enum
	if err := spec.Types.TypeByName("ct_counter", &e); err != nil {
		return nil, fmt.Errorf("counter names: %w", err)
	}
	var names []string
	for _, v := range e.Values {
		if v.Name == "CT_NR_COUNTERS" {
			continue
		}
		for uint64(len(names)) <= v.Value {
			names = append(names, "")
		}
		names[v.Value] = strings.ToLower(strings.TrimPrefix(v.Name, "CT_"))
	}
	return names, nil
}

// classify wraps load and attach errors in the collector's sentinels.
func classify(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("%w: the verifier rejected a program: %w", ErrKernel, err)
	}
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w (CAP_BPF and CAP_PERFMON, or root): %w", ErrPermission, err)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: %w", ErrKernel, err)
	}
	return err
}

func (t *bpfTracer) attach(family string, cfg tracerConfig) error {
	coll := t.colls[family]
	names := sortedKeys(coll.Programs)
	// Exit programs of interrupt depth counters (ct_*_out) go first: an
	// exit seen without its entry is ignored, while an entry seen without
	// its exit would leave a CPU's depth raised for the whole recording.
	sort.SliceStable(names, func(i, j int) bool {
		return strings.HasSuffix(names[i], "_out") && !strings.HasSuffix(names[j], "_out")
	})
	for _, name := range names {
		prog := coll.Programs[name]
		switch prog.Type() {
		case ebpf.Tracing:
			l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
			if err != nil {
				if what, ok := optionalPrograms[name]; ok {
					t.notes = append(t.notes, fmt.Sprintf("%s: attach %s: %v", what, name, classify(err)))
					continue
				}
				return fmt.Errorf("%s: %w", name, classify(err))
			}
			t.addLink(l)
		case ebpf.PerfEvent:
			if err := t.attachPerCPU(prog, cfg); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case ebpf.Syscall:
			// Run on demand (setTarget), never attached.
		case ebpf.Kprobe:
			// Uprobes, attached per Go process (attachGo).
		default:
			return fmt.Errorf("%s: unexpected program type %s", name, prog.Type())
		}
	}
	return nil
}

// attachPerCPU opens a cpu-clock perf event on every CPU at cfg.onCPUHz
// and links prog to each.
func (t *bpfTracer) attachPerCPU(prog *ebpf.Program, cfg tracerConfig) error {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	attached := 0
	for cpu := 0; cpu < ncpu; cpu++ {
		attr := cpuClockAttr(cfg.onCPUHz)
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if errors.Is(err, unix.ENODEV) {
			continue // offline CPU
		}
		if err != nil {
			return fmt.Errorf("open cpu-clock event on CPU %d: %w", cpu, classify(err))
		}
		t.mu.Lock()
		t.perfFDs = append(t.perfFDs, fd)
		t.mu.Unlock()
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			return fmt.Errorf("link cpu-clock event on CPU %d: %w", cpu, classify(err))
		}
		t.addLink(l)
		attached++
	}
	if attached == 0 {
		return fmt.Errorf("%w: no CPU accepted a cpu-clock event", ErrKernel)
	}
	return nil
}

// attachGo attaches the Go lock probes to the Go executable exe of
// process pid, filtered to pid, as a says: the park/wake probes
// (ct_gosync_wake first, so that every wait parked after the park probe
// is in place has its end seen), after the lock wrappers' return
// addresses are in ct_gosync_callers; or ct_gosync_enter at each slow
// path's entry (goFunc.Entry) and ct_gosync_exit at each of its RET
// instructions. On error the uprobes attached so far stay in the
// tracer's links, detached with the others.
func (t *bpfTracer) attachGo(pid int, exe string, a goAttach) error {
	coll := t.colls["gosync"]
	if coll == nil {
		return errors.New("the gosync probes are not loaded")
	}
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return fmt.Errorf("open %s: %w", exe, err)
	}
	at := func(prog *ebpf.Program, f goFunc, off uint64) error {
		l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: f.Offset, Offset: off, PID: pid, Cookie: uint64(f.Kind)})
		if err != nil {
			return fmt.Errorf("uprobe %s+0x%x in %s: %w", f.Name, off, exe, classify(err))
		}
		t.mu.Lock()
		t.goLinks = append(t.goLinks, l)
		t.mu.Unlock()
		return nil
	}
	if a.parkWake {
		callers := coll.Maps["ct_gosync_callers"]
		for _, r := range a.rets {
			k := goCallerKey{Ret: r.Addr, PID: uint32(pid)}
			if err := callers.Put(&k, &r.Kind); err != nil {
				return fmt.Errorf("store the Go lock wrappers' return addresses: %w", err)
			}
			t.mu.Lock()
			t.goCallers = append(t.goCallers, k)
			t.mu.Unlock()
		}
		if err := at(coll.Programs["ct_gosync_wake"], a.wake, a.wake.Entry); err != nil {
			return err
		}
		return at(coll.Programs["ct_gosync_park"], a.park, a.park.Entry)
	}
	enter, exit := coll.Programs["ct_gosync_enter"], coll.Programs["ct_gosync_exit"]
	for _, f := range a.funcs {
		if err := at(enter, f, f.Entry); err != nil {
			return err
		}
		for _, r := range f.Rets {
			if err := at(exit, f, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// detachGo closes the Go lock probes' links.
func (t *bpfTracer) detachGo() error {
	t.mu.Lock()
	links := t.goLinks
	t.goLinks = nil
	callers := t.goCallers
	t.goCallers = nil
	t.mu.Unlock()
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	if coll := t.colls["gosync"]; coll != nil {
		m := coll.Maps["ct_gosync_callers"]
		for i := range callers {
			if err := m.Delete(&callers[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				errs = append(errs, err)
			}
		}
		// A wait parked before the probes came off ends unseen; its
		// start would otherwise be matched, after they are put back, by
		// the next wake of the same goroutine with the same sudog (the
		// runtime reuses both).
		inflight := coll.Maps["ct_gosync_inflight"]
		var keys []goGKey
		var prev any
		for len(keys) < int(inflight.MaxEntries()) {
			var k goGKey
			if inflight.NextKey(prev, &k) != nil {
				break
			}
			keys = append(keys, k)
			prev = &keys[len(keys)-1]
		}
		for i := range keys {
			if err := inflight.Delete(&keys[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("detach Go lock probes: %w", err)
	}
	return nil
}

// kernelNotes returns what the probes cannot record on this kernel.
func (t *bpfTracer) kernelNotes() []string { return t.notes }

// dropMissingOptional removes from spec the optional programs whose
// tracepoint this kernel lacks, and says what is then not recorded.
func dropMissingOptional(spec *ebpf.CollectionSpec) []string {
	var notes []string
	for _, name := range sortedKeys(spec.Programs) {
		what, ok := optionalPrograms[name]
		if !ok {
			continue
		}
		if err := haveTracepoint(spec.Programs[name].AttachTo); err != nil {
			delete(spec.Programs, name)
			notes = append(notes, fmt.Sprintf("%s: %v", what, err))
		}
	}
	return notes
}

// hasOptional reports whether spec holds one of optionalPrograms.
func hasOptional(spec *ebpf.CollectionSpec) bool {
	for p := range optionalPrograms {
		if spec.Programs[p] != nil {
			return true
		}
	}
	return false
}

// firstLine returns the first line of err's message (a verifier error
// runs to hundreds of lines).
func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// haveTracepoint reports, as an error, why the kernel has no raw
// tracepoint tp (its btf_trace_ type is missing from the kernel's BTF),
// nil when it has one: a tp_btf program for a missing tracepoint fails to
// load, with the rest of its object.
func haveTracepoint(tp string) error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("no kernel BTF: %w", err)
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+tp, &td); err != nil {
		return fmt.Errorf("no tracepoint %s in this kernel: %w", tp, err)
	}
	return nil
}

func (t *bpfTracer) addLink(l link.Link) {
	t.mu.Lock()
	t.links = append(t.links, l)
	t.mu.Unlock()
}

func (t *bpfTracer) counterNames() []string {
	return append(append([]string(nil), t.counters...), "drop_prog_recursion")
}

// setTarget runs ct_target_update, which changes the process's bit with
// the atomic operations the lifecycle probes use.
func (t *bpfTracer) setTarget(pid int, on bool) error {
	if pid <= 0 || pid >= 1<<22 {
		return fmt.Errorf("target pid %d out of range", pid)
	}
	arg := targetArg{PID: uint32(pid)}
	if on {
		arg.On = 1
	}
	ctx, err := binary.Append(nil, binary.LittleEndian, arg)
	if err != nil {
		return err
	}
	if _, err := t.update.Run(&ebpf.RunOptions{Context: ctx}); err != nil {
		return fmt.Errorf("update target set for pid %d: %w", pid, classify(err))
	}
	return nil
}

func (t *bpfTracer) silence(pids []int) error {
	// Only their words (64 processes each): any other process recorded
	// in the same words stops too.
	keys := make([]uint32, 0, len(pids))
	for _, p := range pids {
		keys = append(keys, uint32(p)>>6)
	}
	slices.Sort(keys)
	return t.clearTargets(slices.Compact(keys))
}

func (t *bpfTracer) silenceAll() error {
	keys := make([]uint32, t.shared["ct_targets"].MaxEntries())
	for i := range keys {
		keys[i] = uint32(i)
	}
	return t.clearTargets(keys)
}

// clearTargets zeroes the target set's words at keys.
func (t *bpfTracer) clearTargets(keys []uint32) error {
	if len(keys) == 0 {
		return nil
	}
	m := t.shared["ct_targets"]
	if _, err := m.BatchUpdate(keys, make([]uint64, len(keys)), nil); err != nil {
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("clear the target set: %w", err)
		}
		for _, k := range keys {
			if err := m.Put(k, uint64(0)); err != nil {
				return fmt.Errorf("clear the target set: %w", err)
			}
		}
	}
	return nil
}

// membarrierCmdGlobal is MEMBARRIER_CMD_GLOBAL (linux/membarrier.h): wait
// for an RCU grace period (synchronize_rcu).
const membarrierCmdGlobal = 1

// settlePrograms returns once every probe that may have read the aggregate
// generation before a flip has finished. Each probe runs inside an RCU
// read-side section (a tracepoint runs its handlers with preemption
// disabled, and the kernel wraps every tracing program in rcu_read_lock),
// so one grace period after the flip is the exact bound, however long a
// program was stopped mid-run (on a VM the host can take a vCPU away for
// longer than any fixed wait). membarrier(MEMBARRIER_CMD_GLOBAL) waits
// for a grace period, 8-20 ms here; where it is refused (nohz_full CPUs)
// a fixed wait is the fallback.
func settlePrograms() {
	if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0); errno != 0 {
		time.Sleep(drainSettle)
	}
}

func (t *bpfTracer) drain() (*drained, error) {
	t.drainMu.Lock()
	defer t.drainMu.Unlock()
	if t.scratch == nil {
		t.scratch = map[*ebpf.Map]any{}
	}
	old := t.gen
	if err := t.shared["ct_gen"].Put(uint32(0), 1-old); err != nil {
		return nil, fmt.Errorf("flip aggregate generation: %w", err)
	}
	t.gen = 1 - old
	settlePrograms()
	d := &drained{agg: newAggregates(), counters: map[string]uint64{}}
	if err := t.drainAggregates(d.agg, fmt.Sprintf("_%d", old)); err != nil {
		return nil, err
	}
	// Stacks after the aggregates: a program stores a stack before the
	// aggregate that refers to it.
	if err := drainMap(t.scratch, t.shared["ct_stacks"], func(h uint64, v stackVal) {
		d.stacks = append(d.stacks, storedStack{hash: h, pid: v.PID, pcs: v.frames()})
	}); err != nil {
		return nil, fmt.Errorf("drain ct_stacks: %w", err)
	}
	open, err := t.openCalls()
	if err != nil {
		return nil, err
	}
	d.open = open
	d.counters["drop_prog_recursion"] = t.recursionMisses()
	sums, err := t.readCounters()
	if err != nil {
		return nil, err
	}
	for i, name := range t.counters {
		if name != "" {
			d.counters[name] = sums[i]
		}
	}
	return d, nil
}

// drainAggregates reads and empties the aggregate maps of the attached
// families, those of the generation whose names end in suffix, adding
// their entries into agg.
func (t *bpfTracer) drainAggregates(agg *aggregates, suffix string) error {
	for name := range t.aggs {
		m := t.maps[name+suffix]
		var err error
		switch name {
		case "ct_futex_waits":
			err = drainMap(t.scratch, m, func(k waitKey, v aggVal) { agg.waits[k] = addAgg(agg.waits[k], v) })
		case "ct_futex_locks":
			err = drainMap(t.scratch, m, func(k lockKey, v lockVal) { agg.locks[k] = addLock(agg.locks[k], v) })
		case "ct_futex_wakes":
			err = drainMap(t.scratch, m, func(k wakeKey, v wakeVal) { agg.wakes[k] = addWake(agg.wakes[k], v) })
		case "ct_offcpu", "ct_offcpu_spill":
			// The overflow's keys carry stackSpilled, never a hash:
			// they cannot collide with ct_offcpu's.
			err = drainMap(t.scratch, m, func(k offcpuKey, v offcpuVal) { agg.offcpu[k] = addOffcpu(agg.offcpu[k], v) })
		case "ct_wakes":
			err = drainMap(t.scratch, m, func(k edgeKey, v uint64) { agg.edges[k] += v })
		case "ct_oncpu":
			err = drainMap(t.scratch, m, func(k oncpuKey, v oncpuVal) { agg.oncpu[k] = addOncpu(agg.oncpu[k], v) })
		case "ct_io":
			err = drainMap(t.scratch, m, func(k ioKey, v aggVal) { agg.io[k] = addAgg(agg.io[k], v) })
		case "ct_gosync":
			err = drainMap(t.scratch, m, func(k goSyncKey, v aggVal) { agg.gosync[k] = addAgg(agg.gosync[k], v) })
		default:
			err = fmt.Errorf("no reader for map %s", name)
		}
		if err != nil {
			return fmt.Errorf("drain %s: %w", name+suffix, err)
		}
	}
	return nil
}

// recursionMisses returns the programs' recursion misses: the kernel
// skips a program that would run while it already runs on that CPU (a
// tracepoint hit from an interrupt inside it), and each skip is an event
// lost. It reads them once per statsEvery and at the last drain, one
// system call per program, and returns the last figure read in between.
func (t *bpfTracer) recursionMisses() uint64 {
	t.mu.Lock()
	last := t.detached
	t.mu.Unlock()
	if last || time.Since(t.statsAt) >= statsEvery {
		var misses uint64
		for _, c := range t.colls {
			for _, p := range c.Programs {
				if st, err := p.Stats(); err == nil {
					misses += st.RecursionMisses
				}
			}
		}
		t.misses, t.statsAt = misses, time.Now()
	}
	return t.misses
}

// statsEvery is how often a drain reads the programs' statistics (their
// recursion misses): 25 programs cost 25 system calls, a quarter of a
// drain's, for a counter that is rarely anything but zero.
const statsEvery = 2 * time.Second

// readCounters returns the kernel counters summed over the CPUs, by index,
// in one batch read of the per-CPU array where the kernel has batch
// operations (one system call a drain instead of one per counter), else
// one lookup per counter.
func (t *bpfTracer) readCounters() ([]uint64, error) {
	m := t.shared["ct_counters"]
	n := len(t.counters)
	sums := make([]uint64, n)
	if !t.noBatch {
		ncpu, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, fmt.Errorf("read counters: %w", err)
		}
		keys := make([]uint32, n)
		vals := make([]uint64, n*ncpu)
		var cursor ebpf.MapBatchCursor
		got, err := m.BatchLookup(&cursor, keys, vals, nil)
		if errors.Is(err, ebpf.ErrKeyNotExist) && got == n {
			err = nil
		}
		switch {
		case err == nil && got == n:
			for i := range got {
				k := keys[i]
				if int(k) < n {
					for _, v := range vals[i*ncpu : (i+1)*ncpu] {
						sums[k] += v
					}
				}
			}
			return sums, nil
		case errors.Is(err, ebpf.ErrNotSupported):
			t.noBatch = true
		case err != nil:
			return nil, fmt.Errorf("read counters: %w", err)
		default:
			return nil, fmt.Errorf("read counters: %d of %d in one batch", got, n)
		}
	}
	var perCPU []uint64
	for i, name := range t.counters {
		if name == "" {
			continue
		}
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("read counter %s: %w", name, err)
		}
		for _, v := range perCPU {
			sums[i] += v
		}
	}
	return sums, nil
}

// drainBatch is how many entries one batch call moves: large enough that
// a drain of a full map takes a few dozen system calls.
const drainBatch = 512

// drainMap reads and deletes every entry of hash map m, passing each to
// fn, in batches.
func drainMap[K comparable, V any](scratch map[*ebpf.Map]any, m *ebpf.Map, fn func(K, V)) error {
	b, _ := scratch[m].(*drainBuf[K, V])
	if b == nil {
		b = &drainBuf[K, V]{keys: make([]K, drainBatch), vals: make([]V, drainBatch)}
		if scratch != nil {
			scratch[m] = b
		}
	}
	keys, vals := b.keys, b.vals
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookupAndDelete(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			fn(keys[i], vals[i])
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			return drainMapSlow(m, fn)
		}
		if err != nil {
			return err
		}
	}
}

// drainBuf is one map's batch buffers.
type drainBuf[K comparable, V any] struct {
	keys []K
	vals []V
}

// drainMapSlow is drainMap for kernels without batch operations: an
// iteration, then a delete of every key read.
func drainMapSlow[K comparable, V any](m *ebpf.Map, fn func(K, V)) error {
	var k K
	var v V
	var keys []K
	it := m.Iterate()
	for it.Next(&k, &v) {
		fn(k, v)
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}

// openCalls lists the calls in progress: the entries of ct_call_start
// with a start time.
func (t *bpfTracer) openCalls() ([]openCall, error) {
	var out []openCall
	m := t.shared["ct_call_start"]
	if !t.noBatch {
		// One batch read per drainBatch entries: iterating took two
		// system calls per thread in a call at every drain.
		keys := make([]uint64, drainBatch)
		vals := make([]callStart, drainBatch)
		var cursor ebpf.MapBatchCursor
		for {
			n, err := m.BatchLookup(&cursor, keys, vals, nil)
			for i := range n {
				if vals[i].TS != 0 {
					out = append(out, openFromStart(keys[i], vals[i]))
				}
			}
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				slices.SortFunc(out, compareOpen)
				return out, nil
			}
			if errors.Is(err, ebpf.ErrNotSupported) {
				t.noBatch = true
				out = out[:0]
				break
			}
			if err != nil {
				return nil, fmt.Errorf("read calls in progress: %w", err)
			}
		}
	}
	var k uint64
	var v callStart
	it := m.Iterate()
	for it.Next(&k, &v) {
		if v.TS != 0 {
			out = append(out, openFromStart(k, v))
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read calls in progress: %w", err)
	}
	slices.SortFunc(out, compareOpen)
	return out, nil
}

// startKey is the key of the start map: pid_tgid.
func startKey(pid, tid uint32) uint64 { return uint64(pid)<<32 | uint64(tid) }

func (t *bpfTracer) seed(c openCall) (bool, error) {
	if c.io && !t.probes[ProbeIO] || !c.io && !t.probes[ProbeFutex] {
		return false, nil
	}
	err := t.shared["ct_call_start"].Update(startKey(c.pid, c.tid), c.start(), ebpf.UpdateNoExist)
	if errors.Is(err, ebpf.ErrKeyExist) {
		return false, nil
	}
	return err == nil, err
}

func (t *bpfTracer) unseed(c openCall) error {
	// Remove the entry only while it is the seeded one: a call that left
	// the CPU since rewrote it.
	if ts, ok := t.openTS(c); !ok || ts != c.ts {
		return nil
	}
	if err := t.shared["ct_call_start"].Delete(startKey(c.pid, c.tid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("remove seeded start of tid %d: %w", c.tid, err)
	}
	return nil
}

func (t *bpfTracer) openTS(c openCall) (uint64, bool) {
	var v callStart
	if t.shared["ct_call_start"].Lookup(startKey(c.pid, c.tid), &v) != nil {
		return 0, false
	}
	return v.TS, true
}

func (t *bpfTracer) markNamed(hash uint64) error {
	return t.shared["ct_named"].Put(hash, uint8(1))
}

func (t *bpfTracer) run(fn func([]byte)) error {
	var rec ringbuf.Record
	// The probes never wake the reader (BPF_RB_NO_WAKEUP), so it never
	// waits in the kernel for them: a Go ticker wakes it and it reads
	// what the ring holds without waiting (a deadline in the past makes
	// the reader's epoll_wait return at once). A reader blocked in
	// epoll_wait for readerPoll would make a system call of 50 ms 20
	// times a second: Go's sysmon takes the processor back from a call
	// that long (after 10 ms) and each time drops back to polling every
	// 20 µs, about 1,200 wakeups of contend a second, a third of its CPU.
	t.reader.SetDeadline(time.Unix(0, 1))
	tick := time.NewTicker(readerPoll)
	defer tick.Stop()
	for {
		last := false
		select {
		case <-tick.C:
		case <-t.flushed:
			last = true
		}
		for {
			err := t.reader.ReadInto(&rec)
			if err == nil {
				fn(rec.RawSample)
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break // the ring is read to its end
			}
			if errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("read ring buffer: %w", err)
		}
		if last {
			return nil
		}
	}
}

func (t *bpfTracer) flush() {
	t.flushOnce.Do(func() { close(t.flushed) })
}

// detach closes every link at once: closing a syscall tracepoint's perf
// event waits for grace periods, which run together when the closes do.
func (t *bpfTracer) detach() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.links = append(t.links, t.goLinks...)
	t.goLinks = nil
	errs := make([]error, len(t.links))
	var wg sync.WaitGroup
	for i, l := range t.links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Close()
		}()
	}
	wg.Wait()
	t.links = nil
	t.detached = true
	for _, fd := range t.perfFDs {
		unix.Close(fd)
	}
	t.perfFDs = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("detach probes: %w", err)
	}
	return nil
}

func (t *bpfTracer) close() error {
	err := t.detach()
	if t.reader != nil {
		t.reader.Close()
	}
	for _, c := range t.colls {
		c.Close()
	}
	for _, m := range t.shared {
		m.Close()
	}
	return err
}
