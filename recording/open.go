package recording

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/boundedio"
)

// InputRecording is the kind listed in Meta.Inputs for a recording
// directory that was opened together with profile files.
const InputRecording goprof.Kind = "recording"

// ErrNoInput is returned by Open when it is given no path.
var ErrNoInput = errors.New("no input given")

// ErrTwoRecordings is returned by Open when it is given more than one
// recording directory: their event logs, locks and thread timelines cover
// different intervals and cannot be merged into one.
var ErrTwoRecordings = errors.New("more than one recording directory")

// Open builds one Recording from paths. Each path is a recording directory
// (read as Read does), a Go profile file recognised by content
// (goprof.Load), or a directory of such files (one without meta.json, such
// as a fixture's profile directory: its files are read in name order,
// dot files skipped). Mutex, block, CPU and goroutine profiles go to the Go
// views, goroutine dumps to Goroutines in the order given. Several files of
// one kind are merged with profile.Merge. Profiles given beside a recording
// directory are merged into its views.
//
// A contention profile whose stacks tell neither mutex nor block
// (goprof.KindContention) with samples goes to ViewGoBlock: its stacks are
// then read as where goroutines waited, the reading that needs no pairing
// with other data; a warning says so. With no samples it goes to no view,
// as empty mutex and block profiles still go to theirs, and a warning says
// the profile is empty and what that usually means.
//
// A recording built from files only has Meta.Source SourceFiles, lists
// every file with its kind in Meta.Inputs, starts at the earliest profile
// time and lasts as long as the longest profile (0 when no profile gives a
// duration). Errors name the file at fault.
func Open(paths ...string) (*Recording, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("open: %w", ErrNoInput)
	}
	var (
		base    *Recording
		baseDir string
		files   []*goprof.File
		jdumps  []javaInput
	)
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("open: %w", err)
		}
		switch {
		case st.IsDir() && IsRecording(path):
			if baseDir != "" {
				return nil, fmt.Errorf("open %s and %s: %w", baseDir, path, ErrTwoRecordings)
			}
			baseDir = path
		case st.IsDir():
			dirFiles, dirDumps, err := loadProfileDir(path)
			if err != nil {
				return nil, err
			}
			files = append(files, dirFiles...)
			jdumps = append(jdumps, dirDumps...)
		default:
			f, d, err := loadInput(path, boundedio.Options{})
			if err != nil {
				return nil, err
			}
			if d != nil {
				jdumps = append(jdumps, javaInput{path, d})
				continue
			}
			files = append(files, f)
		}
	}
	if baseDir != "" {
		var err error
		if base, err = Read(baseDir); err != nil {
			return nil, err
		}
	}
	if base != nil && len(files) == 0 && len(jdumps) == 0 {
		return base, nil
	}
	r := base
	if r == nil {
		r = &Recording{Meta: Meta{Version: FormatVersion, Source: SourceFiles}}
	} else {
		r.Meta.Inputs = append(r.Meta.Inputs, Input{Path: baseDir, Kind: InputRecording})
	}
	if err := addFiles(r, files); err != nil {
		return nil, err
	}
	addJavaDumps(r, jdumps)
	return r, nil
}

