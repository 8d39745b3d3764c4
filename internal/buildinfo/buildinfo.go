// Package buildinfo says which pgbus a binary is: the module version and
// the commit it was built from, as set at link time or else as the Go
// toolchain recorded them. Every front end that reports a version (pgbus
// version, the MCP server, the dashboard, the metrics) words it from
// here.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// version and commit, when set at link time, name the binary in place of
// what the toolchain recorded, which a build without the repository's
// history (go build -buildvcs=false, a container build that leaves .git
// out) lacks:
//
//	go build -ldflags "-X github.com/pgbus/pgbus/internal/buildinfo.version=v1.2.3 -X github.com/pgbus/pgbus/internal/buildinfo.commit=$(git rev-parse HEAD)"
//
// Either may be set alone; the other is then the toolchain's.
var version, commit string

// Describe describes the running binary: "pgbus VERSION [commit HASH
// [(modified)]]", the version being Version's: a release tag with go
// install, "dev" or a pseudo-version when built from a checkout, as the
// metrics and the MCP server say it.
func Describe() string {
	info, ok := debug.ReadBuildInfo()
	if !ok && version == "" {
		return "pgbus (unknown version)"
	}
	if !ok {
		info = &debug.BuildInfo{}
	}
	return describe(info)
}

// Version is the module version alone, for protocols that carry a bare
// version (the MCP server's serverInfo): a release tag or pseudo-version,
// or "dev" for a build from a checkout.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	return versionOf(info)
}

// versionOf is the version set at link time, else info's.
func versionOf(info *debug.BuildInfo) string {
	if version != "" {
		return version
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

func describe(info *debug.BuildInfo) string {
	var b strings.Builder
	b.WriteString("pgbus " + versionOf(info))
	revision, modified := vcs(info)
	if revision != "" {
		b.WriteString(" commit " + revision[:min(len(revision), 12)])
		if modified {
			b.WriteString(" (modified)")
		}
	}
	return b.String()
}

// Commit returns the commit the binary was built from, whole, and
// whether the working tree had changes: the one set at link time, else
// the toolchain's; "" when neither says (go install of a release, a
// build outside a checkout).
func Commit() (revision string, modified bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	return vcs(info)
}

// vcs returns the commit set at link time, or else the one the build
// recorded, if any, and whether the working tree had changes (which only
// the toolchain's record says).
func vcs(info *debug.BuildInfo) (revision string, modified bool) {
	if commit != "" {
		return commit, false
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return revision, modified
}
