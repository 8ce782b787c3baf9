package analyzer

import "github.com/contend-dev/contend/recording"

// output is what the steps of one analysis write into: the recording they
// read and the result they fill.
type output struct {
	rec *recording.Recording
	res *Result
}

// note adds a caveat about the input once.
func (a *output) note(s string) {
	for _, n := range a.res.Notes {
		if n == s {
			return
		}
	}
	a.res.Notes = append(a.res.Notes, s)
}

// missing records a blind spot once.
func (a *output) missing(what, decides string) {
	for _, m := range a.res.Missing {
		if m.What == what {
			return
		}
	}
	a.res.Missing = append(a.res.Missing, Missing{What: what, Decides: decides})
}
