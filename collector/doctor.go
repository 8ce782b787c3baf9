package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// CheckStatus is the outcome of one doctor check.
type CheckStatus string

// Check outcomes.
const (
	// CheckOK: present and usable.
	CheckOK CheckStatus = "ok"
	// CheckMissing: needed and absent; Fix says what to do.
	CheckMissing CheckStatus = "missing"
	// CheckUnknown: could not be tested, usually for lack of the
	// privileges the test itself needs.
	CheckUnknown CheckStatus = "unknown"
	// CheckInfo: not needed, reported for context.
	CheckInfo CheckStatus = "info"
)

// Check is one line of the doctor's report.
type Check struct {
	Name   string      `json:"name"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail,omitempty"`
	// Fix says what to do about a missing or unknown item.
	Fix string `json:"fix,omitempty"`
}

// DoctorReport says what this kernel and these privileges allow contend
// to do. Doctor computes it; the CLI only renders it.
type DoctorReport struct {
	// Kernel is the running kernel's release (uname -r).
	Kernel string `json:"kernel"`
	// System: kernel version, BTF, sysctls, user namespace.
	System []Check `json:"system"`
	// Capabilities held and missing.
	Capabilities []Check `json:"capabilities"`
	// Features: the BPF program types, helpers and maps the probes use,
	// each tested on this kernel.
	Features []Check `json:"features"`
	// Probes: each probe family, loaded into the kernel for real.
	Probes []Check `json:"probes"`
	// Verdict is "ready", "missing privileges" or "kernel lacks a
	// needed feature".
	Verdict string `json:"verdict"`
	// Fixes lists what to do, most important first.
	Fixes []string `json:"fixes,omitempty"`

	err error
}

// Err returns nil when contend can record here, else an error wrapping
// ErrKernel or ErrNoBTF (the kernel lacks something; checked first, since
// privileges cannot fix it) or ErrPermission.
func (r *DoctorReport) Err() error { return r.err }

// Verdicts of a DoctorReport.
const (
	VerdictReady      = "ready"
	VerdictPrivileges = "missing privileges"
	VerdictKernel     = "kernel lacks a needed feature"
)

// DoctorOptions configure Doctor. The zero value inspects this machine.
type DoctorOptions struct {
	// SysRoot and ProcRoot are the sysfs and procfs mounts; "" means /sys
	// and /proc.
	SysRoot, ProcRoot string

	// For tests: a capability set, kernel release, feature prober and
	// probe loader to use instead of the real ones.
	caps    *CapSet
	release string
	probe   func(kernelFeature) error
	load    func(family string, spec *ebpf.CollectionSpec) error
	userNS  *bool
}

// kernelFeature is one kernel facility a probe family uses.
type kernelFeature struct {
	kind    string // "program", "helper", "map", "perf"
	prog    ebpf.ProgramType
	helper  asm.BuiltinFunc
	mapType ebpf.MapType
	// attachTo is a tracepoint the family attaches to, used as the
	// attach target when testing tracing programs and helpers.
	attachTo string
}

func (f kernelFeature) String() string {
	switch f.kind {
	case "program":
		if f.prog == ebpf.Tracing {
			return "BTF tracepoint programs (tp_btf)"
		}
		return progName(f.prog) + " programs"
	case "helper":
		return helperName(f.helper) + " in " + progName(f.prog) + " programs"
	case "perf":
		return "cpu-clock perf events on every CPU"
	default:
		return mapName(f.mapType) + " maps"
	}
}

// group returns the display group of a present feature and its item in
// the group's list.
func (f kernelFeature) group() (name, item string) {
	switch f.kind {
	case "program":
		return progName(f.prog) + " programs", ""
	case "helper":
		return "helpers in " + progName(f.prog) + " programs", helperName(f.helper)
	case "perf":
		return f.String(), ""
	default:
		return "maps", mapName(f.mapType)
	}
}

// doctorFamily is one probe family as compiled into contend.
type doctorFamily struct {
	name string
	what string
	load func() (*ebpf.CollectionSpec, error)
}

