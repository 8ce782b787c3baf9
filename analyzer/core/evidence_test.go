package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// Every EvidenceKind constant is listed in EvidenceKinds, so that the
// renderers' completeness test covers it.
func TestEvidenceKindsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "evidence.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EvidenceKind" {
			return true
		}
		for i, name := range vs.Names {
			lit := vs.Values[i].(*ast.BasicLit).Value
			kind := EvidenceKind(lit[1 : len(lit)-1])
			n++
			if !slices.Contains(EvidenceKinds, kind) {
				t.Errorf("%s (%s) is missing from EvidenceKinds", name.Name, kind)
			}
		}
		return true
	})
	if n != len(EvidenceKinds) || n == 0 {
		t.Errorf("%d constants, %d listed", n, len(EvidenceKinds))
	}
}

func TestFact(t *testing.T) {
	e := Fact("futex", EvHandoffs, "woken", uint64(3), "rate", 1.5, "releaser", "f (a.c:1)", "empty", "", "flag", true)
	if e.Figures["woken"] != 3 || e.Figures["rate"] != 1.5 || e.Figures["flag"] != 1 || e.Names["releaser"] != "f (a.c:1)" {
		t.Errorf("fact %+v", e)
	}
	if _, ok := e.Names["empty"]; ok {
		t.Error("an empty name is kept")
	}
}
