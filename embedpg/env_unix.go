//go:build linux || darwin

package embedpg

import (
	"os"
	"strings"
)

// serverEnvNames are the variables initdb and postgres get from ours,
// beside those starting with serverEnvPrefixes: the locale, the time zone,
// where their libraries are, and PostgreSQL's out-of-memory settings.
var (
	serverEnvNames = map[string]bool{
		"PATH": true, "HOME": true, "TMPDIR": true, "TZ": true, "LANG": true, "LANGUAGE": true,
		"LD_LIBRARY_PATH": true, "LOCALE_ARCHIVE": true,
	}
	serverEnvPrefixes = []string{"LC_", "DYLD_", "PG_OOM_ADJUST_"}
)

// serverEnv returns the environment of initdb and postgres: only what they
// use of ours. The rest may hold secrets (the MCP token, what alerts
// expand), which any process of the server's user could read from the
// server's environment, and that user is another than ours when we run as
// root.
func serverEnv() []string {
	env := []string{} // not nil, which would mean all of ours
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		keep := serverEnvNames[name]
		for _, p := range serverEnvPrefixes {
			keep = keep || strings.HasPrefix(name, p)
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}
