package collector

import "github.com/cilium/ebpf"

// doctorFamilies lists the compiled probe objects in display order: the
// tracer's objects, without the optional programs this kernel has no
// tracepoint for (a recording does without them too, with a note).
var doctorFamilies = func() []doctorFamily {
	out := make([]doctorFamily, len(objects))
	for i, o := range objects {
		out[i] = o.doctorFamily
		load := o.load
		out[i].load = func() (*ebpf.CollectionSpec, error) {
			spec, err := load()
			if err == nil {
				dropMissingOptional(spec)
			}
			return spec, err
		}
	}
	return out
}()
