package collector

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/contend-dev/contend/internal/testbin"
)

// realBTF skips the test when this machine has no kernel BTF: the doctor
// tests below read the real one to check tracepoints.
func realBTF(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/" + btfPath); err != nil {
		testbin.Skip(t, fmt.Sprintf("no kernel BTF on this machine: %v", err))
	}
}

// fakeDoctor runs Doctor with injected capabilities, release, feature
// prober and loader, so that no test needs root or a particular kernel.
func fakeDoctor(c CapSet, release string, probe func(kernelFeature) error, load func(string, *ebpf.CollectionSpec) error) *DoctorReport {
	no := false
	if probe == nil {
		probe = func(kernelFeature) error { return nil }
	}
	if load == nil {
		load = func(string, *ebpf.CollectionSpec) error { return nil }
	}
	return Doctor(DoctorOptions{caps: &c, release: release, probe: probe, load: load, userNS: &no})
}

func find(list []Check, prefix string) *Check {
	for i := range list {
		if strings.HasPrefix(list[i].Name, prefix) {
			return &list[i]
		}
	}
	return nil
}

func TestDoctorWithoutPrivileges(t *testing.T) {
	realBTF(t)
	probed := false
	r := fakeDoctor(0, "6.1.0-18-amd64", func(kernelFeature) error { probed = true; return nil }, nil)
	if probed {
		t.Error("features were probed without CAP_BPF")
	}
	if r.Verdict != VerdictPrivileges {
		t.Errorf("verdict = %q, want %q", r.Verdict, VerdictPrivileges)
	}
	var pe *PermissionError
	if err := r.Err(); !errors.Is(err, ErrPermission) || !errors.As(err, &pe) || strings.Join(pe.Missing, ",") != "CAP_BPF,CAP_PERFMON" {
		t.Fatalf("Err = %v, want a PermissionError for CAP_BPF and CAP_PERFMON", err)
	}
	for _, name := range []string{"CAP_BPF", "CAP_PERFMON"} {
		if c := find(r.Capabilities, name); c == nil || c.Status != CheckMissing || !strings.Contains(c.Fix, "setcap") {
			t.Errorf("%s: %+v, want missing with a setcap fix", name, c)
		}
	}
	if c := find(r.Capabilities, "CAP_SYS_PTRACE"); c == nil || c.Status != CheckInfo {
		t.Errorf("CAP_SYS_PTRACE: %+v, want info", c)
	}
	for _, p := range r.Probes {
		if p.Status != CheckUnknown {
			t.Errorf("probe %s: %s, want unknown without privileges", p.Name, p.Status)
		}
	}
	if c := find(r.Features, "tracepoints "); c == nil || c.Status != CheckOK || !strings.Contains(c.Name, "sched_switch") {
		t.Errorf("tracepoints are checked in BTF without privileges: %+v", c)
	}
	if len(r.Fixes) == 0 || !strings.Contains(r.Fixes[0], "setcap") {
		t.Errorf("fixes = %q, want setcap first", r.Fixes)
	}
}

func TestDoctorPartialCapabilities(t *testing.T) {
	realBTF(t)
	r := fakeDoctor(caps(CapBPF, CapSysPtrace), "6.1.0", nil, nil)
	var pe *PermissionError
	if !errors.As(r.Err(), &pe) || strings.Join(pe.Missing, ",") != "CAP_PERFMON" {
		t.Fatalf("Err = %v, want CAP_PERFMON missing only", r.Err())
	}
	if c := find(r.Capabilities, "CAP_BPF"); c.Status != CheckOK {
		t.Errorf("CAP_BPF: %s, want ok", c.Status)
	}
}

func TestDoctorReady(t *testing.T) {
	realBTF(t)
	for _, c := range []CapSet{caps(CapBPF, CapPerfmon), caps(CapSysAdmin)} {
		var loaded []string
		r := fakeDoctor(c, "6.1.0", nil, func(name string, _ *ebpf.CollectionSpec) error { loaded = append(loaded, name); return nil })
		if r.Err() != nil || r.Verdict != VerdictReady {
			t.Errorf("caps %x: %s, %v; want ready", c, r.Verdict, r.Err())
		}
		if strings.Join(loaded, ",") != "futex,io,sched,oncpu,gosync" {
			t.Errorf("loaded %q, want every probe family", loaded)
		}
		if n := r.Count(CheckMissing) + r.Count(CheckUnknown); n != 0 {
			t.Errorf("%d missing or unknown checks in a ready report", n)
		}
		if c := find(r.Features, "cpu-clock perf events"); c == nil || c.Status != CheckOK {
			t.Errorf("perf events: %+v", c)
		}
	}
}

func TestDoctorFeatureMissing(t *testing.T) {
	realBTF(t)
	probe := func(f kernelFeature) error {
		if f.kind == "map" && f.mapType == ebpf.RingBuf {
			return fmt.Errorf("probe: %w", ebpf.ErrNotSupported)
		}
		return nil
	}
	r := fakeDoctor(caps(CapSysAdmin), "5.4.0", probe, func(string, *ebpf.CollectionSpec) error { return errors.New("load program: invalid argument") })
	if r.Verdict != VerdictKernel || !errors.Is(r.Err(), ErrKernel) {
		t.Fatalf("verdict %q, err %v; want the kernel's fault", r.Verdict, r.Err())
	}
	if c := find(r.Features, "ringbuf maps"); c == nil || c.Status != CheckMissing {
		t.Errorf("ringbuf: %+v, want missing", c)
	}
	if c := find(r.Features, "maps: "); c == nil || strings.Contains(c.Name, "ringbuf") {
		t.Errorf("the present maps line lists ringbuf: %+v", c)
	}
	if c := find(r.Probes, "futex"); c.Status != CheckMissing || c.Fix != "see the missing features above" {
		t.Errorf("futex probe: %+v", c)
	}
	if r.System[0].Status != CheckMissing {
		t.Errorf("kernel 5.4 with a feature missing: %+v", r.System[0])
	}
}

