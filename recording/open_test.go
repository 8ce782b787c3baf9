package recording

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/goprof"
)

// testProfile builds a Go-looking profile with the given sample types and
// one sample per leaf function, each of value v.
func testProfile(types [2]string, units [2]string, leaves []string, v int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: types[0], Unit: units[0]}, {Type: types[1], Unit: units[1]}},
		PeriodType: &profile.ValueType{Type: types[0], Unit: units[0]},
		Period:     1,
	}
	goexit := &profile.Function{ID: 1, Name: "runtime.goexit"}
	root := &profile.Location{ID: 1, Line: []profile.Line{{Function: goexit}}}
	p.Function = []*profile.Function{goexit}
	p.Location = []*profile.Location{root}
	for i, name := range leaves {
		fn := &profile.Function{ID: uint64(i + 2), Name: name}
		loc := &profile.Location{ID: uint64(i + 2), Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc, root}, Value: []int64{1, v}})
	}
	return p
}

func contention(leaves []string, v int64) *profile.Profile {
	return testProfile([2]string{"contentions", "delay"}, [2]string{"count", "nanoseconds"}, leaves, v)
}

func cpuProfile(d time.Duration, start time.Time) *profile.Profile {
	p := testProfile([2]string{"samples", "cpu"}, [2]string{"count", "nanoseconds"}, []string{"main.spin"}, 10e6)
	p.DurationNanos = int64(d)
	p.TimeNanos = start.UnixNano()
	return p
}

func writeTestProfile(t *testing.T, dir, name string, p *profile.Profile) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeTestFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const testDump2 = `goroutine 7 [sync.Mutex.Lock]:
sync.(*Mutex).Lock(...)
	sync/mutex.go:46
main.(*store).get(0xc000010000)
	/app/store.go:12 +0x2d
created by main.main in goroutine 1
	/app/main.go:20 +0x85
`

const testDump1 = `goroutine profile: total 2
2 @ 0x4805a5 0x485ea1
#	0x4805a4	main.(*store).get+0x24	/app/store.go:12

`

func totalDelay(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[1]
	}
	return n
}

