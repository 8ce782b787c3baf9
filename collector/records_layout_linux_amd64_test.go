//go:build linux && amd64

package collector

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/contend-dev/contend/collector/probes"
	"github.com/contend-dev/contend/recording"
)

// TestRecordLayouts checks every Go mirror of a kernel struct against the
// struct's BTF in the compiled objects: size, and offset and size of each
// field (padding fields aside). It needs no privileges.
func TestRecordLayouts(t *testing.T) {
	var specs []*ebpf.CollectionSpec
	for _, load := range []func() (*ebpf.CollectionSpec, error){probes.LoadFutex, probes.LoadIo, probes.LoadSched, probes.LoadOncpu, probes.LoadGosync} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	find := func(name string) *btf.Struct {
		for _, spec := range specs {
			var s *btf.Struct
			if err := spec.Types.TypeByName(name, &s); err == nil {
				return s
			}
		}
		return nil
	}
	for _, tc := range []struct {
		c      string
		goType any
	}{
		{"ct_wait_key", waitKey{}},
		{"ct_agg", aggVal{}},
		{"ct_lock_key", lockKey{}},
		{"ct_lock_val", lockVal{}},
		{"ct_wake_key", wakeKey{}},
		{"ct_wake_val", wakeVal{}},
		{"ct_offcpu_key", offcpuKey{}},
		{"ct_offcpu_val", offcpuVal{}},
		{"ct_wakes_key", edgeKey{}},
		{"ct_oncpu_key", oncpuKey{}},
		{"ct_oncpu_val", oncpuVal{}},
		{"ct_io_key", ioKey{}},
		{"ct_gosync_key", goSyncKey{}},
		{"ct_gosync_caller", goCallerKey{}},
		{"ct_gosync_g", goGKey{}},
		{"ct_window_hdr", windowHdr{}},
		{"ct_event", rawEvent{}},
		{"ct_sleep", sleepRec{}},
		{"ct_call_start", callStart{}},
		{"ct_stack", stackVal{}},
		{"ct_target_arg", targetArg{}},
	} {
		s := find(tc.c)
		if s == nil {
			t.Errorf("struct %s not in the objects' BTF", tc.c)
			continue
		}
		gt := reflect.TypeOf(tc.goType)
		if int(s.Size) != int(gt.Size()) {
			t.Errorf("%s: %d bytes in C, %d in Go (%s)", tc.c, s.Size, gt.Size(), gt)
			continue
		}
		var cf [][2]uint32
		for _, m := range s.Members {
			if strings.HasPrefix(m.Name, "_") {
				continue
			}
			size, err := btf.Sizeof(m.Type)
			if err != nil {
				t.Fatal(err)
			}
			cf = append(cf, [2]uint32{m.Offset.Bytes(), uint32(size)})
		}
		var gf [][2]uint32
		for i := 0; i < gt.NumField(); i++ {
			f := gt.Field(i)
			if f.Name == "_" {
				continue
			}
			gf = append(gf, [2]uint32{uint32(f.Offset), uint32(f.Type.Size())})
		}
		if !reflect.DeepEqual(cf, gf) {
			t.Errorf("%s: fields (offset, size) %v in C, %v in Go", tc.c, cf, gf)
		}
	}
}

// TestCounterNames checks that the counter names come out of the objects'
// BTF, complete and in the categories Stats relies on.
func TestCounterNames(t *testing.T) {
	for _, load := range []func() (*ebpf.CollectionSpec, error){probes.LoadFutex, probes.LoadIo, probes.LoadSched, probes.LoadOncpu, probes.LoadGosync} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		names, err := counterNames(spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) < 20 {
			t.Fatalf("%d counter names: %v", len(names), names)
		}
	names:
		for i, n := range names {
			for _, p := range []string{recording.CounterEventPrefix, recording.CounterDropPrefix, recording.CounterSampledPrefix, recording.CounterInfoPrefix} {
				if strings.HasPrefix(n, p) {
					continue names
				}
			}
			t.Errorf("counter %d %q has no category prefix", i, n)
		}
		if names[0] != "ev_futex_wait" {
			t.Errorf("counter 0 is %q, want ev_futex_wait", names[0])
		}
	}
}