func TestDoctorOldKernelBackported(t *testing.T) {
	realBTF(t)
	// Every feature tested present on a kernel numbered too old: the
	// distribution backported them, the version is only informative.
	r := fakeDoctor(caps(CapSysAdmin), "4.18.0-513.el8.x86_64", nil, nil)
	if r.System[0].Status != CheckInfo || !strings.Contains(r.System[0].Detail, "backported") {
		t.Errorf("kernel check = %+v, want info about backports", r.System[0])
	}
	// Without privileges nothing can be tested: the version decides.
	r = fakeDoctor(0, "4.18.0-513.el8.x86_64", nil, nil)
	if r.Verdict != VerdictKernel || !errors.Is(r.Err(), ErrKernel) {
		t.Errorf("old kernel, no privileges: %q, %v; want the kernel's fault", r.Verdict, r.Err())
	}
}

func TestDoctorVerifierRefuses(t *testing.T) {
	realBTF(t)
	r := fakeDoctor(caps(CapSysAdmin), "6.1.0", nil, func(name string, _ *ebpf.CollectionSpec) error {
		if name == "oncpu" {
			return errors.New("program ct_oncpu_sample: load program: permission denied: invalid bpf_context access\nmore")
		}
		return nil
	})
	c := find(r.Probes, "oncpu")
	if c.Status != CheckMissing || !strings.Contains(c.Detail, "invalid bpf_context access") || strings.Contains(c.Detail, "more") || !strings.Contains(c.Fix, "contend bug") {
		t.Errorf("oncpu: %+v", c)
	}
	if !errors.Is(r.Err(), ErrKernel) {
		t.Errorf("Err = %v, want ErrKernel", r.Err())
	}
}

func TestDoctorNoBTF(t *testing.T) {
	c := caps(CapSysAdmin)
	no := false
	r := Doctor(DoctorOptions{SysRoot: t.TempDir(), caps: &c, release: "6.1.0", userNS: &no,
		probe: func(kernelFeature) error { return nil }, load: func(string, *ebpf.CollectionSpec) error { return nil }})
	if !errors.Is(r.Err(), ErrNoBTF) || r.Verdict != VerdictKernel {
		t.Errorf("no BTF: %q, %v; want ErrNoBTF", r.Verdict, r.Err())
	}
	if c := find(r.System, "BTF "); c.Status != CheckMissing || !strings.Contains(c.Fix, "CONFIG_DEBUG_INFO_BTF") {
		t.Errorf("BTF check: %+v", c)
	}
	// No probe attaches to a tracefs tracepoint (the futex and I/O
	// probes no longer hook syscalls), so an unmounted tracefs is not
	// reported as something to fix.
	if c := find(r.System, "tracefs"); c != nil {
		t.Errorf("tracefs check %+v: nothing needs tracefs", c)
	}
}

func TestDoctorUserNamespace(t *testing.T) {
	realBTF(t)
	c := caps(CapSysAdmin)
	yes := true
	r := Doctor(DoctorOptions{caps: &c, release: "6.1.0", userNS: &yes,
		probe: func(kernelFeature) error { return nil }, load: func(string, *ebpf.CollectionSpec) error { return nil }})
	if r.Verdict != VerdictPrivileges || !errors.Is(r.Err(), ErrPermission) || find(r.System, "user namespace") == nil {
		t.Errorf("user namespace: %q, %v", r.Verdict, r.Err())
	}
}

func TestDoctorJSON(t *testing.T) {
	realBTF(t)
	r := fakeDoctor(0, "6.1.0", nil, nil)
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kernel", "system", "capabilities", "features", "probes", "verdict", "fixes"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestHelperAndMapNames(t *testing.T) {
	r := fakeDoctor(caps(CapSysAdmin), "6.1.0", nil, nil)
	all := fmt.Sprint(r.Features)
	for _, want := range []string{"bpf_get_stack", "bpf_ringbuf_output", "task_storage", "lru_hash", "tp_btf programs"} {
		if !strings.Contains(all, want) {
			t.Errorf("features lack %s: %s", want, all)
		}
	}
}

// TestDoctorRealMachine runs the real probes. As root (CI) every feature
// must be present; the probe families must load unless their programs are
// refused by the verifier, which the report then names.
func TestDoctorRealMachine(t *testing.T) {
	testbin.RequireRoot(t, "loading BPF programs")
	r := Doctor(DoctorOptions{})
	for _, c := range append(append([]Check{}, r.System...), append(r.Capabilities, r.Features...)...) {
		if c.Status == CheckMissing || c.Status == CheckUnknown {
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Detail)
		}
	}
	for _, c := range r.Probes {
		if c.Status != CheckOK && c.Status != CheckMissing {
			t.Errorf("probe %s: %s", c.Name, c.Status)
		}
		if c.Status == CheckMissing && !strings.Contains(c.Fix, "contend bug") {
			t.Errorf("probe %s refused without the features being at fault: %+v", c.Name, c)
		}
	}
	if r.Verdict == VerdictPrivileges {
		t.Errorf("root lacks privileges: %v", r.Err())
	}
}
