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
			!strings.Contains(e.Error, "migrate the primary") {
			t.Errorf("pgbus %s on the standby: exit %d, %+v (%v); want kind schema saying to migrate the primary, and no next step\n%s", args[0], r.code, e, err, r.stderr)
		}
	}
}

// pgbus serve on a standby, offering write tools, warns on start that they
// will fail and how to serve it instead; read-only, it does not.
func TestServeOnAStandbyWarnsOfItsWriteTools(t *testing.T) {
	t.Parallel()
	primary, standby := pgtest.Standby(t)
	if r := pgbus(t, nil, "migrate", "--database-url", primary); r.code != 0 {
		t.Fatalf("migrate the primary: exit %d\n%s", r.code, r.stderr)
	}
	pgtest.CaughtUp(t, primary, standby)
	const warning = "the database is a standby (a read replica), which takes no writes: the write tools will fail; serve it with --read-only"
	for _, c := range []struct {
		args []string
		warn bool
	}{{[]string{"serve", "--no-workers"}, true}, {[]string{"serve", "--read-only"}, false}} {
		r := pgbus(t, nil, append(c.args, "--database-url", standby, "--log-format", "text")...)
		if r.code != 0 || strings.Contains(r.stderr, warning) != c.warn {
			t.Errorf("pgbus %v on a standby, stdin closed: exit %d; want the warning %v\n%s", c.args, r.code, c.warn, r.stderr)
		}
	}
}
