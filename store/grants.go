package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// MissingGrant is what the current role lacks, of the privileges a role
// that works queues needs (SELECT, INSERT, UPDATE and DELETE), on one
// table. Its names are quoted as SQL needs them, ready for a GRANT.
type MissingGrant struct {
	// Table is the table, qualified by its schema: pgmq.q_orders_dlq.
	Table string
	// Owner is the role that owns the table: it, or a superuser, may
	// grant on it, and its ALTER DEFAULT PRIVILEGES covers the tables it
	// creates later.
	Owner string
	// Role is the role refused: the current one.
	Role string
	// Privileges are those it lacks, in the order SELECT, INSERT, UPDATE,
	// DELETE.
	Privileges []string
}

// DeadLetterGrants lists what the current role lacks to dead-letter the
// messages of physical queue queue into dlq: on the two queues' tables
// and on pgbus.failures, whose rows follow a message into its DLQ. A
// table it lacks nothing on is left out, as is one that does not exist.
func (s *Store) DeadLetterGrants(ctx context.Context, queue, dlq string) ([]MissingGrant, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if err := ValidatePhysicalName(dlq); err != nil {
		return nil, err
	}
	return s.missingGrants(ctx, fmt.Sprintf("dead-letter from %q to %q", queue, dlq), queueTable(queue), queueTable(dlq), "pgbus.failures")
}

// OutcomeGrants lists what the current role lacks to write the outcomes of
// the jobs of physical queue queue: on its table, its archive and
// pgbus.failures. A table it lacks nothing on is left out.
func (s *Store) OutcomeGrants(ctx context.Context, queue string) ([]MissingGrant, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	return s.missingGrants(ctx, fmt.Sprintf("write the outcomes of %q", queue), queueTable(queue), archiveTable(queue), "pgbus.failures")
}

// missingGrants lists what the current role lacks on tables, those that
// exist, in their order; what names the purpose, for errors.
func (s *Store) missingGrants(ctx context.Context, what string, tables ...string) ([]MissingGrant, error) {
	rows, err := s.reads.Query(ctx, `
		SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), quote_ident(pg_catalog.pg_get_userbyid(c.relowner)),
		       quote_ident(current_user::text),
		       array_remove(ARRAY(SELECT CASE WHEN has_table_privilege(c.oid, p) THEN NULL ELSE p END
		                          FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) WITH ORDINALITY AS ps(p, i) ORDER BY i), NULL)
		FROM unnest($1::text[]) WITH ORDINALITY AS t(name, i)
		JOIN pg_catalog.pg_class c ON c.oid = to_regclass(t.name)
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		ORDER BY t.i`, tables)
	if err != nil {
		return nil, fmt.Errorf("store: check the privileges to %s: %w", what, err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[MissingGrant])
	if err != nil {
		return nil, fmt.Errorf("store: check the privileges to %s: %w", what, err)
	}
	out := all[:0]
	for _, g := range all {
		if len(g.Privileges) > 0 {
			out = append(out, g)
		}
	}
	return out, nil
}

// RoleSQL is role as a statement of advice names it, quoted as SQL needs
// it (a role "Svc" is not svc, and a name may hold quotes and spaces), or
// <role> for a role not known, for the reader to fill in.
func RoleSQL(role string) string {
	if role == "" {
		return "<role>"
	}
	return pgx.Identifier{role}.Sanitize()
}

// SchemaOwner returns the role that owns schema, quoted as SQL needs it:
// the one that may create its tables (a queue's), with superusers and the
// roles granted CREATE on it.
func (s *Store) SchemaOwner(ctx context.Context, schema string) (string, error) {
	var owner string
	err := s.reads.QueryRow(ctx, `SELECT quote_ident(pg_catalog.pg_get_userbyid(nspowner)) FROM pg_catalog.pg_namespace WHERE nspname = $1`, schema).Scan(&owner)
	if err != nil {
		return "", fmt.Errorf("store: find the owner of schema %q: %w", schema, err)
	}
	return owner, nil
}
