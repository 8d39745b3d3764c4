package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/plural"
)

// RefusedByEventTrigger says, for err, a statement creating tables (a
// migration's, a queue's) refused for a privilege, when the refusal came
// from within a function the statement set off and the database has event
// triggers on DDL: a DBA's auditing of CREATE TABLE, whose function runs
// as the role that creates and may write where that role may not. The
// role's own privileges are then not what is missing, and naming another
// role to create the tables would not help either. It returns "" for any
// other error, or when the event triggers cannot be read.
func (s *Store) RefusedByEventTrigger(ctx context.Context, err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" || pgErr.Where == "" {
		return ""
	}
	var triggers, functions []string
	rows, qerr := s.reads.Query(ctx, `
		SELECT quote_ident(evtname), evtfoid::regprocedure::text
		FROM pg_catalog.pg_event_trigger
		WHERE evtenabled <> 'D' AND evtevent IN ('ddl_command_start', 'ddl_command_end', 'sql_drop', 'table_rewrite')
		ORDER BY evtname`)
	if qerr != nil {
		return ""
	}
	defer rows.Close()
	for rows.Next() {
		var name, fn string
		if rows.Scan(&name, &fn) != nil {
			return ""
		}
		triggers, functions = append(triggers, name), append(functions, fn)
	}
	if rows.Err() != nil || len(triggers) == 0 {
		return ""
	}
	where := strings.Join(strings.Fields(strings.ReplaceAll(pgErr.Where, "\n", "; ")), " ")
	return fmt.Sprintf("the refusal came from within a function (%s), not from creating the tables itself: the database's event %s %s (%s) %s on DDL such as CREATE TABLE as the role that runs it, %s, "+
		"which lacks what the function does; have the DBA grant that role what the function needs, or make the function run as its owner (ALTER FUNCTION %s SECURITY DEFINER), then try again",
		where, plural.Of(len(triggers), "trigger", "triggers"), strings.Join(triggers, ", "), strings.Join(functions, ", "), plural.Of(len(triggers), "runs", "run"),
		RoleSQL(s.User()), functions[0])
}