func TestOpenFiles(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mutex := writeTestProfile(t, dir, "a", contention([]string{"sync.(*Mutex).Unlock"}, 500))
	block := writeTestProfile(t, dir, "b", contention([]string{"sync.(*Mutex).Lock", "runtime.chanrecv1"}, 700))
	cpu := writeTestProfile(t, dir, "c", cpuProfile(3*time.Second, start))
	cpu2 := writeTestProfile(t, dir, "c2", cpuProfile(5*time.Second, start.Add(time.Minute)))
	dump2 := writeTestFile(t, dir, "d", testDump2)
	dump1 := writeTestFile(t, dir, "e", testDump1)

	r, err := Open(dump2, mutex, cpu, block, dump1, cpu2)
	if err != nil {
		t.Fatal(err)
	}
	wantInputs := []Input{
		{Path: dump2, Kind: goprof.KindGoroutineDump},
		{Path: mutex, Kind: goprof.KindMutex},
		{Path: cpu, Kind: goprof.KindCPU},
		{Path: block, Kind: goprof.KindBlock},
		{Path: dump1, Kind: goprof.KindGoroutineText},
		{Path: cpu2, Kind: goprof.KindCPU},
	}
	if diff := cmp.Diff(wantInputs, r.Meta.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if r.Meta.Source != SourceFiles || r.IsLive() {
		t.Errorf("source %q", r.Meta.Source)
	}
	if r.Meta.Duration != 5*time.Second {
		t.Errorf("duration %v, want the longest profile's 5s", r.Meta.Duration)
	}
	if !r.Meta.Start.Equal(start) {
		t.Errorf("start %v, want the earliest profile's %v", r.Meta.Start, start)
	}
	if got := totalDelay(r.Profile(ViewGoMutex)); got != 500 {
		t.Errorf("mutex view delay %d, want 500", got)
	}
	if got := totalDelay(r.Profile(ViewGoBlock)); got != 1400 {
		t.Errorf("block view delay %d, want 1400", got)
	}
	// Two CPU profiles are merged: both samples' values add up.
	if p := r.Profile(ViewGoCPU); p == nil || totalDelay(p) != 20e6 {
		t.Errorf("cpu view not merged from both files: %v", p)
	}
	if r.Profile(ViewGoGoroutine) != nil {
		t.Error("goroutine view without a goroutine profile")
	}
	if len(r.Goroutines) != 2 || r.Goroutines[0].Kind != goprof.KindGoroutineDump || r.Goroutines[1].Kind != goprof.KindGoroutineText {
		t.Errorf("dumps not in the order given: %d dumps", len(r.Goroutines))
	}
	if len(r.Meta.Warnings) != 0 {
		t.Errorf("unexpected warnings %q", r.Meta.Warnings)
	}
}

func TestOpenMergesSameKind(t *testing.T) {
	dir := t.TempDir()
	a := writeTestProfile(t, dir, "m1", contention([]string{"sync.(*Mutex).Unlock"}, 100))
	b := writeTestProfile(t, dir, "m2", contention([]string{"sync.(*RWMutex).Unlock", "sync.(*Mutex).Unlock"}, 30))
	r, err := Open(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := totalDelay(r.Profile(ViewGoMutex)); got != 160 {
		t.Errorf("merged delay %d, want 160", got)
	}
	if err := r.Profile(ViewGoMutex).CheckValid(); err != nil {
		t.Error(err)
	}
}

func TestOpenEmptyAndUndecided(t *testing.T) {
	dir := t.TempDir()
	empty := writeTestProfile(t, dir, "empty.pb.gz", contention(nil, 0))
	legacyEmpty := writeTestFile(t, dir, "mutex.txt", "--- mutex:\ncycles/second=2000000000\nsampling period=0\n")
	odd := writeTestProfile(t, dir, "odd.pb.gz", contention([]string{"main.work"}, 10))
	dump := writeTestFile(t, dir, "g.txt", testDump2)

	r, err := Open(empty, legacyEmpty, odd, dump)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds := []goprof.Kind{goprof.KindContention, goprof.KindMutex, goprof.KindContention, goprof.KindGoroutineDump}
	for i, in := range r.Meta.Inputs {
		if in.Kind != wantKinds[i] {
			t.Errorf("input %s: kind %s, want %s", in.Path, in.Kind, wantKinds[i])
		}
	}
	// The empty legacy mutex profile keeps its view; the empty undecided
	// one goes nowhere; the undecided one with samples is read as block.
	if p := r.Profile(ViewGoMutex); p == nil || len(p.Sample) != 0 {
		t.Errorf("mutex view: %v", p)
	}
	if p := r.Profile(ViewGoBlock); p == nil || totalDelay(p) != 10 {
		t.Errorf("block view: %v", p)
	}
	want := []string{
		odd + ": contention profile whose stacks end neither at an Unlock nor at a wait: read as a block profile",
		empty + ": mutex or block profile has no samples: either the program never called runtime.SetMutexProfileFraction or runtime.SetBlockProfileRate, or it saw no contention while profiled; falling back to goroutine dumps",
		legacyEmpty + ": mutex profile has no samples: either the program never called runtime.SetMutexProfileFraction or it saw no contention while profiled; falling back to goroutine dumps",
	}
	if len(r.Meta.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", r.Meta.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(r.Meta.Warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, r.Meta.Warnings[i], w)
		}
	}
}

func TestOpenEmptyBlockWithoutDumps(t *testing.T) {
	dir := t.TempDir()
	legacy := writeTestFile(t, dir, "block.txt", "--- contention:\ncycles/second=2000000000\n")
	r, err := Open(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Meta.Warnings) != 1 || !strings.Contains(r.Meta.Warnings[0], "block profile has no samples: either the program never called runtime.SetBlockProfileRate or it saw no contention while profiled; a goroutine dump (debug=2) would show") {
		t.Errorf("warnings %q", r.Meta.Warnings)
	}
	if r.Meta.Duration != 0 {
		t.Errorf("duration %v, want 0 without a profile duration", r.Meta.Duration)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeTestProfile(t, dir, "good.pb.gz", contention([]string{"sync.(*Mutex).Unlock"}, 1))
	bad := writeTestFile(t, dir, "bad.pb.gz", "\x1f\x8b\x08garbage")
	plainDir := filepath.Join(dir, "plain")
	if err := os.Mkdir(plainDir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec1, rec2 := filepath.Join(dir, "rec1"), filepath.Join(dir, "rec2")
	for _, d := range []string{rec1, rec2} {
		if err := Write(d, &Recording{Meta: Meta{Source: SourceLive}}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		paths []string
		is    error
		want  string
	}{
		{"no input", nil, ErrNoInput, "no input"},
		{"corrupt file", []string{good, bad}, goprof.ErrBadProfile, bad + ": "},
		{"missing file", []string{filepath.Join(dir, "nope")}, os.ErrNotExist, filepath.Join(dir, "nope")},
		{"empty directory", []string{plainDir}, ErrNotRecording, plainDir},
		{"two recordings", []string{rec1, good, rec2}, ErrTwoRecordings, rec2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.paths...)
			if !errors.Is(err, tt.is) {
				t.Fatalf("error %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %q", err, tt.want)
			}
		})
	}
}

func TestOpenProfileDirectory(t *testing.T) {
	// A directory without meta.json, as a fixture writes its profiles,
	// is read as its files in name order.
	dir := t.TempDir()
	writeTestProfile(t, dir, "mutex.pb.gz", contention([]string{"sync.(*Mutex).Unlock"}, 3))
	writeTestFile(t, dir, "goroutine.txt", testDump2)
	writeTestFile(t, dir, ".goroutine.txt.tmp-123", "partial")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Input{
		{Path: filepath.Join(dir, "goroutine.txt"), Kind: goprof.KindGoroutineDump},
		{Path: filepath.Join(dir, "mutex.pb.gz"), Kind: goprof.KindMutex},
	}
	if diff := cmp.Diff(want, r.Meta.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if r.Meta.Source != SourceFiles {
		t.Errorf("source %q", r.Meta.Source)
	}
	writeTestFile(t, dir, "notes.md", "# my notes\n")
	if _, err := Open(dir); !errors.Is(err, goprof.ErrBadProfile) || !strings.Contains(err.Error(), "notes.md") {
		t.Errorf("a non-profile file in the directory: error %v", err)
	}
}

func TestOpenRecordingWithFiles(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	live := &Recording{Meta: Meta{Source: SourceLive, PID: 42, Duration: 2 * time.Second, Warnings: []string{"live warning"}}}
	live.SetProfile(ViewGoMutex, contention([]string{"sync.(*Mutex).Unlock"}, 50))
	live.SetProfile(ViewOnCPU, testProfile([2]string{"samples", "cpu"}, [2]string{"count", "nanoseconds"}, []string{"spin"}, 1))
	if err := Write(rec, live); err != nil {
		t.Fatal(err)
	}

	alone, err := Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Meta.PID != 42 || len(alone.Meta.Inputs) != 0 {
		t.Errorf("a recording opened alone changed: pid %d inputs %v", alone.Meta.PID, alone.Meta.Inputs)
	}

	mutex := writeTestProfile(t, dir, "mutex.pb.gz", contention([]string{"sync.(*Mutex).Unlock"}, 7))
	cpu := writeTestProfile(t, dir, "cpu.pb.gz", cpuProfile(9*time.Second, time.Unix(1, 0)))
	dump := writeTestFile(t, dir, "g.txt", testDump2)
	r, err := Open(mutex, rec, dump, cpu)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.Source != SourceLive || r.Meta.PID != 42 {
		t.Errorf("source %q pid %d, want the recording's", r.Meta.Source, r.Meta.PID)
	}
	wantInputs := []Input{
		{Path: rec, Kind: InputRecording},
		{Path: mutex, Kind: goprof.KindMutex},
		{Path: dump, Kind: goprof.KindGoroutineDump},
		{Path: cpu, Kind: goprof.KindCPU},
	}
	if diff := cmp.Diff(wantInputs, r.Meta.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if got := totalDelay(r.Profile(ViewGoMutex)); got != 57 {
		t.Errorf("mutex view delay %d, want the recording's 50 + the file's 7", got)
	}
	if r.Profile(ViewOnCPU) == nil || r.Profile(ViewGoCPU) == nil || len(r.Goroutines) != 1 {
		t.Error("views or dumps lost in the merge")
	}
	if r.Meta.Duration != 9*time.Second {
		t.Errorf("duration %v, want 9s", r.Meta.Duration)
	}
	if len(r.Meta.Warnings) != 1 || r.Meta.Warnings[0] != "live warning" {
		t.Errorf("warnings %q", r.Meta.Warnings)
	}
}

func TestOpenWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	mutex := writeTestProfile(t, dir, "mutex.pb.gz", contention([]string{"sync.(*Mutex).Unlock"}, 5))
	dump := writeTestFile(t, dir, "g.txt", testDump2)
	r, err := Open(mutex, dump)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rec")
	if err := Write(out, r); err != nil {
		t.Fatal(err)
	}
	back, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Meta.Inputs, back.Meta.Inputs); diff != "" {
		t.Errorf("inputs after round trip (-want +got):\n%s", diff)
	}
	if back.Meta.Source != SourceFiles || totalDelay(back.Profile(ViewGoMutex)) != 5 {
		t.Errorf("source %q, mutex delay %d", back.Meta.Source, totalDelay(back.Profile(ViewGoMutex)))
	}
	if len(back.Goroutines) != 1 || string(back.Goroutines[0].Raw) != testDump2 {
		t.Error("dump not kept as written")
	}
}
