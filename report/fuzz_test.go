package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/recording"
)

// FuzzPprofInput takes a Go mutex or block profile and a goroutine dump of
// any content through the whole offline path, as `contend analyze` does:
// open, analyze, and render as text, JSON and pprof. Nothing panics, the
// JSON encodes (a NaN or an infinity among the figures would not) and
// decodes back, and the pprof output is a valid profile.
func FuzzPprofInput(f *testing.F) {
	old := goprof.SetMaxDecoded(1 << 20)
	f.Cleanup(func() { goprof.SetMaxDecoded(old) })
	for _, fix := range []string{"iolock-bad", "stripe-fixed"} {
		dir := filepath.Join("..", "analyzer", "testdata", "fixtures", fix)
		var in [3][]byte
		for i, name := range []string{"mutex.pb.gz", "block.pb.gz", "goroutine-debug1.txt"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				// The fuzzer mutates the protobuf, not the deflate
				// stream around it.
				data, err = goprof.Decompress(data)
			}
			if err != nil {
				f.Fatal(err)
			}
			in[i] = data
		}
		f.Add(in[0], in[1], in[2])
	}
	f.Fuzz(func(t *testing.T, mutex, block, dump []byte) {
		dir := t.TempDir()
		var paths []string
		for i, data := range [][]byte{mutex, block, dump} {
			p := filepath.Join(dir, []string{"mutex", "block", "dump"}[i])
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
		rec, err := recording.Open(paths...)
		if err != nil {
			return
		}
		res, err := analyzer.Analyze(rec, analyzer.Options{})
		if err != nil {
			return
		}
		if err := Text(&bytes.Buffer{}, res, TextOptions{Color: true, ShowIdle: true}); err != nil {
			t.Fatalf("text: %v", err)
		}
		var js bytes.Buffer
		if err := JSON(&js, res); err != nil {
			t.Fatalf("json: %v", err)
		}
		var back analyzer.Result
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatalf("the JSON does not decode: %v", err)
		}
		var pp bytes.Buffer
		if err := Pprof(&pp, res); err != nil {
			t.Fatalf("pprof: %v", err)
		}
		p, err := profile.Parse(&pp)
		if err != nil {
			t.Fatalf("the pprof output does not parse: %v", err)
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("the pprof output is not valid: %v", err)
		}
	})
}
