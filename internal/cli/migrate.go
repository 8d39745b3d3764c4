package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/ops"
)

func (a *app) migrateCommand() *cobra.Command {
	var installPGMQ string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the pgbus schema and the PGMQ layout",
		Long: `Apply every pending migration. Safe to run from several processes at once
and as often as you like. It needs a role that may create schemas and tables.

Each run, the schema current or not, also gives every dead-letter queue made
without them (by an older pgbus still running, or by another PGMQ client with
pgmq.create) the index, filter statistics and group counts pgbus gives one.
A dead-letter queue the role does not own is left as it is, with a warning
naming the role that owns it, whose pgbus migrate adds them. It also
compares each DLQ's group counts with its rows, and rebuilds counts that
do not add up (a restore that loaded the data after the triggers counts
each dead message twice), saying which; this reads each DLQ once, so the
commands that migrate on start leave it to pgbus migrate. And it warns of
each queue pgbus keeps settings of whose PGMQ tables are gone (a restore
of a dump that left them out: pg_dump leaves out the tables of PGMQ
installed as an extension), naming the commands that end it: pgbus queue
create makes it again, empty, with its settings; pgbus queue drop --yes
forgets it. --json lists them as queues_without_tables.

A database a newer pgbus migrated is left as it is, nothing applied or
repaired: migrate says so, with both versions, and to upgrade this pgbus,
which works on the newer schema meanwhile, as migrations only add. Its
other commands that use the database warn so on start.

Safe on a live system: a migration waits at most 5 seconds at a time for a
table's lock, so the queries behind it are not held up longer, and tries
again for about a minute; then it gives up with nothing of it applied and
names the backend holding the table (pid, state, since when). End that
transaction (let it finish, or SELECT pg_terminate_backend(pid)) and run
pgbus migrate again. Another process migrating is waited for up to 2
minutes.

The commands that create queues or run workers migrate on start too, when the
schema is not current: work, demo, serve (unless --read-only without workers),
dashboard (unless --read-only), queue create and bench. The others only check
that the schema is current and, when it is not, fail with a message to run
pgbus migrate: queues, dlq (summary, list, show, retry, retry-all, discard,
discarded, restore, purge), audit, health, workers, circuits, circuit (open,
reset), send, queue (messages, run-now, drop, pause, resume, purge),
dashboard --read-only, and serve --read-only without workers. The read
commands among them (queues, dlq summary, list, show and discarded, audit,
health, workers, circuits, queue messages, serve --read-only) write
nothing, so a role that may only read can run them, with:

  GRANT USAGE ON SCHEMA pgmq, pgbus TO reader;
  GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO reader;
  GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO reader;
  ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON TABLES TO reader;
  ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON SEQUENCES TO reader;

Without the grant on sequences, the count of messages sent to a queue since
it was created (SENT) is a lower bound; the default privileges, granted by
the role that creates queues, cover the queues made later.

A role that may also repair (an operator, or an agent's pgbus serve that may
retry) needs INSERT, UPDATE and DELETE on those tables too, and no more:
with them it runs dlq retry, retry-all, discard, restore and purge, queue pause,
resume and purge, send, and serve and dashboard once the schema is current,
and work on queues that exist (creating queues stays with the owner).

Where PGMQ's functions are installed (the pgmq extension, or PGMQ's SQL
installation script), pgbus creates and drops queues with pgmq.create and
pgmq.drop_queue; where they are not, it makes the tables pgmq.create would
make. To add PGMQ's functions to a database pgbus already uses, run its SQL
script through --install-pgmq: run on its own (psql -v ON_ERROR_STOP=1),
PGMQ's script stops at "relation "meta" already exists", as pgbus made
pgmq.meta; without ON_ERROR_STOP, psql goes on past that error and exits 0,
an order not tested. --install-pgmq
runs the script in one transaction, keeps the queues pgbus made (their
tables already have PGMQ's shape) and lists them in PGMQ's pgmq.meta,
grants on it what roles had on pgbus's (a reader's SELECT, say), then
migrates. Where PGMQ's functions are already installed it runs nothing.`,
		Example: `  pgbus migrate
  pgbus migrate --json
  pgbus migrate --database-url postgres://app@db.internal/app
  pgbus migrate --install-pgmq pgmq.sql`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var script string
			if installPGMQ != "" {
				b, err := os.ReadFile(installPGMQ)
				if err != nil {
					return usageError{fmt.Errorf("read PGMQ's installation script: %v; pass the path of PGMQ's pgmq.sql (in pgmq-extension/sql of PGMQ's sources)", err)}
				}
				script = string(b)
			}
			var db *dbopen.DB
			var err error
			if script == "" {
				db, err = a.openDB(cmd.Context(), true)
			} else {
				db, err = a.installPGMQ(cmd, script)
			}
			if err != nil {
				return err
			}
			defer db.Close()
			queues, err := db.WorkQueues(cmd.Context())
			if err != nil {
				return err
			}
			recounted := []dlqRecount{}
			if !db.Status.Newer() {
				done, err := db.RecountDLQs(cmd.Context())
				if err != nil {
					return ops.ExplainMigration(err, a.role)
				}
				for _, r := range done {
					recounted = append(recounted, dlqRecount(r))
				}
			}
			gone, err := a.queuesWithoutTables(cmd.Context(), db)
			if err != nil {
				return err
			}
			layout, code := "built-in PGMQ layout", "built_in"
			switch {
			case db.Status.PGMQExtension:
				layout, code = "pgmq extension", "extension"
			case db.Status.PGMQFunctions:
				layout, code = "PGMQ installed from its SQL script", "sql_script"
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(a.stdout, migrateJSON{SchemaVersion: db.Status.Version, Applied: db.Status.Applied, ThisPgbus: db.Status.Known,
					Newer: db.Status.Newer(), Layout: code, Queues: len(queues), Recounted: recounted, QueuesWithoutTables: gone})
			}
			for _, r := range recounted {
				fmt.Fprintf(a.stdout, "pgbus: recounted the dead-letter groups of %s: they counted %s, its table holds %s\n",
					r.DLQ, plural.Count(int(r.Counted), "message", "messages"), plural.Count(int(r.Rows), "message", "messages"))
			}
			if db.Status.Newer() {
				// Said on stdout as the command's result: a rollback's
				// script runs migrate and reads what it did.
				fmt.Fprintf(a.stdout, "pgbus: ready: %s, schema version %d, migrated by a newer pgbus (this pgbus has versions up to %d): "+
					"nothing applied or repaired; this pgbus works on the newer schema, but upgrade it; %s, %s\n",
					db.Where(), db.Status.Version, db.Status.Known, layout, plural.Count(len(queues), "queue", "queues"))
				return nil
			}
			fmt.Fprintf(a.stdout, "pgbus: ready: %s, schema version %d (%d applied now), %s, %s\n",
				db.Where(), db.Status.Version, db.Status.Applied, layout, plural.Count(len(queues), "queue", "queues"))
			return nil
		},
	}
	cmd.Flags().StringVar(&installPGMQ, "install-pgmq", "", "run PGMQ's SQL installation script at this path first, keeping the queues pgbus made")
	cmd.Flags().Bool("json", false, "print the schema's state as JSON: its version, the migrations applied now, this pgbus's version, the PGMQ layout, the queues")
	return cmd
}