// Doctor inspects the kernel and the privileges of this process and says
// what contend can do here and what to change. It never fails: what it
// cannot test is reported as unknown.
func Doctor(opts DoctorOptions) *DoctorReport {
	d := &doctor{opts: opts, r: &DoctorReport{}}
	if d.opts.SysRoot == "" {
		d.opts.SysRoot = "/sys"
	}
	if d.opts.ProcRoot == "" {
		d.opts.ProcRoot = "/proc"
	}
	if d.opts.probe == nil {
		d.opts.probe = probeFeature
	}
	if d.opts.load == nil {
		d.opts.load = loadFamily
	}
	d.system()
	d.capabilities()
	d.features()
	d.probes()
	d.verdict()
	return d.r
}

// doctor holds the state of one Doctor run.
type doctor struct {
	opts DoctorOptions
	r    *DoctorReport

	versionOK bool
	kernelBTF *btf.Spec
	caps      CapSet
	missing   []string // capabilities the probes need and lack
	userNS    bool
	canProbe  bool // privileged enough to load programs
	specs     map[string]*ebpf.CollectionSpec
	specErrs  map[string]error

	kernelGap, privGap bool
	kernelErr          error
	// featureGap: the kernel lacks a feature (as opposed to refusing
	// contend's programs although every feature is there).
	featureGap bool
}

// fix adds a line to what to do, once.
func (d *doctor) fix(s string) {
	for _, f := range d.r.Fixes {
		if f == s {
			return
		}
	}
	d.r.Fixes = append(d.r.Fixes, s)
}

// kernelLacks records a kernel gap; the first one becomes the error.
func (d *doctor) kernelLacks(err error) {
	d.kernelGap = true
	if d.kernelErr == nil {
		d.kernelErr = err
	}
}

// system checks the kernel release, BTF, sysctls and user
// namespace.
func (d *doctor) system() {
	r := d.r
	release := d.opts.release
	if release == "" {
		var err error
		if release, err = KernelRelease(); err != nil {
			release = "unknown"
		}
	}
	r.Kernel = release
	d.versionOK = true
	if v, err := ParseKernelRelease(release); err != nil {
		r.System = append(r.System, Check{Name: "kernel " + release, Status: CheckUnknown, Detail: err.Error()})
	} else if v.Less(MinKernel) {
		d.versionOK = false
		r.System = append(r.System, Check{Name: "kernel " + release, Status: CheckMissing,
			Detail: fmt.Sprintf("older than %s, the first with %s", MinKernel, minKernelWhy),
			Fix:    fmt.Sprintf("use Linux %s or later", MinKernel)})
	} else {
		r.System = append(r.System, Check{Name: "kernel " + release, Status: CheckOK, Detail: fmt.Sprintf("%s or later needed", MinKernel)})
	}

	btfFile := filepath.Join(d.opts.SysRoot, btfPath)
	spec, err := btf.LoadSpec(btfFile)
	if err != nil {
		detail := err.Error()
		if errors.Is(err, os.ErrNotExist) {
			detail = "absent: the kernel was built without CONFIG_DEBUG_INFO_BTF"
		}
		f := "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distributions since 2020)"
		r.System = append(r.System, Check{Name: "BTF " + btfFile, Status: CheckMissing, Detail: detail, Fix: f})
		d.fix(f)
		d.kernelLacks(fmt.Errorf("%s: %w", btfFile, ErrNoBTF))
	} else {
		d.kernelBTF = spec
		r.System = append(r.System, Check{Name: "BTF " + btfFile, Status: CheckOK})
	}

	r.System = append(r.System, sysctlCheck(d.opts.ProcRoot, "kernel.perf_event_paranoid", map[string]string{
		"-1": "perf events unrestricted",
		"0":  "per-CPU events allowed without CAP_PERFMON",
		"1":  "per-CPU events need CAP_PERFMON",
		"2":  "only self-profiling without CAP_PERFMON",
		"3":  "perf_event_open needs CAP_PERFMON",
		"4":  "perf_event_open needs CAP_PERFMON",
	}, "contend holds CAP_PERFMON for its perf events, so any value works"))
	r.System = append(r.System, sysctlCheck(d.opts.ProcRoot, "kernel.unprivileged_bpf_disabled", map[string]string{
		"0": "unprivileged BPF allowed",
		"1": "BPF needs CAP_BPF, fixed until reboot",
		"2": "BPF needs CAP_BPF",
	}, "tracing programs need CAP_BPF and CAP_PERFMON whatever the value"))

	if d.opts.userNS != nil {
		d.userNS = *d.opts.userNS
	} else {
		d.userNS = inNonInitialUserNS(d.opts.ProcRoot)
	}
	if d.userNS {
		d.privGap = true
		f := "run contend in the initial user namespace (on the host, or in a privileged container)"
		r.System = append(r.System, Check{Name: "user namespace", Status: CheckMissing,
			Detail: "contend runs in a user namespace: capabilities held there do not allow BPF", Fix: f})
		d.fix(f)
	}
}

