package recording

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/contend-dev/contend/goprof"
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
		data, err := readBudgeted(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		d, err := javadump.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// loadJavaDump reads path as a Java thread dump when its content looks
// like one; ok is false for any other content, which is left to goprof.
func loadJavaDump(path string) (d *javadump.Dump, ok bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("open: %w", err)
	}
	if !javadump.Looks(data) {
		return nil, false, nil
	}
	d, err = javadump.Parse(data)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	return d, true, nil
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
