package recording

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/boundedio"
	"github.com/contend-dev/contend/javadump"
)

// InputJavaDump is the kind listed in Meta.Inputs for a Java thread dump
// given to Open.
const InputJavaDump goprof.Kind = "java-thread-dump"

// writeJavaDumps stores each Java thread dump as java-threads-N.txt, its
// text as read.
func writeJavaDumps(w *dirWriter, dumps []*javadump.Dump) error {
	for i, d := range dumps {
		if d == nil || len(d.Raw) == 0 {
			continue
		}
		name := fmt.Sprintf("%s%d.txt", javaDumpPrefix, i)
		if err := w.writeFile(name, func(w io.Writer) error {
			_, err := w.Write(d.Raw)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// readJavaDumps parses the java-threads-N.txt files among entries, in
// order of N.
func readJavaDumps(dir string, entries []os.DirEntry) ([]*javadump.Dump, error) {
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, javaDumpPrefix) && strings.HasSuffix(n, ".txt") {
			names = append(names, n)
		}
	}
	index := func(name string) int {
		var n int
		fmt.Sscanf(strings.TrimPrefix(name, javaDumpPrefix), "%d", &n)
		return n
	}
	sort.Slice(names, func(i, j int) bool { return index(names[i]) < index(names[j]) })
	var out []*javadump.Dump
	for _, name := range names {
		data, err := goprof.ReadFileWith(filepath.Join(dir, name), inside)
		if err != nil {
			return nil, err
		}
		d, err := parseJavaDump(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// parseJavaDump parses a Java thread dump read from a file, its parsed
// form charged to goprof's input budget first.
func parseJavaDump(data []byte) (*javadump.Dump, error) {
	if err := goprof.InputBudget().Charge("parsing it", javadump.Cost(data)); err != nil {
		return nil, err
	}
	return javadump.Parse(data)
}

// loadInput reads the file at path through goprof's bounded opener (a
// regular file within the budget, refused from its size before it is
// read) and parses it: as a Java thread dump when its content looks like
// one, else as a Go profile or dump (goprof), either charged to the input
// budget.
func loadInput(path string, o boundedio.Options) (*goprof.File, *javadump.Dump, error) {
	data, err := goprof.ReadFileWith(path, o)
	if err != nil {
		return nil, nil, fmt.Errorf("read input: %w", err)
	}
	if javadump.Looks(data) {
		d, err := parseJavaDump(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, d, nil
	}
	f, err := goprof.ParseWithin(path, data, goprof.InputBudget())
	return f, nil, err
}

// javaInput is a Java thread dump given to Open, with its path.
type javaInput struct {
	path string
	dump *javadump.Dump
}

// addJavaDumps adds the dumps to r in the order given, lists them in
// Meta.Inputs, and lets the earliest dump's timestamp start a recording
// that has no other start.
func addJavaDumps(r *Recording, dumps []javaInput) {
	for _, in := range dumps {
		r.JavaDumps = append(r.JavaDumps, in.dump)
		r.Meta.Inputs = append(r.Meta.Inputs, Input{Path: in.path, Kind: InputJavaDump})
		if t := in.dump.Taken; !t.IsZero() && r.Meta.Source == SourceFiles && (r.Meta.Start.IsZero() || t.Before(r.Meta.Start)) {
			r.Meta.Start = t
		}
	}
}
