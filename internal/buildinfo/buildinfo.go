// Package buildinfo says which pgbus a binary is: the module version and
// the commit it was built from, as the Go toolchain recorded them. Every
// front end that reports a version (pgbus version, the MCP server, the
// dashboard) words it from here.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Describe describes the running binary: "pgbus VERSION [commit HASH
// [(modified)]]", the version being Version's: a release tag with go
// install, "dev" or a pseudo-version when built from a checkout, as the
// metrics and the MCP server say it.
func Describe() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "pgbus (unknown version)"
	}
	return describe(info)
}

// Version is the module version alone, for protocols that carry a bare
// version (the MCP server's serverInfo): a release tag or pseudo-version,
// or "dev" for a build from a checkout.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return version(info)
}

func version(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

func describe(info *debug.BuildInfo) string {
	var b strings.Builder
	b.WriteString("pgbus " + version(info))
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
// whether the working tree had changes; "" when the build recorded none
// (go install of a release, a build outside a checkout).
func Commit() (revision string, modified bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	return vcs(info)
}

// vcs returns the commit the build recorded, if any, and whether the
// working tree had changes.
func vcs(info *debug.BuildInfo) (revision string, modified bool) {
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
