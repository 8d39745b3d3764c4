package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus serve whose database answers but whose schema it may not use
// (none yet, for a --read-only server or a role that may not create
// it; one older than this pgbus, for a --read-only server) answers an
// agent's MCP client rather than exit before initialize: pgbus_health and
// every tool say why, with kind schema and pgbus migrate as the next
// step, the log says so with the command to run, and once someone
// migrates, the server finds the schema ready by itself and serves the
// calls. It exited at once, and the client saw only its transport close.
func TestServeAnswersAgentsWhileTheSchemaIsNotReady(t *testing.T) {
	t.Parallel()
	for _, c := range schemaNotReadyCases([]string{"--no-workers"}) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			owner := newDB(t)
			url, says, reader := c.setup(t, owner)
			client, _, stderr := serveStdio(t, append(c.args, "--database-url", url)...)

			res := callToolRaw(t, client, "pgbus_queue_stats", map[string]any{"queue": "orders"})
			text := toolText(res)
			if kind := errorMetaKind(t, res); kind != "schema" || !strings.Contains(text, says) || !strings.Contains(text, "pgbus migrate") {
				t.Errorf("pgbus_queue_stats while the schema is not ready: kind %q, %q\nwant kind schema, saying %q, and pgbus migrate as a step\nstderr: %s", kind, text, says, stderr.String())
			}
			h := callToolRaw(t, client, "pgbus_health", nil)
			b, err := json.Marshal(h.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			if h.IsError || !strings.Contains(string(b), says) || !strings.Contains(string(b), "pgbus migrate") {
				t.Errorf("pgbus_health while the schema is not ready: %s %s\nwant a verdict saying %q, with pgbus migrate as a step", toolText(h), b, says)
			}
			if log := stderr.String(); !strings.Contains(log, "serving agents meanwhile") || !strings.Contains(log, says) || !strings.Contains(log, "see pgbus migrate") {
				t.Errorf("serve's log while the schema is not ready does not say why, the command to run, and that it serves meanwhile:\n%s", log)
			}

			migrateFor(t, owner, reader)
			pgtest.Eventually(t, 2*time.Minute, "pgbus_health to answer on the migrated schema", func() bool {
				status, _ := healthOf(t, client)
				return status != "UNREACHABLE"
			})
			if res := callToolRaw(t, client, "pgbus_dlq_list", nil); res.IsError {
				t.Errorf("pgbus_dlq_list once the schema is migrated: %s\nstderr: %s", toolText(res), stderr.String())
			}
		})
	}
}
