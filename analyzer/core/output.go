package core

import (
	"github.com/contend-dev/contend/recording"
)

// Output is what the steps of one analysis write into: the recording they
// read and the result they fill.
type Output struct {
	Rec *recording.Recording
	Res *Result
}

// Note adds a caveat about the input once.
func (a *Output) Note(s string) {
	for _, n := range a.Res.Notes {
		if n == s {
			return
		}
	}
	a.Res.Notes = append(a.Res.Notes, s)
}

// Missing records a blind spot once.
func (a *Output) Missing(what, decides string) {
	for _, m := range a.Res.Missing {
		if m.What == what {
			return
		}
	}
	a.Res.Missing = append(a.Res.Missing, Missing{What: what, Decides: decides})
}
