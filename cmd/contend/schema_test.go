package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/internal/testbin"
)

// jsonKeys returns every object key anywhere in the JSON document.
func jsonKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				seen[k] = true
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	var keys []string
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// docSection returns the part of docs/json-schema.md under the heading
// that starts with title, up to the next heading of the same level.
func docSection(t *testing.T, title string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(t), "docs", "json-schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "\n## "+title)
	if i < 0 {
		t.Fatalf("docs/json-schema.md has no section %q", title)
	}
	rest := text[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

// TestCompareAndDoctorJSONDocumented: compare's and doctor's JSON carry
// their schema version, and every key they write is documented in
// docs/json-schema.md.
func TestCompareAndDoctorJSONDocumented(t *testing.T) {
	c := compareJSON(t, live("c-stripe-bad")+","+live("c-writer-bad"), live("c-stripe-fixed"))
	doc, _ := json.Marshal(c)
	section := docSection(t, "`contend compare --format json`")
	if !strings.Contains(section, `"`+c.Schema+`"`) {
		t.Errorf("compare writes schema %q, the docs do not say it", c.Schema)
	}
	check := func(what, section string, keys []string) {
		for _, k := range keys {
			if !strings.Contains(section, "`"+k+"`") {
				t.Errorf("%s writes %q, which docs/json-schema.md does not document", what, k)
			}
		}
	}
	// Fields a run can leave out are set here, so that they are checked.
	keys := append(jsonKeys(t, doc), "no_spread", "no_finding", "missing", "kind", "participants", "over")
	check("compare --format json", section, keys)

	rep := &collector.DoctorReport{Kernel: "6.1", System: []collector.Check{{Name: "x", Status: collector.CheckMissing, Detail: "d", Fix: "f"}}, Verdict: collector.VerdictReady, Fixes: []string{"f"}}
	doc, _ = json.Marshal(doctorJSON{Schema: DoctorSchemaVersion, DoctorReport: rep})
	section = docSection(t, "`contend doctor --json`")
	if !strings.Contains(section, `"`+DoctorSchemaVersion+`"`) {
		t.Errorf("doctor writes schema %q, the docs do not say it", DoctorSchemaVersion)
	}
	check("doctor --json", section, jsonKeys(t, doc))
}
