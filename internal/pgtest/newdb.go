package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewDatabase creates an empty database on the test server and returns its
// URL; it is dropped when the test ends. Use it where a test needs a database
// of its own, such as one that checks what migrations do to a fresh one.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, "")
}

// NewDatabaseSet is NewDatabase with settings given to every session of
// the database (ALTER DATABASE ... SET), as a DBA gives them: pairs of a
// setting's name and its value, such as "DateStyle", "SQL, DMY".
func NewDatabaseSet(tb testing.TB, settings ...string) string {
	tb.Helper()
	if len(settings)%2 != 0 {
		tb.Fatalf("pgtest: settings %q are not pairs of a name and a value", settings)
	}
	dbURL := NewDatabase(tb)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: parse the database's URL: %v", err)
	}
	for i := 0; i < len(settings); i += 2 {
		Exec(tb, dbURL, "ALTER DATABASE "+pgx.Identifier{cfg.Database}.Sanitize()+" SET "+
			pgx.Identifier{settings[i]}.Sanitize()+" = "+quoteLiteral(settings[i+1]))
	}
	return dbURL
}

// quoteLiteral is s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// NewICUDatabase is NewDatabase with the ICU locale locale (such as
// "en-US") as the database's default collation, as many hosted servers
// create databases: text then sorts by that locale's rules, which differ
// from byte order ("a_b" before "a1" in en-US), wherever a query names no
// collation. It needs PostgreSQL 15 or later, built with ICU.
func NewICUDatabase(tb testing.TB, locale string) string {
	tb.Helper()
	return newDatabase(tb, " TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE "+quoteLiteral(locale)+" LOCALE 'C'")
}

// NewLatin1Database is NewDatabase in the encoding LATIN1, as databases
// made long ago or by a DBA's template are: it stores é as one byte, and
// has no way to store 😀.
func NewLatin1Database(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, " TEMPLATE template0 ENCODING 'LATIN1' LOCALE 'C'")
}

// NewSQLASCIIDatabase is NewDatabase in the encoding SQL_ASCII, as old
// databases and some DBAs' templates are: it stores the bytes a client
// sends as they come, and refuses a JSON \u escape of any character past
// ASCII, which it cannot convert.
func NewSQLASCIIDatabase(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, " TEMPLATE template0 ENCODING 'SQL_ASCII' LOCALE 'C'")
}

// newDatabase creates a database with the options of CREATE DATABASE opts,
// dropped when the test ends, and returns its URL.
func newDatabase(tb testing.TB, opts string) string {
	tb.Helper()
	base := URL(tb)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "pgbus_t_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("pgtest: connect to create a database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+opts); err != nil {
		tb.Fatalf("pgtest: create database %s%s: %v", name, opts, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("pgtest: connect to drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(tb, base, name)
}

// withDatabase returns url pointing at database name; it accepts URLs and
// key=value connection strings.
func withDatabase(tb testing.TB, base, name string) string {
	return editConnString(tb, base, "dbname="+name, func(u *url.URL) { u.Path = "/" + name })
}

// editConnString returns base changed: a key=value connection string gets
// the pairs kv appended (a later pair wins), a URL is changed by edit.
func editConnString(tb testing.TB, base, kv string, edit func(*url.URL)) string {
	if !strings.Contains(base, "://") {
		return base + " " + kv
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("pgtest: parse the database URL: %v; check %s", err, EnvURL)
	}
	edit(u)
	return u.String()
}
