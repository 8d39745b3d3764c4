package cli

import (
	"slices"
	"strings"

	"github.com/pgbus/pgbus/handlers"
)

// knownVariables are the PGBUS_ environment variables pgbus reads, and
// those it sets for the program of an exec handler, which passes them on
// to a pgbus it runs.
var knownVariables = []string{
	EnvConfig, EnvDataDir, EnvNoEmbedded, EnvLogFormat, EnvLogLevel, EnvMetricsAddr, EnvTrustedProxies, EnvBasePath,
	EnvQueues, EnvHandler, EnvConcurrency, EnvPollInterval, EnvDrainTimeout, EnvNoListen, EnvDatabaseCallTimeout,
	EnvAuthToken, EnvAuthToken + fileSuffix, EnvMaxSessions, EnvSafeFields,
	handlers.EnvQueue, handlers.EnvMsgID, handlers.EnvKind, handlers.EnvAttempt, handlers.EnvIdempotencyKey,
}

// warnMisspelledVariables logs each PGBUS_ variable of environ (KEY=value
// pairs) that pgbus does not read but that is a letter or two from one it
// does: PGBUS_LOG_LEVLE=debug would leave the level as it was without a
// word. Others pass: a deployment may name its own variables so.
func (a *app) warnMisspelledVariables(environ []string) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PGBUS_") || slices.Contains(knownVariables, name) {
			continue
		}
		for _, known := range knownVariables {
			if editDistance(strings.ToUpper(name), known) <= 2 {
				a.log.Warn("pgbus: environment variable " + name + " is set, but pgbus reads no variable of that name: did you mean " + known + "?")
				break
			}
		}
	}
}

// editDistance is the number of single-byte insertions, deletions and
// substitutions that turn a into b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
