package analyzer

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contend-dev/contend/recording"
)

// writeBigProfile writes the 100k-stack synthetic block profile of
// fixtures/cmd/bigprofile into a temporary directory.
func writeBigProfile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "block.pb.gz")
	cmd := exec.Command("go", "run", "./fixtures/cmd/bigprofile", "-n", "100000", "-o", path)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("bigprofile: %v\n%s", err, out)
	}
	return path
}

// BenchmarkAnalyzeLarge measures Analyze alone on a 100k-stack block
// profile (parsing excluded); `contend analyze` against `go tool pprof
// -top` is BenchmarkAnalyzeVsPprof in cmd/contend.
func BenchmarkAnalyzeLarge(b *testing.B) {
	rec, err := recording.Open(writeBigProfile(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Analyze(rec, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
