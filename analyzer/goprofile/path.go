package goprofile

import (
	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/recording"
)

// Path is the Go runtime's profiles and goroutine dumps, folded for one
// analysis. The pipeline calls its steps in the verdict order
// (core/judge.go); each writes its findings, rows and notes to out. Every
// method of a nil Path does nothing, so the pipeline calls them whatever
// the recording is.
type Path struct {
	g *Data
}

// New folds the recording's Go data; nil when it has none.
func New(rec *recording.Recording) *Path {
	g := buildGoData(rec)
	if g == nil {
		return nil
	}
	return &Path{g: g}
}

// Locks judges the Go locks, the runtime's own included.
func (p *Path) Locks(out *core.Output) {
	if p != nil {
		detectGoLocks(out, p.g)
	}
}

// Spin judges spinning goroutines.
func (p *Path) Spin(out *core.Output) {
	if p != nil {
		detectGoSpin(out, p.g)
	}
}

// Rows fills the point and idle rows the renderers list.
func (p *Path) Rows(out *core.Output) {
	if p != nil {
		goPoints(out, p.g)
	}
}

// Missing lists the Go data the recording lacks.
func (p *Path) Missing(out *core.Output) {
	if p != nil {
		goMissing(out, p.g)
	}
}

// StacksCut is how many stacks the model cut to core.MaxStackFrames.
func (p *Path) StacksCut() int {
	if p == nil {
		return 0
	}
	return p.g.Stacks.Cut
}
