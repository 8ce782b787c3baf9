package collector

// doctorFamilies lists the compiled probe objects in display order: the
// tracer's objects.
var doctorFamilies = func() []doctorFamily {
	out := make([]doctorFamily, len(objects))
	for i, o := range objects {
		out[i] = o.doctorFamily
	}
	return out
}()
