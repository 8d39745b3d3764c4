package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/plural"
)

// ErrShadowingSearchPath is wrapped by the error of CheckSchema and
// Migrate when the session's search_path looks in a schema before
// pg_catalog that holds functions or operators named as PostgreSQL's own:
// pgbus's statements call now(), clock_timestamp(), md5() and the rest by
// name, and would call that schema's instead. Nothing was read or written.
var ErrShadowingSearchPath = errors.New("search_path shadows PostgreSQL's functions")

// ErrSessionSettings is wrapped by the error of CheckSchema and Migrate
// when the session runs with settings pgbus's statements are not written
// for (sessionSettings): a pool passed to New that ConfigurePool did not
// configure, on a server, role or database that sets them otherwise.
// Nothing was read or written.
var ErrSessionSettings = errors.New("the session's settings are not those pgbus's statements are written for")

// shownShadows is how many of the shadowing functions and operators the
// error names; it counts the rest.
const shownShadows = 5

// shadowingSQL lists the functions and operators of the schemas the
// session looks in before pg_catalog that are named as one of
// pg_catalog's, in the path's order, with what the refusal quotes. The
// session's own temporary schema is left out: PostgreSQL never looks
// there for functions or operators. It runs under the very path it
// checks, so it names every function, operator and type it uses in full:
// a schema that shadowed = could otherwise make it find nothing.
const shadowingSQL = `
	WITH path AS (
		SELECT n.oid, n.nspname, s.ord
		FROM pg_catalog.unnest(pg_catalog.current_schemas(true)) WITH ORDINALITY AS s(nsp, ord)
		JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) s.nsp
	), before AS (
		SELECT p.oid, p.ord FROM path p
		WHERE p.ord OPERATOR(pg_catalog.<) (SELECT c.ord FROM path c WHERE c.nspname OPERATOR(pg_catalog.=) 'pg_catalog')
		  AND p.oid OPERATOR(pg_catalog.<>) pg_catalog.pg_my_temp_schema()
	), shadows AS (
		SELECT b.ord, f.pronamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp,
		       f.pronamespace::pg_catalog.regnamespace::pg_catalog.text OPERATOR(pg_catalog.||) '.'
		           OPERATOR(pg_catalog.||) pg_catalog.quote_ident(f.proname) AS name
		FROM before b JOIN pg_catalog.pg_proc f ON f.pronamespace OPERATOR(pg_catalog.=) b.oid
		WHERE EXISTS (SELECT FROM pg_catalog.pg_proc c
		              WHERE c.pronamespace OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace
		                AND c.proname OPERATOR(pg_catalog.=) f.proname)
		UNION
		SELECT b.ord, o.oprnamespace::pg_catalog.regnamespace::pg_catalog.text,
		       'operator ' OPERATOR(pg_catalog.||) o.oprnamespace::pg_catalog.regnamespace::pg_catalog.text
		           OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) o.oprname
		FROM before b JOIN pg_catalog.pg_operator o ON o.oprnamespace OPERATOR(pg_catalog.=) b.oid
		WHERE EXISTS (SELECT FROM pg_catalog.pg_operator c
		              WHERE c.oprnamespace OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace
		                AND c.oprname OPERATOR(pg_catalog.=) o.oprname)
	)
	SELECT s.nsp, s.name, pg_catalog.current_setting('search_path'),
	       (SELECT g.source FROM pg_catalog.pg_settings g WHERE g.name OPERATOR(pg_catalog.=) 'search_path'),
	       SESSION_USER::pg_catalog.text, pg_catalog.current_database()::pg_catalog.text
	FROM shadows s
	ORDER BY s.ord, s.name`

