package cli

import (
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version describes the running binary: the module version (a release tag
// with go install, "(devel)" or a pseudo-version when built from a
// checkout) and the commit it was built from, when the build recorded it.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "pgbus (unknown version)"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var b strings.Builder
	b.WriteString("pgbus " + v)
	var revision string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision != "" {
		b.WriteString(" commit " + revision[:min(len(revision), 12)])
		if modified {
			b.WriteString(" (modified)")
		}
	}
	return b.String()
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit this binary was built from",
		Args:  cobra.NoArgs,
		// Works whatever the configuration file says.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.Println(version())
			return nil
		},
	}
}
