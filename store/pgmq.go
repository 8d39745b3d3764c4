package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrForeignPGMQSchema is wrapped by the error of Migrate and CheckSchema
// when the database has a schema pgmq that neither PGMQ nor pgbus made:
// pgbus keeps its queues there, so it stops before touching anything.
var ErrForeignPGMQSchema = errors.New("foreign pgmq schema")

// ErrNotPGMQScript is wrapped by the error of InstallPGMQ when the script
// it was given does not look like PGMQ's SQL installation script.
var ErrNotPGMQScript = errors.New("not a PGMQ installation script")

// catalogReader is what the catalog checks below need of a pool, a
// connection or a transaction.
type catalogReader interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgmqFunctions reports whether PGMQ's own functions are installed, by the
// pgmq extension or by PGMQ's SQL installation script: pgbus then creates
// and drops queues with pgmq.create and pgmq.drop_queue.
func pgmqFunctions(ctx context.Context, q catalogReader) (bool, error) {
	var ok bool
	// From the catalogs, which every role may read, so that a role without
	// USAGE on schema pgmq gets to the check of its privileges.
	err := q.QueryRow(ctx, `
		SELECT count(DISTINCT p.proname) = 2
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'pgmq' AND p.proname IN ('create', 'drop_queue')
		  AND p.pronargs = 1 AND p.proargtypes[0] = 'text'::regtype`).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("store: check for PGMQ's functions: %w", err)
	}
	return ok, nil
}

// metaColumns are the columns of pgmq.meta, in order, with their types, in
// every PGMQ version pgbus covers and in pgbus's own layout.
var metaColumns = []string{
	"queue_name character varying",
	"is_partitioned boolean",
	"is_unlogged boolean",
	"created_at timestamp with time zone",
}

// checkPGMQSchema fails with ErrForeignPGMQSchema when schema pgmq exists
// but is neither PGMQ's nor pgbus's: it has objects yet no table pgmq.meta,
// or a pgmq.meta of another shape. An absent or empty schema passes.
func checkPGMQSchema(ctx context.Context, q catalogReader) error {
	var exists, hasMeta bool
	err := q.QueryRow(ctx, `
		SELECT n.oid IS NOT NULL, c.oid IS NOT NULL
		FROM (SELECT 1) AS one
		LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'pgmq'
		LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'meta' AND c.relkind IN ('r', 'p')`).
		Scan(&exists, &hasMeta)
	if err != nil {
		return fmt.Errorf("store: check schema pgmq: %w", err)
	}
	if !exists {
		return nil
	}
	if hasMeta {
		rows, _ := q.Query(ctx, `
			SELECT a.attname || ' ' || format_type(a.atttypid, NULL)
			FROM pg_catalog.pg_attribute a
			JOIN pg_catalog.pg_class c ON c.oid = a.attrelid AND c.relname = 'meta' AND c.relkind IN ('r', 'p')
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'pgmq'
			WHERE a.attnum > 0 AND NOT a.attisdropped
			ORDER BY a.attnum`)
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("store: check schema pgmq: read the columns of pgmq.meta: %w", err)
		}
		if strings.Join(cols, ", ") == strings.Join(metaColumns, ", ") {
			return nil
		}
		return foreignPGMQ(fmt.Sprintf("its table pgmq.meta has the columns (%s), where PGMQ's has (%s) (if it is PGMQ's, its version is one pgbus does not cover: upgrade PGMQ to 1.5)",
			strings.Join(cols, ", "), strings.Join(metaColumns, ", ")))
	}
	rows, _ := q.Query(ctx, `
		WITH nsp AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pgmq')
		SELECT what FROM (
			SELECT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'S' THEN 'sequence ' WHEN 'i' THEN 'index ' ELSE 'table ' END
			       || 'pgmq.' || c.relname AS what
			FROM pg_catalog.pg_class c WHERE c.relnamespace = (SELECT oid FROM nsp)
			UNION ALL
			SELECT 'function pgmq.' || p.proname FROM pg_catalog.pg_proc p WHERE p.pronamespace = (SELECT oid FROM nsp)
			UNION ALL
			SELECT 'type pgmq.' || t.typname FROM pg_catalog.pg_type t
			WHERE t.typnamespace = (SELECT oid FROM nsp) AND t.typtype IN ('c', 'e', 'd') AND t.typrelid = 0
		) found ORDER BY what LIMIT 6`)
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("store: check schema pgmq: list its objects: %w", err)
	}
	if len(found) == 0 {
		return nil // empty: pgbus makes its layout there
	}
	if len(found) > 5 {
		found = append(found[:5], "...")
	}
	return foreignPGMQ(fmt.Sprintf("it holds %s but no table pgmq.meta", strings.Join(found, ", ")))
}

func foreignPGMQ(what string) error {
	return &kindError{kind: ErrForeignPGMQSchema, msg: "the database has a schema pgmq that is neither PGMQ's nor pgbus's: " + what +
		"; pgbus keeps its queues in schema pgmq in PGMQ's layout and changed nothing. " +
		"Point pgbus at another database, or move that schema out of the way (ALTER SCHEMA pgmq RENAME TO another_name) and try again"}
}

// PGMQInstall reports what InstallPGMQ did.
type PGMQInstall struct {
	// Installed is false when PGMQ's functions were there already and the
	// script was not run.
	Installed bool
	// Adopted counts the queues pgbus had made before PGMQ was installed,
	// now listed in PGMQ's own pgmq.meta.
	Adopted int
}

