// Package version holds contend's version, set at link time by the Makefile
// (-X github.com/contend-dev/contend/internal/version.Version=…).
package version

import "runtime/debug"

// Version is the release version; "dev" for a build outside a release.
var Version = "dev"

// String returns the version with the VCS revision when the binary carries
// one.
func String() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			v += " (" + rev + dirty + ")"
		}
	}
	return v
}
