package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	cases := []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"(devel)", vcs("true"), "pgbus dev commit 1a2b3c4d5e6f (modified)"},
		{"v0.0.0-20260101120000-1a2b3c4d5e6f", vcs("false"), "pgbus v0.0.0-20260101120000-1a2b3c4d5e6f commit 1a2b3c4d5e6f"},
		{"v1.4.0", nil, "pgbus v1.4.0"}, // go install github.com/pgbus/pgbus@v1.4.0
		{"", nil, "pgbus dev"},          // a test binary
	}
	for _, c := range cases {
		got := describe(&debug.BuildInfo{Main: debug.Module{Path: "github.com/pgbus/pgbus", Version: c.version}, Settings: c.settings})
		if got != c.want {
			t.Errorf("describe(%q) = %q, want %q", c.version, got, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	for v, want := range map[string]string{"v1.4.0": "v1.4.0", "(devel)": "dev", "": "dev",
		"v0.0.0-20260101120000-1a2b3c4d5e6f": "v0.0.0-20260101120000-1a2b3c4d5e6f"} {
		if got := versionOf(&debug.BuildInfo{Main: debug.Module{Version: v}}); got != want {
			t.Errorf("version(%q) = %q, want %q", v, got, want)
		}
	}
}