// capabilities reports each capability contend uses, held or not.
func (d *doctor) capabilities() {
	if d.opts.caps != nil {
		d.caps = *d.opts.caps
	} else if c, err := EffectiveCaps(); err == nil {
		d.caps = c
	}
	d.missing = missingProbeCaps(d.caps)
	admin := d.caps.Has(CapSysAdmin)
	for _, c := range []struct {
		capn int
		why  string
	}{
		{CapBPF, "load the probes and create their maps"},
		{CapPerfmon, "tracing programs, their memory reads, per-CPU perf events"},
		{CapSysAdmin, "implies CAP_BPF and CAP_PERFMON; not needed when both are held"},
		{CapSysPtrace, "read /proc/PID/maps and memory of other users' processes"},
	} {
		ch := Check{Name: CapName(c.capn), Detail: c.why}
		switch {
		case d.caps.Has(c.capn):
			ch.Status = CheckOK
		case c.capn == CapSysAdmin:
			ch.Status = CheckInfo
		case c.capn == CapSysPtrace:
			ch.Status = CheckInfo
			ch.Detail += "; without it only your own processes can be recorded"
		case admin:
			ch.Status = CheckInfo
			ch.Detail += "; CAP_SYS_ADMIN covers it"
		default:
			ch.Status = CheckMissing
			ch.Fix = PrivilegeFix
		}
		d.r.Capabilities = append(d.r.Capabilities, ch)
	}
	if len(d.missing) > 0 {
		d.privGap = true
		d.fix(PrivilegeFix)
	}
	d.canProbe = len(d.missing) == 0 && !d.userNS
}

// features tests each program type, helper and map type the compiled
// probes use, and the tracepoints they attach to.
func (d *doctor) features() {
	r := d.r
	feats, tracepoints := d.loadSpecs()
	d.checkTracepoints(tracepoints)
	defer func() { d.featureGap = d.kernelGap }()

	if !d.canProbe {
		r.Features = append(r.Features, Check{Name: "BPF program types, helpers and maps", Status: CheckUnknown,
			Detail: "testing them needs CAP_BPF and CAP_PERFMON"})
		if !d.versionOK {
			// Without a conclusive test, trust the version.
			d.fix(fmt.Sprintf("use Linux %s or later", MinKernel))
			d.kernelLacks(fmt.Errorf("kernel %s is older than %s: %w", r.Kernel, MinKernel, ErrKernel))
		}
		return
	}
	allOK := d.probeFeatures(feats)
	if !d.versionOK && allOK {
		// Every feature is there: the distribution backported them.
		r.System[0].Status = CheckInfo
		r.System[0].Detail += "; every feature the probes use tested present (backported)"
		r.System[0].Fix = ""
	} else if !d.versionOK {
		d.fix(fmt.Sprintf("use Linux %s or later", MinKernel))
	}
}

// loadSpecs loads the compiled probes of every family into d.specs, or
// their error into d.specErrs, and returns the kernel features they use,
// each once, and the raw tracepoints they attach to.
func (d *doctor) loadSpecs() ([]kernelFeature, map[string]bool) {
	d.specs = map[string]*ebpf.CollectionSpec{}
	d.specErrs = map[string]error{}
	var feats []kernelFeature
	tracepoints := map[string]bool{}
	for _, fam := range doctorFamilies {
		spec, err := fam.load()
		if err != nil {
			d.specErrs[fam.name] = err
			continue
		}
		d.specs[fam.name] = spec
		feats = append(feats, specFeatures(spec)...)
		for _, p := range spec.Programs {
			if p.Type == ebpf.PerfEvent {
				feats = append(feats, kernelFeature{kind: "perf"})
			}
			if p.Type == ebpf.Tracing && p.AttachType == ebpf.AttachTraceRawTp {
				tracepoints[p.AttachTo] = true
			}
		}
	}
	return uniqueFeatures(feats), tracepoints
}