// loadProfileDir loads every regular, non-hidden file of dir, in name
// order, as a Java thread dump or a Go profile input.
func loadProfileDir(dir string) ([]*goprof.File, []javaInput, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	var files []*goprof.File
	var dumps []javaInput
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, d, err := loadInput(path, inside)
		if err != nil {
			return nil, nil, err
		}
		if d != nil {
			dumps = append(dumps, javaInput{path, d})
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 && len(dumps) == 0 {
		return nil, nil, fmt.Errorf("open %s: no profile files and no %s: %w", dir, MetaFile, ErrNotRecording)
	}
	return files, dumps, nil
}

// addFiles adds the parsed files to r: profiles to their views (merged with
// what the view already holds), dumps to Goroutines, inputs, times and
// warnings to Meta.
func addFiles(r *Recording, files []*goprof.File) error {
	byView := map[View][]*goprof.File{}
	var views []View
	var empty []*goprof.File
	for _, f := range files {
		r.Meta.Inputs = append(r.Meta.Inputs, Input{Path: f.Path, Kind: f.Kind})
		if f.Dump != nil {
			r.Goroutines = append(r.Goroutines, f.Dump)
			continue
		}
		p := f.Profile
		if p == nil {
			return fmt.Errorf("open %s: %s input without a profile", f.Path, f.Kind)
		}
		if d := time.Duration(p.DurationNanos); d > r.Meta.Duration {
			r.Meta.Duration = d
		}
		if p.TimeNanos != 0 {
			t := time.Unix(0, p.TimeNanos)
			if r.Meta.Start.IsZero() || t.Before(r.Meta.Start) {
				r.Meta.Start = t
			}
		}
		if len(p.Sample) == 0 {
			empty = append(empty, f)
		}
		v, ok := viewOf(f.Kind, len(p.Sample) > 0)
		if !ok {
			continue
		}
		if f.Kind == goprof.KindContention {
			r.Meta.Warnings = append(r.Meta.Warnings, fmt.Sprintf("%s: contention profile whose stacks end neither at an Unlock nor at a wait: read as a block profile (stacks taken as where goroutines waited)", f.Path))
		}
		if byView[v] == nil {
			views = append(views, v)
		}
		byView[v] = append(byView[v], f)
	}
	for _, v := range views {
		fs := byView[v]
		srcs := make([]*profile.Profile, 0, len(fs)+1)
		if old := r.Profile(v); old != nil {
			srcs = append(srcs, old)
		}
		for _, f := range fs {
			srcs = append(srcs, f.Profile)
		}
		if len(srcs) == 1 {
			r.SetProfile(v, srcs[0])
			continue
		}
		merged, err := profile.Merge(srcs)
		if err != nil {
			return fmt.Errorf("open %s: merge into %s view: %w", fs[len(fs)-1].Path, v, err)
		}
		r.SetProfile(v, merged)
		if v == ViewGoGoroutine {
			r.Meta.Warnings = append(r.Meta.Warnings, fmt.Sprintf("%d goroutine profiles merged: goroutine counts are summed over the snapshots", len(srcs)))
		}
	}
	for _, f := range empty {
		if w := emptyWarning(f, len(r.Goroutines) > 0); w != "" {
			r.Meta.Warnings = append(r.Meta.Warnings, w)
		}
	}
	return nil
}

// viewOf returns the view a profile of kind k belongs to; false for a
// profile that goes to none (an empty undecided contention profile).
func viewOf(k goprof.Kind, hasSamples bool) (View, bool) {
	switch k {
	case goprof.KindMutex:
		return ViewGoMutex, true
	case goprof.KindBlock:
		return ViewGoBlock, true
	case goprof.KindContention:
		return ViewGoBlock, hasSamples
	case goprof.KindCPU:
		return ViewGoCPU, true
	case goprof.KindGoroutine:
		return ViewGoGoroutine, true
	}
	return "", false
}

// emptyWarning explains an empty profile: mutex and block profiles are
// empty unless the program turned them on, which most programs never do.
func emptyWarning(f *goprof.File, haveDumps bool) string {
	fallback := "falling back to goroutine dumps"
	if !haveDumps {
		fallback = "a goroutine dump (debug=2) would show where goroutines wait"
	}
	switch f.Kind {
	case goprof.KindMutex:
		return fmt.Sprintf("%s: mutex profile has no samples: either the program never called runtime.SetMutexProfileFraction or it saw no contention while profiled; %s", f.Path, fallback)
	case goprof.KindBlock:
		return fmt.Sprintf("%s: block profile has no samples: either the program never called runtime.SetBlockProfileRate or it saw no contention while profiled; %s", f.Path, fallback)
	case goprof.KindContention:
		return fmt.Sprintf("%s: mutex or block profile has no samples: either the program never called runtime.SetMutexProfileFraction or runtime.SetBlockProfileRate, or it saw no contention while profiled; %s", f.Path, fallback)
	case goprof.KindCPU:
		return fmt.Sprintf("%s: cpu profile has no samples: the program was idle or profiled too briefly", f.Path)
	}
	return ""
}
