package analyzer

import (
	"fmt"

	"github.com/contend-dev/contend/analyzer/core"
)

// noteCut adds the note on stacks cut to MaxStackFrames, if any were.
func (a *analysis) noteCut() {
	n := 0
	if a.ld != nil {
		n += a.ld.Stacks.Cut
	}
	if a.gd != nil {
		n += a.gd.Stacks.Cut
	}
	if n > 0 {
		a.Note(fmt.Sprintf("%d stacks were deeper than %d frames: the analysis kept the %d frames nearest the leaf of each (where the thread waits) and left out the callers above them", n, core.MaxStackFrames, core.MaxStackFrames))
	}
}
