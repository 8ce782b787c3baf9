package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// constsOf returns the constants of type typ declared in file, by name.
func constsOf(t *testing.T, file, typ string) map[string]ast.Expr {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ast.Expr{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		inBlock := false
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok {
				inBlock = id.Name == typ
			}
			if !inBlock {
				continue
			}
			for i, n := range vs.Names {
				var v ast.Expr
				if i < len(vs.Values) {
					v = vs.Values[i]
				}
				out[n.Name] = v
			}
		}
	}
	return out
}

// TestEveryKindIsComplete fails when a verdict kind declared in result.go
// lacks a headline, a suggestion or an evidence sentence: a row in
// KindRules with the form of its headline, remedies that each have a
// suggestion, and evidence kinds that are each listed in EvidenceKinds
// (whose sentences the renderers' completeness test checks).
func TestEveryKindIsComplete(t *testing.T) {
	kinds := constsOf(t, "result.go", "Kind")
	if len(kinds) == 0 {
		t.Fatal("no Kind constants in result.go")
	}
	for name, v := range kinds {
		lit := v.(*ast.BasicLit).Value
		k := Kind(lit[1 : len(lit)-1])
		r, ok := KindRules[k]
		if !ok {
			t.Errorf("%s (%s) has no row in KindRules", name, k)
			continue
		}
		if r.Headline == "" {
			t.Errorf("%s has no headline", name)
		}
		if len(r.Remedies) == 0 {
			t.Errorf("%s has no remedy", name)
		}
		for _, rem := range r.Remedies {
			if suggestions[rem] == nil {
				t.Errorf("%s: remedy %d has no suggestion", name, rem)
			}
		}
		if len(r.Evidence) == 0 {
			t.Errorf("%s has no evidence kind", name)
		}
		for _, e := range r.Evidence {
			if !slices.Contains(EvidenceKinds, e) {
				t.Errorf("%s: evidence kind %s is not in EvidenceKinds, so no sentence is checked for it", name, e)
			}
		}
	}
	if len(KindRules) != len(kinds) {
		t.Errorf("%d rows in KindRules for %d kinds", len(KindRules), len(kinds))
	}
}

// TestEveryRemedyBelongsToAKind fails when a remedy has no suggestion or
// no kind whose findings can carry it.
func TestEveryRemedyBelongsToAKind(t *testing.T) {
	remedies := constsOf(t, "suggest.go", "Remedy")
	n := len(remedies)
	if n == 0 || len(suggestions) != n {
		t.Fatalf("%d remedies, %d suggestions", n, len(suggestions))
	}
	for rem := range suggestions {
		found := false
		for _, r := range KindRules {
			found = found || slices.Contains(r.Remedies, rem)
		}
		if !found {
			t.Errorf("remedy %d belongs to no kind", rem)
		}
	}
}
