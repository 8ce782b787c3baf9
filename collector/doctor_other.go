//go:build !(linux && amd64)

package collector

// doctorFamilies is empty where no probe objects are built (see
// tracer_other.go): doctor then reports the probes as unavailable.
var doctorFamilies []doctorFamily
