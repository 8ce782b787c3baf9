package analyzer_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestPathsImportOnlyCore holds the analyzer's layers: core imports no
// other analyzer package, and each input path imports core and never
// another path, so what two paths share has to live in core.
func TestPathsImportOnlyCore(t *testing.T) {
	const base = "github.com/contend-dev/contend/analyzer"
	allowed := map[string][]string{
		"core":      nil,
		"live":      {"core"},
		"goprofile": {"core"},
		"java":      {"core"},
	}
	for dir, may := range allowed {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range append(pkg.Imports, pkg.TestImports...) {
			rest, ok := strings.CutPrefix(imp, base+"/")
			if !ok && imp != base {
				continue
			}
			ok = false
			for _, m := range may {
				ok = ok || rest == m
			}
			if !ok {
				t.Errorf("analyzer/%s imports %s", dir, imp)
			}
		}
	}
}
