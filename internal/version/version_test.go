package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "75ae8d92e8362ce4cbacfcbcc0e770546fb4cef8"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "75ae8d92e8362ce4cbacfcbcc0e770546fb4cef8"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name, linked, main string
		settings           []debug.BuildSetting
		want               string
	}{
		{"make build in a clone", "v1.2.0-3-g75ae8d9", "(devel)", vcs, "v1.2.0-3-g75ae8d9 (75ae8d92e836)"},
		{"go build in a clone", "dev", "(devel)", vcs, "dev (75ae8d92e836)"},
		{"go build in a modified clone", "dev", "(devel)", dirty, "dev (75ae8d92e836+dirty)"},
		{"go build stamping a pseudo-version", "dev", "v0.0.0-20261201172124-75ae8d92e836", vcs, "v0.0.0-20261201172124-75ae8d92e836"},
		{"go install module@v1.2.0", "dev", "v1.2.0", nil, "v1.2.0"},
		{"go build without VCS stamping", "dev", "(devel)", nil, "dev"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/contend-dev/contend", Version: c.main}, Settings: c.settings}
		if got := fromBuildInfo(c.linked, bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := fromBuildInfo("dev", nil); got != "dev" {
		t.Errorf("no build info: %q", got)
	}
}