// checkSessionSettings refuses, with ErrSessionSettings, a session whose
// settings are not those ConfigurePool asks for where pgbus's statements
// depend on them: standard_conforming_strings on (pgbus's regular
// expressions, in its statements and in the SQL functions of its
// triggers, are written with backslashes that would be read as escapes:
// every dead letter would fail on an invalid regular expression) and
// client_encoding UTF8 (Go's strings). One statement, at the schema
// check, not per connection: every connection of a pool is made alike.
//
// It also refuses session_replication_role = replica, which only a
// superuser sets, for a role or a database as for a replication tool's
// sessions: under it PostgreSQL fires no ordinary trigger, and the
// triggers that count each DLQ's dead letters would count none of those
// this role's sessions dead-letter, retry or discard.
func checkSessionSettings(ctx context.Context, tx pgx.Tx) error {
	var scs, encoding, replication, source, role, dbname string
	if err := tx.QueryRow(ctx, `SELECT pg_catalog.current_setting('standard_conforming_strings'), pg_catalog.current_setting('client_encoding'),
		       pg_catalog.current_setting('session_replication_role'),
		       (SELECT g.source FROM pg_catalog.pg_settings g WHERE g.name OPERATOR(pg_catalog.=) 'session_replication_role'),
		       SESSION_USER::pg_catalog.text, pg_catalog.current_database()::pg_catalog.text`).Scan(&scs, &encoding, &replication, &source, &role, &dbname); err != nil {
		return fmt.Errorf("store: check the session's settings: %w", err)
	}
	if replication == "replica" {
		return replicaSessions(source, role, dbname)
	}
	var wrong, need []string
	if scs != "on" {
		wrong = append(wrong, "standard_conforming_strings is "+scs)
		need = append(need, "standard_conforming_strings must be on")
	}
	if !strings.EqualFold(encoding, "UTF8") {
		wrong = append(wrong, "client_encoding is "+encoding)
		need = append(need, "client_encoding must be UTF8")
	}
	if len(wrong) == 0 {
		return nil
	}
	return &kindError{kind: ErrSessionSettings, msg: fmt.Sprintf(
		"store: the pool's sessions run with %s, which pgbus's statements are not written for (its regular expressions would fail on every dead letter, its texts be stored in another encoding): "+
			"configure the pool with store.ConfigurePool (%s) before pgxpool.NewWithConfig, as store.Open does; nothing was read or written",
		strings.Join(wrong, " and "), strings.Join(need, ", "))}
}

// checkSearchPath refuses a session whose search_path looks in a schema
// before pg_catalog that holds functions or operators named as
// PostgreSQL's (search_path = ext, pg_catalog, public, with an ext.now):
// pgbus's statements name PostgreSQL's functions unqualified, so they
// would call that schema's, and every time they write, every key that
// groups dead letters, would be that schema's to say. pgbus's own SQL
// functions fix their path themselves; its statements cannot, since a
// pooler such as PgBouncer refuses a search_path asked for at connection.
// A path that merely lists pg_catalog later, without shadowing anything,
// passes: what it finds first are PostgreSQL's functions all the same.
// One statement, at the schema check, not per connection: every
// connection of a pool is the same role on the same database.
func checkSearchPath(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, shadowingSQL)
	if err != nil {
		return fmt.Errorf("store: check the search_path: %w", err)
	}
	defer rows.Close()
	var (
		schemas, names             []string
		path, source, role, dbname string
	)
	for rows.Next() {
		var nsp, name string
		if err := rows.Scan(&nsp, &name, &path, &source, &role, &dbname); err != nil {
			return fmt.Errorf("store: check the search_path: %w", err)
		}
		if len(schemas) == 0 || schemas[len(schemas)-1] != nsp {
			schemas = append(schemas, nsp)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: check the search_path: %w", err)
	}
	if len(names) == 0 {
		return nil
	}
	return shadowingPath(path, source, role, dbname, schemas, names)
}

