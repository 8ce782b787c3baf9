package report

import (
	"encoding/json"
	"io"

	"github.com/contend-dev/contend/analyzer"
)

// JSON writes r as one indented JSON document. Its shape is the
// analyzer.Result type; "schema" carries analyzer.SchemaVersion and
// docs/json-schema.md documents every field. Empty lists are written as
// [] where the schema promises a list (findings), omitted elsewhere.
func JSON(w io.Writer, r *analyzer.Result) error {
	out := *r
	if out.Schema == "" {
		out.Schema = analyzer.SchemaVersion
	}
	if out.Findings == nil {
		out.Findings = []analyzer.Finding{}
	}
	// Word the evidence on copies: r stays as the analyzer returned it.
	out.Findings = append(make([]analyzer.Finding, 0, len(out.Findings)), out.Findings...)
	for i := range out.Findings {
		out.Findings[i].Evidence = append([]analyzer.Evidence(nil), out.Findings[i].Evidence...)
	}
	analyzer.FillEvidenceText(&out)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(&out)
}