// checkTracepoints adds a feature line saying whether the kernel's BTF
// has every tracepoint in tracepoints; without BTF it adds nothing.
func (d *doctor) checkTracepoints(tracepoints map[string]bool) {
	if len(tracepoints) == 0 || d.kernelBTF == nil {
		return
	}
	names := sortedKeys(tracepoints)
	absent, _ := splitPresent(names, func(tp string) error {
		_, err := d.kernelBTF.AnyTypeByName("btf_trace_" + tp)
		if err != nil {
			return fs.ErrNotExist
		}
		return nil
	})
	d.r.Features = append(d.r.Features, d.presence("tracepoints "+strings.Join(names, ", "), "the kernel's BTF", "", absent, nil,
		"use a newer kernel", "tracepoints"))
}

// probeFeatures tests each of feats on the running kernel and adds the
// results to the report's features. It returns whether every one is
// supported; a feature whose test was inconclusive does not count as
// missing.
func (d *doctor) probeFeatures(feats []kernelFeature) (allOK bool) {
	// Features that pass are grouped into one line per kind and program
	// type; each missing or inconclusive one gets its own line.
	type group struct {
		name  string
		items []string
	}
	var groups []*group
	var failed []Check
	byName := map[string]*group{}
	allOK = true
	for _, f := range feats {
		err := d.opts.probe(f)
		if err == nil {
			name, item := f.group()
			g := byName[name]
			if g == nil {
				g = &group{name: name}
				byName[name] = g
				groups = append(groups, g)
			}
			g.items = append(g.items, item)
			continue
		}
		ch := Check{Name: f.String()}
		if errors.Is(err, ebpf.ErrNotSupported) {
			allOK = false
			ch.Status = CheckMissing
			ch.Detail = "not supported by this kernel"
			ch.Fix = fmt.Sprintf("use Linux %s or later", MinKernel)
			d.fix(ch.Fix)
			d.kernelLacks(fmt.Errorf("%s: %w", f, ErrKernel))
		} else {
			ch.Status = CheckUnknown
			ch.Detail = firstLineOf([]byte(err.Error()))
		}
		failed = append(failed, ch)
	}
	for _, g := range groups {
		name := g.name
		if len(g.items) > 0 && g.items[0] != "" {
			name += ": " + strings.Join(g.items, ", ")
		}
		d.r.Features = append(d.r.Features, Check{Name: name, Status: CheckOK})
	}
	d.r.Features = append(d.r.Features, failed...)
	return allOK
}

// splitPresent looks each name up and returns those that do not exist
// (lookup returns fs.ErrNotExist) and the first other error, if any.
func splitPresent(names []string, lookup func(string) error) (absent []string, unreadable error) {
	for _, n := range names {
		err := lookup(n)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			absent = append(absent, n)
		case err != nil && unreadable == nil:
			unreadable = err
		}
	}
	return absent, unreadable
}

// presence is the check that names are all found in where: missing (with
// fix, and the kernel lacking what) when some are absent, unknown when
// where could not be read.
func (d *doctor) presence(name, where, hint string, absent []string, unreadable error, fix, what string) Check {
	ch := Check{Name: name, Status: CheckOK, Detail: "present in " + where}
	switch {
	case len(absent) > 0:
		ch.Status = CheckMissing
		ch.Detail = "absent from " + where + hint + ": " + strings.Join(absent, ", ")
		ch.Fix = fix
		d.fix(fix)
		d.kernelLacks(fmt.Errorf("%s %s: %w", what, strings.Join(absent, ", "), ErrKernel))
	case unreadable != nil:
		ch.Status = CheckUnknown
		ch.Detail = where + " unreadable here: " + unreadable.Error()
	}
	return ch
}

// probes loads each probe family into the kernel.
func (d *doctor) probes() {
	for _, fam := range doctorFamilies {
		ch := Check{Name: fam.name, Detail: fam.what}
		spec := d.specs[fam.name]
		switch {
		case spec == nil:
			ch.Status = CheckMissing
			ch.Detail += "; compiled object unreadable: " + d.specErrs[fam.name].Error()
			d.kernelLacks(fmt.Errorf("%s probes: %w", fam.name, d.specErrs[fam.name]))
		case !d.canProbe:
			ch.Status = CheckUnknown
			ch.Detail += "; loading needs CAP_BPF and CAP_PERFMON"
		default:
			if err := d.opts.load(fam.name, spec); err != nil {
				ch.Status = CheckMissing
				ch.Detail += "; the kernel refuses it: " + firstLineOf([]byte(err.Error()))
				if !d.featureGap {
					// Every feature is present: the verifier of this
					// kernel disagrees with the compiled program.
					ch.Fix = "every feature it uses is present, so this is a contend bug or a verifier difference: report it with the output of contend doctor --json"
				} else {
					ch.Fix = "see the missing features above"
				}
				d.fix(ch.Fix)
				d.kernelLacks(fmt.Errorf("load %s probes: %w", fam.name, ErrKernel))
			} else {
				ch.Status = CheckOK
				ch.Detail += "; loads"
			}
		}
		d.r.Probes = append(d.r.Probes, ch)
	}
}

