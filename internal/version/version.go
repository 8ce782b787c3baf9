// Package version holds contend's version, set at link time by the Makefile
// (-X github.com/contend-dev/contend/internal/version.Version=…).
package version

import (
	"runtime/debug"
	"strings"
)

// Version is the release version; "dev" for a build outside a release.
var Version = "dev"

// String returns the version with the VCS revision when the binary carries
// one. A build without the Makefile still says what it is: `go install
// …/cmd/contend@v1.2.0` stamps the module version into the build info, and
// `go build` in a git clone stamps the revision.
func String() string {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(Version, bi)
}

// fromBuildInfo is String over a given link-time version and build info
// (nil when the binary has none).
func fromBuildInfo(v string, bi *debug.BuildInfo) string {
	if bi == nil {
		return v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
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
	// A pseudo-version (v0.0.0-20260102150405-abcdef123456) already ends
	// in the revision.
	if rev != "" && !strings.Contains(v, rev) {
		v += " (" + rev + dirty + ")"
	}
	return v
}
