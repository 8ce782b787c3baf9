package collector

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/recording"
	"github.com/contend-dev/contend/symbolize"
)

// funcSymbols is a process's symbols that know a few functions, with
// code filled with the low byte of each function's start.
type funcSymbols struct {
	rawSymbols
	fns     []symbolize.Function
	lookups int
}

func (f *funcSymbols) FunctionAt(pc uint64) (symbolize.Function, []byte, bool) {
	f.lookups++
	for _, fn := range f.fns {
		if pc >= fn.Start && pc < fn.End {
			return fn, bytes.Repeat([]byte{byte(fn.Start)}, int(fn.End-fn.Start)), true
		}
	}
	return symbolize.Function{}, nil, false
}

// oncpuSample is a sample of ns nanoseconds in process pid at the user
// address pc of module, under the kernel frames named kernel.
func oncpuSample(pid int64, module string, pc uint64, ns int64, kernel ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1, ns}, NumLabel: map[string][]int64{recording.LabelPID: {pid}}}
	for _, k := range kernel {
		s.Location = append(s.Location, &profile.Location{Address: 0xffffffff81000000, Mapping: &profile.Mapping{File: kernelMapping},
			Line: []profile.Line{{Function: &profile.Function{Name: k}}}})
	}
	s.Location = append(s.Location, &profile.Location{Address: pc, Mapping: &profile.Mapping{File: module}})
	return s
}

func TestNativeCodeCopiesHotFunctions(t *testing.T) {
	const bias = 0x555500000000
	fn := func(name string, start, end uint64) symbolize.Function {
		return symbolize.Function{Name: name, Module: "app", BuildID: "abcd", Start: start + bias, End: end + bias, Bias: bias}
	}
	app := &funcSymbols{fns: []symbolize.Function{
		fn("spin", 0x1000, 0x1040),
		fn("work", 0x2000, 0x2100),
		fn("cold", 0x3000, 0x3010),
		fn("huge", 0x10000, 0x10000+recording.MaxNativeCode+1),
		fn("syscalling", 0x4000, 0x4010),
	}}
	r := &resolver{procs: map[uint32]procSymbols{7: app, 8: rawSymbols{}}}
	p := &profile.Profile{Sample: []*profile.Sample{
		oncpuSample(7, "app", bias+0x1008, 400),
		oncpuSample(7, "app", bias+0x1010, 300),
		oncpuSample(7, "app", bias+0x1008, 100, "asm_sysvec_apic_timer_interrupt"),
		oncpuSample(7, "app", bias+0x2080, 200),
		oncpuSample(7, "app", bias+0x3004, 10),
		oncpuSample(7, "app", bias+0x10004, 300),
		oncpuSample(7, "app", bias+0x4004, 300, "do_syscall_64", "entry_SYSCALL_64"),
		oncpuSample(7, recording.ModuleJava, 0x7f0000001000, 300),
		oncpuSample(8, "app", bias+0x1008, 300),
	}}
	got := r.nativeCode(p)
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	// spin and work are hot; cold is under minNativeShare of the 2,210
	// ns sampled, huge is over the size bound, syscalling only ever ran
	// in the kernel, Java code is jvm.go's, and process 8's symbols
	// cannot read code.
	if len(got) != 2 || names[0] != "spin" || names[1] != "work" {
		t.Fatalf("copied %q, want [spin work]", names)
	}
	c := got[0]
	if c.Module != "app" || c.BuildID != "abcd" || c.PID != 7 || c.Start != 0x1000 || c.Bias != bias || len(c.Code) != 0x40 || c.Code[0] != 0x00 || !c.Contains(bias+0x1008) {
		t.Errorf("spin copied as %+v", c)
	}
	// One lookup per function: the three addresses of spin cost one,
	// and a sample inside a system call none.
	if app.lookups != 4 {
		t.Errorf("%d lookups, want 4 (spin, work, cold, huge)", app.lookups)
	}
	if r.nativeCode(nil) != nil {
		t.Error("code copied without an on-CPU view")
	}
	if none := r.nativeCode(&profile.Profile{}); none == nil || len(none) != 0 {
		t.Errorf("no samples: %v, want an empty copy (looked for, none hot)", none)
	}
}

// TestNativeCodeBounded: a target with more hot functions than a
// recording keeps gets the hottest MaxNativeFunctions.
func TestNativeCodeBounded(t *testing.T) {
	// Eighteen functions of about 5.5% of the CPU each: all over
	// minNativeShare, two more than a recording keeps.
	const n = recording.MaxNativeFunctions + 2
	app := &funcSymbols{}
	p := &profile.Profile{}
	for i := range n {
		start := uint64(0x1000 * (i + 1))
		app.fns = append(app.fns, symbolize.Function{Name: "f", Module: "app", Start: start, End: start + 16})
		p.Sample = append(p.Sample, oncpuSample(7, "app", start, int64(1000+i)))
	}
	r := &resolver{procs: map[uint32]procSymbols{7: app}}
	got := r.nativeCode(p)
	if len(got) != recording.MaxNativeFunctions {
		t.Fatalf("%d functions copied, want %d", len(got), recording.MaxNativeFunctions)
	}
	for i, c := range got {
		// The hottest (the highest here) first; the two coolest,
		// at 0x1000 and 0x2000, left out.
		if want := uint64(0x1000 * (n - i)); c.Start != want {
			t.Errorf("copy %d at 0x%x, want 0x%x", i, c.Start, want)
		}
	}
}
