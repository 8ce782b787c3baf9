//go:build linux && amd64

package collector

import (
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
// once, so that all families share stack ids, counters and the event log.
var sharedMaps = []string{"ct_events", "ct_counters", "ct_stacks", "ct_named", "ct_buckets", "ct_scratch"}

// objects lists the BPF objects in attach order (which is also the
// doctor's display order) with the families each holds; an object is
// loaded when any of its families is selected, with "<family>_enabled" set
// for each.
var objects = []struct {
	doctorFamily
	families []string
}{
	{doctorFamily{"syscalls", "futex waits and wakes per lock and stack, I/O syscall durations", probes.LoadSyscalls}, []string{ProbeFutex, ProbeIO}},
	{doctorFamily{"sched", "off-CPU time by state, wake edges", probes.LoadSched}, []string{ProbeSched}},
	{doctorFamily{"oncpu", "on-CPU samples (perf cpu-clock)", probes.LoadOncpu}, []string{ProbeOnCPU}},
}

// bpfTracer is the BPF implementation of tracer.
type bpfTracer struct {
	colls    map[string]*ebpf.Collection
	shared   map[string]*ebpf.Map
	maps     map[string]*ebpf.Map // every map by name
	probes   map[string]bool
	counters []string // kernel counter names by index
	reader   *ringbuf.Reader

	mu      sync.Mutex
	links   []link.Link
	perfFDs []int
}

// newTracer loads the families in cfg.probes, configured for cfg, and
// attaches them. On error nothing stays loaded.
func newTracer(cfg tracerConfig) (_ tracer, err error) {
	t := &bpfTracer{colls: map[string]*ebpf.Collection{}, shared: map[string]*ebpf.Map{}, maps: map[string]*ebpf.Map{}, probes: cfg.probes}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	specs := map[string]*ebpf.CollectionSpec{}
	var order []string
	for _, obj := range objects {
		enabled := map[string]bool{}
		for _, f := range obj.families {
			enabled[f] = cfg.probes[f]
		}
		if !slices.ContainsFunc(obj.families, func(f string) bool { return cfg.probes[f] }) {
			continue
		}
		spec, err := obj.load()
		if err != nil {
			return nil, fmt.Errorf("load %s probes: %w", obj.name, err)
		}
		if err := configure(spec, cfg, enabled); err != nil {
			return nil, fmt.Errorf("configure %s probes: %w", obj.name, err)
		}
		spec.Maps["ct_events"].MaxEntries = ringBufferSize
		specs[obj.name] = spec
		order = append(order, obj.name)
	}
	if len(order) == 0 {
		return nil, errors.New("no probe family selected")
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
		coll, err := ebpf.NewCollectionWithOptions(specs[name], ebpf.CollectionOptions{MapReplacements: t.shared})
		if err != nil {
			return nil, fmt.Errorf("load %s probes: %w", name, classify(err))
		}
		t.colls[name] = coll
		for mn, m := range coll.Maps {
			t.maps[mn] = m
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

// configure sets the volatile constants a family's object declares.
func configure(spec *ebpf.CollectionSpec, cfg tracerConfig, enabled map[string]bool) error {
	evIv, evTol := bucketParams(eventRate, eventBurst, cfg.ncpu)
	wIv, wTol := bucketParams(windowRate, windowBurst, cfg.ncpu)
	vals := map[string]any{
		"target_tgid":         uint32(cfg.pid),
		"event_interval_ns":   evIv,
		"event_tolerance_ns":  evTol,
		"window_interval_ns":  wIv,
		"window_tolerance_ns": wTol,
		"stack_threshold_ns":  uint64(cfg.stackThreshold),
		"io_threshold_ns":     uint64(cfg.ioThreshold),
		"runq_event_ns":       uint64(runqEventThreshold),
		"dsleep_event_ns":     uint64(dsleepEventThreshold),
	}
	for f, on := range enabled {
		vals[f+"_enabled"] = on
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
				return fmt.Errorf("%s: %w", name, classify(err))
			}
			t.addLink(l)
		case ebpf.PerfEvent:
			if err := t.attachPerCPU(prog, cfg); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
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

func (t *bpfTracer) addLink(l link.Link) {
	t.mu.Lock()
	t.links = append(t.links, l)
	t.mu.Unlock()
}

func (t *bpfTracer) counterNames() []string {
	return append(append([]string(nil), t.counters...), "drop_prog_recursion")
}

func (t *bpfTracer) drain(s *snapshot) error {
	if t.probes[ProbeFutex] {
		if err := readMap(t.maps["ct_futex_waits"], s.waits); err != nil {
			return err
		}
		if err := readMap(t.maps["ct_futex_locks"], s.locks); err != nil {
			return err
		}
		if err := readMap(t.maps["ct_futex_wakes"], s.wakes); err != nil {
			return err
		}
	}
	futex := map[uint64]futexStart{}
	io := map[uint64]ioStart{}
	if t.probes[ProbeFutex] {
		if err := readMap(t.maps["ct_futex_start"], futex); err != nil {
			return err
		}
	}
	if t.probes[ProbeSched] {
		if err := readMap(t.maps["ct_offcpu"], s.offcpu); err != nil {
			return err
		}
		// The overflow's keys carry stackSpilled, never a map id: they
		// cannot collide with ct_offcpu's.
		if err := readMap(t.maps["ct_offcpu_spill"], s.offcpu); err != nil {
			return err
		}
		if err := readMap(t.maps["ct_wakes"], s.edges); err != nil {
			return err
		}
	}
	if t.probes[ProbeOnCPU] {
		if err := readMap(t.maps["ct_oncpu"], s.oncpu); err != nil {
			return err
		}
	}
	if t.probes[ProbeIO] {
		if err := readMap(t.maps["ct_io"], s.io); err != nil {
			return err
		}
		if err := readMap(t.maps["ct_io_start"], io); err != nil {
			return err
		}
	}
	s.open = openCalls(futex, io)
	// The kernel skips a program that would run while it already runs on
	// that CPU (a tracepoint hit from an interrupt inside it); each skip
	// is an event lost.
	var misses uint64
	for _, c := range t.colls {
		for _, p := range c.Programs {
			if st, err := p.Stats(); err == nil {
				misses += st.RecursionMisses
			}
		}
	}
	s.counters["drop_prog_recursion"] = misses
	m := t.shared["ct_counters"]
	var perCPU []uint64
	for i, name := range t.counters {
		if name == "" {
			continue
		}
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return fmt.Errorf("read counter %s: %w", name, err)
		}
		var sum uint64
		for _, v := range perCPU {
			sum += v
		}
		s.counters[name] = sum
	}
	return nil
}

// readMap copies every entry of m into into.
func readMap[K comparable, V any](m *ebpf.Map, into map[K]V) error {
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		into[k] = v
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read map: %w", err)
	}
	return nil
}

// startKey is the key of the start maps: pid_tgid.
func startKey(pid int, tid uint32) uint64 { return uint64(pid)<<32 | uint64(tid) }

func (t *bpfTracer) seed(pid int, c openCall) (bool, error) {
	var err error
	switch {
	case c.io && t.probes[ProbeIO]:
		err = t.maps["ct_io_start"].Update(startKey(pid, c.tid), ioStart{TS: c.ts, NR: c.nr, IP: c.ip, SP: c.sp, BP: c.bp}, ebpf.UpdateNoExist)
	case !c.io && t.probes[ProbeFutex]:
		err = t.maps["ct_futex_start"].Update(startKey(pid, c.tid), futexStart{TS: c.ts, Addr: c.addr, Owner: c.owner, Op: c.op, IP: c.ip, SP: c.sp, BP: c.bp}, ebpf.UpdateNoExist)
	default:
		return false, nil
	}
	if errors.Is(err, ebpf.ErrKeyExist) {
		return false, nil
	}
	return err == nil, err
}

func (t *bpfTracer) unseed(pid int, c openCall) error {
	// Remove the entry only while it is the seeded one: a call entered
	// since rewrote it.
	if ts, ok := t.openTS(pid, c); !ok || ts != c.ts {
		return nil
	}
	if err := t.startMap(c).Delete(startKey(pid, c.tid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("remove seeded start of tid %d: %w", c.tid, err)
	}
	return nil
}

// startMap returns the start map of c's kind (nil when its family is
// not loaded).
func (t *bpfTracer) startMap(c openCall) *ebpf.Map {
	if c.io {
		return t.maps["ct_io_start"]
	}
	return t.maps["ct_futex_start"]
}

func (t *bpfTracer) openTS(pid int, c openCall) (uint64, bool) {
	m := t.startMap(c)
	if m == nil {
		return 0, false
	}
	key := startKey(pid, c.tid)
	if c.io {
		var v ioStart
		if m.Lookup(key, &v) != nil {
			return 0, false
		}
		return v.TS, true
	}
	var v futexStart
	if m.Lookup(key, &v) != nil {
		return 0, false
	}
	return v.TS, true
}

func (t *bpfTracer) stack(id int32) ([]uint64, error) {
	var pcs [stackDepth]uint64
	if err := t.shared["ct_stacks"].Lookup(uint32(id), &pcs); err != nil {
		return nil, err
	}
	n := 0
	for n < len(pcs) && pcs[n] != 0 {
		n++
	}
	return append([]uint64(nil), pcs[:n]...), nil
}

func (t *bpfTracer) markNamed(id int32) error {
	return t.shared["ct_named"].Put(id, uint8(1))
}

func (t *bpfTracer) run(fn func([]byte)) error {
	var rec ringbuf.Record
	for {
		t.reader.SetDeadline(time.Now().Add(readerPoll))
		err := t.reader.ReadInto(&rec)
		switch {
		case err == nil:
			fn(rec.RawSample)
		case errors.Is(err, os.ErrDeadlineExceeded):
		case errors.Is(err, ringbuf.ErrFlushed), errors.Is(err, ringbuf.ErrClosed), errors.Is(err, os.ErrClosed):
			return nil
		default:
			return fmt.Errorf("read ring buffer: %w", err)
		}
	}
}

func (t *bpfTracer) flush() {
	if t.reader != nil {
		t.reader.Flush()
	}
}

func (t *bpfTracer) detach() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, l := range t.links {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	t.links = nil
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
