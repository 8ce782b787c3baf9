package goprof

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/internal/testbin"
)

func shape(nSamples, nLocs, linesPerLoc, strLabels, numLabels, locsPerSample int) []byte {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "a", Unit: "count"}, {Type: "b", Unit: "nanoseconds"}}}
	for i := 0; i < nLocs; i++ {
		fn := &profile.Function{ID: uint64(i + 1), Name: "f" + string(rune('a'+i%26)), Filename: "x.go"}
		p.Function = append(p.Function, fn)
		l := &profile.Location{ID: uint64(i + 1), Address: uint64(i)}
		for j := 0; j < linesPerLoc; j++ {
			l.Line = append(l.Line, profile.Line{Function: fn, Line: int64(j)})
		}
		p.Location = append(p.Location, l)
	}
	for i := 0; i < nSamples; i++ {
		s := &profile.Sample{Value: []int64{1, 2}}
		for j := 0; j < locsPerSample && nLocs > 0; j++ {
			s.Location = append(s.Location, p.Location[(i+j)%nLocs])
		}
		if strLabels > 0 {
			s.Label = map[string][]string{}
			for j := 0; j < strLabels; j++ {
				s.Label["k"+string(rune('a'+j))] = []string{"v"}
			}
		}
		if numLabels > 0 {
			s.NumLabel = map[string][]int64{}
			for j := 0; j < numLabels; j++ {
				s.NumLabel["n"+string(rune('a'+j))] = []int64{int64(i)}
			}
		}
		p.Sample = append(p.Sample, s)
	}
	var b bytes.Buffer
	p.WriteUncompressed(&b)
	return b.Bytes()
}

// TestModelEstimateBoundsAllocation checks that profileCost is an upper
// bound of what pprof's parser allocates, for profiles of every shape the
// estimate distinguishes (bare samples, string and number labels, many
// locations per sample, locations with inlined lines) and for the real
// profiles in testdata; and that it is not so loose that real profiles
// are refused far below the budget.
func TestModelEstimateBoundsAllocation(t *testing.T) {
	type input struct {
		name string
		data []byte
	}
	var inputs []input
	for _, c := range []struct {
		name                                                      string
		samples, locs, lines, strLabels, numLabels, locsPerSample int
	}{
		{"bare samples", 10000, 0, 0, 0, 0, 0},
		{"one location each", 10000, 1, 1, 0, 0, 1},
		{"a string label", 10000, 1, 1, 1, 0, 1},
		{"three string labels", 10000, 1, 1, 3, 0, 1},
		{"a number label", 10000, 1, 1, 0, 1, 1},
		{"both kinds of labels", 10000, 1, 1, 2, 2, 1},
		{"deep stacks", 10000, 100, 1, 0, 0, 20},
		{"many locations", 1, 10000, 1, 0, 0, 1},
		{"inlined lines", 1, 10000, 5, 0, 0, 1},
	} {
		inputs = append(inputs, input{c.name, shape(c.samples, c.locs, c.lines, c.strLabels, c.numLabels, c.locsPerSample)})
	}
	paths, _ := filepath.Glob("testdata/*.pb.gz")
	if len(paths) == 0 {
		t.Fatal("no profiles in testdata")
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := Decompress(raw)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{p, data})
	}
	for _, in := range inputs {
		cost, err := profileCost(in.data)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		alloc := testbin.Allocated(func() {
			if _, err := profile.ParseData(in.data); err != nil {
				t.Fatalf("%s: %v", in.name, err)
			}
		})
		if alloc > uint64(cost) {
			t.Errorf("%s: parsing allocated %d bytes, more than the estimate %d", in.name, alloc, cost)
		}
		if alloc < uint64(cost)/8 {
			t.Errorf("%s: parsing allocated %d bytes, the estimate %d is more than 8 times that", in.name, alloc, cost)
		}
	}
}