// migrateJSON is pgbus migrate --json.
type migrateJSON struct {
	// SchemaVersion is the database's, after the migrations.
	SchemaVersion int `json:"schema_version"`
	// Applied are the migrations this run applied.
	Applied int `json:"applied"`
	// ThisPgbus is the schema version this pgbus migrates to; below
	// SchemaVersion when a newer pgbus migrated the database (Newer).
	ThisPgbus int  `json:"this_pgbus_schema_version"`
	Newer     bool `json:"newer"`
	// Layout is how PGMQ is there: built_in (pgbus's tables alone),
	// extension, or sql_script (PGMQ's installation script).
	Layout string `json:"pgmq_layout"`
	Queues int    `json:"queues"`
	// Recounted are the DLQs whose group counts did not add up to their
	// rows, rebuilt (as after a restore that loaded the rows twice into
	// the counts).
	Recounted []dlqRecount `json:"dlqs_recounted"`
	// QueuesWithoutTables are the queues pgbus keeps settings of whose
	// PGMQ tables are gone (a restore that left them out), each warned
	// of on stderr with the commands that end it.
	QueuesWithoutTables []string `json:"queues_without_tables"`
}

// queuesWithoutTables warns of each queue pgbus keeps settings of whose
// PGMQ tables are gone, as health names it, with its next steps, and
// returns their names.
func (a *app) queuesWithoutTables(ctx context.Context, db *dbopen.DB) ([]string, error) {
	svc, err := a.service(db)
	if err != nil {
		return nil, err
	}
	reasons, err := svc.QueuesWithoutTables(ctx)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, r := range reasons {
		a.log.Warn("pgbus migrate: "+r.Message, "queue", r.Queue, "next", a.commands(r.Next, "; or "))
		names = append(names, r.Queue)
	}
	return names, nil
}

// dlqRecount is a DLQ whose group counts were rebuilt: what they counted,
// and the rows its table holds, which they now count.
type dlqRecount struct {
	DLQ     string `json:"dlq"`
	Counted int64  `json:"counted"`
	Rows    int64  `json:"rows"`
}

// installPGMQ connects, runs PGMQ's script, says what it did, and
// migrates: openDB with PGMQ installed before the migrations.
func (a *app) installPGMQ(cmd *cobra.Command, script string) (*dbopen.DB, error) {
	ctx := cmd.Context()
	db, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	a.role = db.Role()
	res, err := db.InstallPGMQ(ctx, script)
	if err == nil {
		if res.Installed {
			fmt.Fprintf(a.stdout, "pgbus: installed PGMQ from its script; %s\n", plural.Count(res.Adopted, "queue pgbus made before is a PGMQ queue too", "queues pgbus made before are PGMQ's queues too"))
		} else {
			fmt.Fprintln(a.stdout, "pgbus: PGMQ's functions are installed already; the script was not run")
		}
		err = db.Prepare(ctx, true)
	}
	if err != nil {
		if !dbopen.IsReadOnly(err) { // the schema check says so itself
			err = ops.ExplainMigration(err, a.role)
		}
		db.Close()
		return nil, err
	}
	return db, nil
}
