package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A standby of a primary whose schema is older than this pgbus: its
// commands say to migrate the primary, and name no next step that would
// run pgbus migrate against the standby, which cannot take it.
func TestStandbyWithAnOldSchemaPointsAtThePrimary(t *testing.T) {
	t.Parallel()
	primary, standby := pgtest.Standby(t)
	if r := pgbus(t, nil, "migrate", "--database-url", primary); r.code != 0 {
		t.Fatalf("migrate the primary: exit %d\n%s", r.code, r.stderr)
	}
	pgtest.Exec(t, primary, `DELETE FROM pgbus.schema_migrations WHERE version = (SELECT max(version) FROM pgbus.schema_migrations)`)
	pgtest.CaughtUp(t, primary, standby)
	for _, args := range [][]string{{"queues", "--json"}, {"migrate", "--json"}} {
		r := pgbus(t, nil, append(args, "--database-url", standby)...)
		var e struct {
			Error string            `json:"error"`
			Kind  string            `json:"kind"`
			Next  []json.RawMessage `json:"next"`
		}
		line := r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:]
		if err := json.Unmarshal([]byte(line), &e); err != nil || r.code != 1 || e.Kind != "schema" || len(e.Next) != 0 ||
			!strings.Contains(e.Error, "run pgbus migrate against the primary") {
			t.Errorf("pgbus %s on the standby: exit %d, %+v (%v); want kind schema saying to migrate the primary, and no next step\n%s", args[0], r.code, e, err, r.stderr)
		}
	}
}
