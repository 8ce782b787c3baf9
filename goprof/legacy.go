package goprof

import (
	"bytes"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/internal/boundedio"
)

// parseLegacyContention reads the debug=1 text form of Go's mutex
// ("--- mutex:") and block ("--- contention:") profiles. The header names
// the kind: runtime/pprof writes "--- mutex:" for the mutex profile only
// and "--- contention:" for the block profile. pprof's legacy parser keeps
// only the addresses of each stack; the "#\t0xPC\tfunc+0xOFF\tfile:line"
// comment lines that follow each sample name them, so they are attached to
// the profile's locations here.
func parseLegacyContention(name string, data []byte, b *boundedio.Budget) (*File, error) {
	p, err := parseProfile(data, b)
	if err != nil {
		return nil, badWrap(err, "legacy contention profile")
	}
	symbolizeLegacy(p, data)
	kind := KindBlock
	if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("--- mutex:")) {
		kind = KindMutex
	}
	if err := p.CheckValid(); err != nil {
		return nil, badWrap(err, "legacy contention profile")
	}
	return &File{Path: name, Kind: kind, Profile: p}, nil
}

// symbolizeLegacy names the locations of a profile parsed from legacy text
// with the frame comments of that text. The parser stores a location at
// each return address minus one, which is the PC the comment lines print.
func symbolizeLegacy(p *profile.Profile, data []byte) {
	frames := map[uint64]Frame{}
	for _, l := range splitLines(data) {
		if !strings.HasPrefix(l, "#") || strings.HasPrefix(l, "# labels:") {
			continue
		}
		f, err := parseDebug1Frame(l)
		if err != nil || f.Func == "" {
			continue
		}
		if _, seen := frames[f.PC]; !seen {
			frames[f.PC] = f
		}
	}
	funcs := map[[2]string]*profile.Function{}
	for _, loc := range p.Location {
		if len(loc.Line) > 0 {
			continue
		}
		f, ok := frames[loc.Address]
		if !ok {
			continue
		}
		key := [2]string{f.Func, f.File}
		fn := funcs[key]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Func, SystemName: f.Func, Filename: f.File}
			p.Function = append(p.Function, fn)
			funcs[key] = fn
		}
		loc.Line = []profile.Line{{Function: fn, Line: int64(f.Line)}}
	}
}