// verdict sets the verdict and the error: the kernel first, since
// privileges cannot fix it.
func (d *doctor) verdict() {
	switch {
	case d.kernelGap:
		d.r.Verdict = VerdictKernel
		d.r.err = d.kernelErr
	case d.privGap:
		d.r.Verdict = VerdictPrivileges
		if len(d.missing) > 0 {
			d.r.err = checkCaps(d.caps)
		} else {
			d.r.err = fmt.Errorf("contend runs in a user namespace: %w", ErrPermission)
		}
	default:
		d.r.Verdict = VerdictReady
	}
}

// countStatus counts the checks of list with one of the statuses.
func countStatus(list []Check, statuses ...CheckStatus) int {
	n := 0
	for _, c := range list {
		for _, s := range statuses {
			if c.Status == s {
				n++
			}
		}
	}
	return n
}

// minKernelWhy says why MinKernel is what it is, for the report.
const minKernelWhy = "bpf_task_pt_regs (5.15), which the futex and I/O probes use to read syscall arguments"

// sysctlCheck reports a sysctl's value with its meaning.
func sysctlCheck(procRoot, name string, meanings map[string]string, note string) Check {
	path := filepath.Join(procRoot, "sys", strings.ReplaceAll(name, ".", "/"))
	data, err := os.ReadFile(path)
	if err != nil {
		return Check{Name: name, Status: CheckInfo, Detail: "unreadable: " + err.Error()}
	}
	v := strings.TrimSpace(string(data))
	detail := v
	if m, ok := meanings[v]; ok {
		detail += " (" + m + ")"
	}
	return Check{Name: name, Status: CheckInfo, Detail: detail + "; " + note}
}

// inNonInitialUserNS reports whether this process runs in a user namespace
// other than the initial one, whose uid_map is the full identity map.
func inNonInitialUserNS(procRoot string) bool {
	data, err := os.ReadFile(filepath.Join(procRoot, "self", "uid_map"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// specFeatures lists the program types, helpers and map types a compiled
// collection uses.
func specFeatures(spec *ebpf.CollectionSpec) []kernelFeature {
	var out []kernelFeature
	for _, m := range spec.Maps {
		if strings.HasPrefix(m.Name, ".") {
			continue // .rodata and friends: global data, not a map type choice
		}
		out = append(out, kernelFeature{kind: "map", mapType: m.Type})
	}
	for _, p := range spec.Programs {
		out = append(out, kernelFeature{kind: "program", prog: p.Type, attachTo: p.AttachTo})
		for _, ins := range p.Instructions {
			if ins.IsBuiltinCall() {
				out = append(out, kernelFeature{kind: "helper", prog: p.Type, helper: asm.BuiltinFunc(ins.Constant), attachTo: p.AttachTo})
			}
		}
	}
	return out
}

// uniqueFeatures drops repeats (same kind, program type, helper, map
// type), keeping the first attach target, and sorts for display.
func uniqueFeatures(in []kernelFeature) []kernelFeature {
	seen := map[string]bool{}
	var out []kernelFeature
	for _, f := range in {
		k := f.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	order := map[string]int{"program": 0, "helper": 1, "map": 2, "perf": 3}
	sort.SliceStable(out, func(i, j int) bool {
		if order[out[i].kind] != order[out[j].kind] {
			return order[out[i].kind] < order[out[j].kind]
		}
		return out[i].String() < out[j].String()
	})
	return out
}

// probeFeature tests one feature on the running kernel. Results follow
// the features package: nil present, ebpf.ErrNotSupported absent, other
// errors inconclusive.
func probeFeature(f kernelFeature) error {
	switch f.kind {
	case "map":
		return features.HaveMapType(f.mapType)
	case "perf":
		return probePerfEvent()
	case "program":
		if f.prog == ebpf.Tracing {
			// features.HaveProgramType tests tracing programs with an
			// fentry attachment, which kernels without ftrace direct
			// calls lack although tp_btf works: test tp_btf itself.
			return probeTracingHelper(f.attachTo, nil)
		}
		return features.HaveProgramType(f.prog)
	default:
		if f.prog == ebpf.Tracing {
			h := f.helper
			return probeTracingHelper(f.attachTo, &h)
		}
		return features.HaveProgramHelper(f.prog, f.helper)
	}
}

// probeTracingHelper loads a tp_btf program attached to tracepoint tp
// that calls helper (none when nil). The helper's arguments are left
// unset, so the verifier refuses a helper it knows for its arguments and
// one it does not know for that: only the latter means absent.
func probeTracingHelper(tp string, helper *asm.BuiltinFunc) error {
	var insns asm.Instructions
	if helper != nil {
		for r := asm.R1; r <= asm.R5; r++ {
			insns = append(insns, asm.Mov.Imm(r, 0))
		}
		insns = append(insns, helper.Call())
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type:         ebpf.Tracing,
		AttachType:   ebpf.AttachTraceRawTp,
		AttachTo:     tp,
		Instructions: insns,
		License:      "GPL",
	}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch})
	if err == nil {
		prog.Close()
		return nil
	}
	var verr *ebpf.VerifierError
	if helper == nil || !errors.As(err, &verr) {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG) || errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%v: %w", err, ebpf.ErrNotSupported)
		}
		return err
	}
	log := strings.Join(verr.Log, "\n")
	for _, s := range []string{"invalid func ", "unknown func ", "cannot use helper"} {
		if strings.Contains(log, s) {
			return fmt.Errorf("%s: %w", helperName(*helper), ebpf.ErrNotSupported)
		}
	}
	// Refused for its arguments: the helper exists.
	return nil
}