// shadowingPath is the refusal of search_path path, set by source (as
// pg_settings says), in which schemas, before pg_catalog, hold names,
// functions and operators named as PostgreSQL's: what would go wrong, and
// the setting that puts pg_catalog first for role on database dbname.
func shadowingPath(path, source, role, dbname string, schemas, names []string) error {
	shown := strings.Join(names[:min(len(names), shownShadows)], ", ")
	if more := len(names) - shownShadows; more > 0 {
		shown += fmt.Sprintf(" and %d more", more)
	}
	where := "schema " + schemas[0]
	if len(schemas) > 1 {
		where = "schemas " + strings.Join(schemas, ", ")
	}
	fixed := "search_path = " + catalogFirst(path)
	fix := fmt.Sprintf("put pg_catalog first for this role on this database: ALTER ROLE %s IN DATABASE %s SET %s",
		pgx.Identifier{role}.Sanitize(), pgx.Identifier{dbname}.Sanitize(), fixed)
	if source == "client" {
		// Asked for at connection, where it overrides the role's settings.
		fix = "put pg_catalog first where the connection asks for it (the database URL's options or search_path parameter, or PGOPTIONS): " + fixed
	}
	return &kindError{kind: ErrShadowingSearchPath, msg: fmt.Sprintf(
		"the session's search_path (%s) looks in %s before pg_catalog, which %s %s named as PostgreSQL's own: %s; "+
			"pgbus's statements call PostgreSQL's functions and operators by name and would call these instead: "+
			"the times pgbus writes and compares (when a message becomes visible, when it failed) would be wrong, "+
			"the keys that group dead letters could merge unrelated groups (and what is done to one group would take the others too), "+
			"and whoever may create functions there would run code as this role; nothing was read or written; %s",
		path, where, plural.Of(len(schemas), "holds", "hold"), kinds(names), shown, fix)}
}

// kinds says whether names are functions, operators or both.
func kinds(names []string) string {
	var fns, ops bool
	for _, n := range names {
		if strings.HasPrefix(n, "operator ") {
			ops = true
		} else {
			fns = true
		}
	}
	switch {
	case fns && ops:
		return "functions and operators"
	case ops:
		return "operators"
	}
	return "functions"
}

// catalogFirst is search_path setting with pg_catalog first and nowhere
// else, its other entries as they were written, in their order.
func catalogFirst(setting string) string {
	out := []string{"pg_catalog"}
	for _, entry := range splitPath(setting) {
		if e := strings.TrimSpace(entry); e != "" && e != `"pg_catalog"` && !strings.EqualFold(e, "pg_catalog") {
			out = append(out, e)
		}
	}
	return strings.Join(out, ", ")
}

// splitPath splits a search_path setting at its commas, but those within
// a quoted name.
func splitPath(setting string) []string {
	var (
		parts  []string
		start  int
		quoted bool
	)
	for i, r := range setting {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			parts = append(parts, setting[start:i])
			start = i + 1
		}
	}
	return append(parts, setting[start:])
}

// replicaSessions is the refusal of sessions run with
// session_replication_role = replica, set by source (as pg_settings says)
// for role on database dbname: what would go wrong, and the statement
// that resets it where it is set.
func replicaSessions(source, role, dbname string) error {
	r, d := pgx.Identifier{role}.Sanitize(), pgx.Identifier{dbname}.Sanitize()
	var fix string
	switch source {
	case "client":
		fix = "leave it out where the connection asks for it (the database URL's options, or PGOPTIONS)"
	case "user":
		fix = "have a superuser reset it for this role: ALTER ROLE " + r + " RESET session_replication_role"
	case "database":
		fix = "have a superuser reset it for this database: ALTER DATABASE " + d + " RESET session_replication_role"
	case "database user":
		fix = "have a superuser reset it for this role on this database: ALTER ROLE " + r + " IN DATABASE " + d + " RESET session_replication_role"
	default:
		fix = "have a superuser set it back to origin where it is set (" + source + ", as pg_settings says), or give pgbus a role of its own: ALTER ROLE " + r + " SET session_replication_role = origin"
	}
	return &kindError{kind: ErrSessionSettings, msg: fmt.Sprintf(
		"the session's session_replication_role is replica, under which PostgreSQL fires no ordinary trigger: "+
			"the triggers that count each DLQ's dead letters would miss every message this role dead-letters, retries or discards, "+
			"and the summary, health, metrics and alerts would not show them; nothing was read or written; %s", fix)}
}