// InstallPGMQ runs script, PGMQ's SQL installation script, on a database
// where PGMQ's functions are not installed yet, and adopts the queues pgbus
// made there before: their tables already have PGMQ's shape, and their rows
// of pgmq.meta are carried over into the table the script creates (PGMQ's
// script creates pgmq.meta unconditionally, so run on its own after pgbus it
// stops at "relation "meta" already exists"). The privileges roles had on
// pgbus's pgmq.meta, on the table and on its columns, are granted again on
// PGMQ's, so that a role that read or wrote the queues before still does.
// Everything happens in one
// transaction: on error nothing changed. Where PGMQ's functions are already
// installed it runs nothing and reports Installed false. It does not apply
// pgbus's migrations: call Migrate after it.
func (s *Store) InstallPGMQ(ctx context.Context, script string) (PGMQInstall, error) {
	var res PGMQInstall
	if !strings.Contains(script, "pgmq.meta") || !strings.Contains(script, "FUNCTION pgmq.create(") {
		return res, &kindError{kind: ErrNotPGMQScript, msg: "the script given does not create pgmq.meta and pgmq.create: " +
			"pass the SQL installation script of PGMQ (pgmq.sql of its pgmq-extension/sql directory, for the version you want)"}
	}
	// The migration lock, held for the transaction, keeps pgbus migrate
	// and other pgbus processes' InstallPGMQ out while pgmq.meta is
	// swapped.
	err := s.migrationTx(ctx, "install PGMQ", func(tx pgx.Tx) error {
		if err := checkPGMQSchema(ctx, tx); err != nil {
			return err
		}
		have, err := pgmqFunctions(ctx, tx)
		if err != nil || have {
			return err
		}
		var hasMeta bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('pgmq.meta') IS NOT NULL`).Scan(&hasMeta); err != nil {
			return fmt.Errorf("store: install PGMQ: %w", err)
		}
		// pgbus's pgmq.meta steps aside, with its unique index, into a
		// schema of its own for the length of the transaction.
		if hasMeta {
			if _, err := tx.Exec(ctx, `
				CREATE SCHEMA pgbus_pgmq_install;
				ALTER TABLE pgmq.meta SET SCHEMA pgbus_pgmq_install`); err != nil {
				return fmt.Errorf("store: install PGMQ: move pgbus's pgmq.meta aside: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, script); err != nil {
			return fmt.Errorf("store: install PGMQ: the script failed: %w; nothing was changed", err)
		}
		if hasMeta {
			tag, err := tx.Exec(ctx, `
				INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged, created_at)
				SELECT queue_name, is_partitioned, is_unlogged, created_at FROM pgbus_pgmq_install.meta
				ON CONFLICT (queue_name) DO NOTHING`)
			if err != nil {
				return fmt.Errorf("store: install PGMQ: carry the queues over into PGMQ's pgmq.meta: %w; nothing was changed", err)
			}
			res.Adopted = int(tag.RowsAffected())
			if err := carryMetaGrants(ctx, tx); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DROP SCHEMA pgbus_pgmq_install CASCADE`); err != nil {
				return fmt.Errorf("store: install PGMQ: drop pgbus's former pgmq.meta: %w", err)
			}
		}
		have, err = pgmqFunctions(ctx, tx)
		if err != nil {
			return err
		}
		if !have {
			return &kindError{kind: ErrNotPGMQScript, msg: "the script ran but left no pgmq.create(text) and pgmq.drop_queue(text); nothing was changed: pass PGMQ's SQL installation script"}
		}
		res.Installed = true
		return nil
	})
	if err != nil {
		return PGMQInstall{}, err
	}
	s.tables.Clear()
	return res, nil
}

// carryMetaGrants grants on PGMQ's pgmq.meta, which the script just made,
// every privilege the roles other than its owner had on pgbus's, moved
// aside into schema pgbus_pgmq_install: on the table and on its columns,
// with their grant options, PUBLIC's included. The owner of pgbus's table,
// if another role than the new table's, keeps its privileges as grants.
func carryMetaGrants(ctx context.Context, tx pgx.Tx) error {
	rows, _ := tx.Query(ctx, `
		WITH old AS (SELECT 'pgbus_pgmq_install.meta'::regclass AS oid),
		     acl AS (
			SELECT a.grantee, a.privilege_type, a.is_grantable, NULL::text AS col
			FROM pg_catalog.pg_class c, aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
			WHERE c.oid = (SELECT oid FROM old)
			UNION ALL
			SELECT a.grantee, a.privilege_type, a.is_grantable, att.attname::text
			FROM pg_catalog.pg_attribute att, aclexplode(att.attacl) a
			WHERE att.attrelid = (SELECT oid FROM old) AND att.attnum > 0 AND NOT att.attisdropped)
		SELECT DISTINCT format('GRANT %s%s ON pgmq.meta TO %s%s', acl.privilege_type,
		       coalesce(' (' || quote_ident(acl.col) || ')', ''),
		       CASE acl.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_catalog.pg_get_userbyid(acl.grantee)) END,
		       CASE WHEN acl.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
		FROM acl
		WHERE acl.grantee <> (SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'pgmq.meta'::regclass)
		ORDER BY 1`)
	grants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("store: install PGMQ: read the privileges on pgbus's pgmq.meta: %w; nothing was changed", err)
	}
	for _, g := range grants {
		if _, err := tx.Exec(ctx, g); err != nil {
			return fmt.Errorf("store: install PGMQ: grant again on PGMQ's pgmq.meta what roles had on pgbus's (%s): %w; nothing was changed: install PGMQ as the role that owns schema pgmq", g, err)
		}
	}
	return nil
}