// cpuClockAttr describes the on-CPU probe's perf event: the cpu-clock
// software event sampled hz times a second.
func cpuClockAttr(hz int) unix.PerfEventAttr {
	return unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: uint64(hz),
		Bits:   unix.PerfBitFreq,
	}
}

// probePerfEvent opens a cpu-clock perf event on CPU 0 for every process,
// as the on-CPU probe does on each CPU.
func probePerfEvent() error {
	attr := cpuClockAttr(DefaultOnCPUHz)
	attr.Bits |= unix.PerfBitDisabled
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("perf_event_open: %v: %w", err, ebpf.ErrNotSupported)
		}
		return fmt.Errorf("perf_event_open: %w", err)
	}
	unix.Close(fd)
	return nil
}

// loadFamily loads a probe family's programs and maps into the kernel and
// unloads them, attaching nothing: it proves the verifier accepts them
// here.
func loadFamily(_ string, spec *ebpf.CollectionSpec) error {
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return err
	}
	coll.Close()
	return nil
}

// progName names a program type as libbpf section names do.
func progName(t ebpf.ProgramType) string {
	switch t {
	case ebpf.PerfEvent:
		return "perf_event"
	case ebpf.Tracing:
		return "tp_btf"
	case ebpf.TracePoint:
		return "tracepoint"
	case ebpf.RawTracepoint:
		return "raw_tracepoint"
	case ebpf.Kprobe:
		return "kprobe"
	}
	return strings.ToLower(t.String())
}

// helperName turns asm's FnGetStackid into bpf_get_stackid.
func helperName(h asm.BuiltinFunc) string {
	return "bpf_" + snake(strings.TrimPrefix(h.String(), "Fn"))
}

// mapName turns ebpf's LRUHash into lru_hash.
func mapName(t ebpf.MapType) string {
	switch t {
	case ebpf.LRUHash:
		return "lru_hash"
	case ebpf.PerCPUArray:
		return "percpu_array"
	case ebpf.RingBuf:
		return "ringbuf"
	case ebpf.StackTrace:
		return "stack_trace"
	case ebpf.PerfEventArray:
		return "perf_event_array"
	}
	return snake(t.String())
}

// snake converts CamelCase to snake_case.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Count returns the number of checks of the report with the given status.
func (r *DoctorReport) Count(status CheckStatus) int {
	n := 0
	for _, list := range [][]Check{r.System, r.Capabilities, r.Features, r.Probes} {
		n += countStatus(list, status)
	}
	return n
}

// firstLineOf returns the first line of a message, trimmed.
func firstLineOf(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
