package live

import (
	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// Path is the live recording's part of one analysis: the model read from
// the recording, its lock groups, and the threads a spin finding claims,
// which the saturation step then leaves out. The pipeline calls its steps
// in the verdict order (core/judge.go); each writes its findings, rows and
// notes to out. Every method of a nil Path does nothing, so the pipeline
// calls them whatever the recording is.
type Path struct {
	ld    *Data
	locks []*LockGroup
	// spinning holds the threads a spin finding accounts for, set by Spin.
	spinning map[int]bool
	// polled holds the program points of the sleeps a polled-lock finding
	// accounts for, set by KernelLocks: Rows lists none of them as idle.
	polled map[core.PointKey]bool
	// kernelWaits holds each thread's waiting on the kernel objects and
	// polled locks that got a finding, set by KernelLocks: Saturation
	// weighs it as lock waiting.
	kernelWaits map[int]int64
}

// New reads a live recording for the steps, with the Java thread dumps jd
// (nil when none) naming the JVM's locks; nil when rec is not live.
func New(rec *recording.Recording, jd *core.JavaData) *Path {
	if !rec.IsLive() {
		return nil
	}
	ld := buildLiveData(rec)
	return &Path{ld: ld, locks: ld.jvmLocks(ld.lockGroups(), jd)}
}

// Target fills the target's population and unit.
func (p *Path) Target(out *core.Output) {
	if p != nil {
		liveTarget(out, p.ld)
	}
}

// Locks judges the futex locks.
func (p *Path) Locks(out *core.Output) {
	if p != nil {
		liveLockVerdicts(out, p.ld, p.locks)
	}
}

// Latches judges the waits on one-shot events (latches).
func (p *Path) Latches(out *core.Output) {
	if p != nil {
		liveLatch(out, p.ld)
	}
}

// KernelLocks judges the locks the kernel holds (file locks, inode
// locks, the mmap lock, pipes) and the locks whose waiters poll, and keeps
// the polled sleeps for Rows.
func (p *Path) KernelLocks(out *core.Output) {
	if p != nil {
		p.kernelWaits = map[int]int64{}
		p.ld.kernelLocks(out, p.locks, p.kernelWaits)
		p.polled = p.ld.polled(out, p.kernelWaits)
	}
}

// Spin judges busy-waits, spin loops then yield loops, and keeps the
// threads they claim for Saturation.
func (p *Path) Spin(out *core.Output) {
	if p != nil {
		p.spinning = liveSpin(out, p.ld)
		liveYield(out, p.ld, p.spinning)
	}
}

// Saturation judges CPU saturation over the threads no spin finding and
// no lock taken in turns explains.
func (p *Path) Saturation(out *core.Output) {
	if p != nil {
		liveSaturation(out, p.ld, p.locks, p.spinning, p.kernelWaits)
	}
}

// Rows fills the thread, point and lock rows the renderers list.
func (p *Path) Rows(out *core.Output) {
	if p != nil {
		liveRows(out, p.ld, p.locks, p.polled)
	}
}

// Missing lists the data the recording lacks.
func (p *Path) Missing(out *core.Output) {
	if p != nil {
		liveMissing(out, p.ld.rec)
	}
}

// StacksCut is how many stacks the model cut to core.MaxStackFrames.
func (p *Path) StacksCut() int {
	if p == nil {
		return 0
	}
	return p.ld.Stacks.Cut
}
