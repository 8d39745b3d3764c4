package redact_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/redact"
)

// URL hides what of a URL may be a credential, whether it parses or not,
// and keeps the rest readable.
func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://h.example/x":                             "https://h.example/x",
		"https://h.example:99999/x?sig=Zq8SigQ1&v=2":      "https://h.example:99999/x?[REDACTED]",
		"https://h.example/x#Zq8FragQ1":                   "https://h.example/x#[REDACTED]",
		"postgres://app:Zq8PwQ1@db:bad/app?sslmode=x":     "postgres://app:[REDACTED]@db:bad/app?[REDACTED]",
		"postgres://app:pa?ss#w@db/app":                   "postgres://app:[REDACTED]@db/app",
		"postgres://app:Pa@ss@db/app?application_name=Zq": "postgres://app:[REDACTED]@db/app?[REDACTED]",
		"//h/x?token=Zq8TokQ1":                            "//h/x?[REDACTED]",
		"h.example/x":                                     "h.example/x",
	} {
		if got := redact.URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// DatabaseURL keeps what of a database URL's query names the database
// and hides every other value, and what cannot be read.
func TestDatabaseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres:///pgbus?host=/var/run/postgresql":                               "postgres:///pgbus?host=/var/run/postgresql",
		"postgres://ops:Zq8PwQ1@db/app?sslmode=require&password=Zq8PwQ2":           "postgres://ops:[REDACTED]@db/app?sslmode=require&[REDACTED]",
		"postgres://db/app?options=-c%20app.key%3DZq8KeyQ1&port=5433":              "postgres://db/app?[REDACTED]&port=5433",
		"postgres://db/app?Zq8TokQ1&host=h":                                        "postgres://db/app?[REDACTED]&host=h",
		"postgres://db/app?ho%zzst=Zq8TokQ1":                                       "postgres://db/app?[REDACTED]",
		"postgres://db/app?sslmode=disable#Zq8FragQ1":                              "postgres://db/app?sslmode=disable#[REDACTED]",
		"postgres://db/app#Zq8FragQ1?host=h":                                       "postgres://db/app#[REDACTED]",
		"postgres://db/app":                                                        "postgres://db/app",
		"postgres://app:Pa@ss@db/app?application_name=worker&sig=Zq8SigQ":          "postgres://app:[REDACTED]@db/app?application_name=worker&[REDACTED]",
		"postgres://db/app?sslmode=disable&default_query_exec_mode=cache_describe": "postgres://db/app?sslmode=disable&default_query_exec_mode=cache_describe",
		// Keyword/value strings: the settings as written, every other
		// key's value hidden, the key kept to say what to fill in.
		"host=db port=5433 user=alice password=Zq8PwQ1 dbname='my db' sslmode=disable": "host=db port=5433 user=alice password=[REDACTED] dbname='my db' sslmode=disable",
		"host=db password='Zq8 \\'PwQ2\\\\' dbname=app":                                "host=db password=[REDACTED] dbname=app",
		"host = db  password =Zq8PwQ3\toptions='-c app.key=Zq8KeyQ1'":                  "host=db password=[REDACTED] options=[REDACTED]",
		"host=db password='Zq8PwQ4 never closed":                                       "host=db password=[REDACTED]",
		"host=db Zq8TokQ2 dbname=app":                                                  "host=db [REDACTED]",
		"dbname=app password=Zq8PwQ5=x":                                                "dbname=app password=[REDACTED]",
	} {
		if got := redact.DatabaseURL(raw); got != want {
			t.Errorf("DatabaseURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// DatabaseAddress keeps where a connection string leads and drops who
// connects: user and password, in the user info, the query or the keys.
func TestDatabaseAddress(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"postgres://reader:R3aderPw@db.internal:5433/app?sslmode=require":      "postgres://db.internal:5433/app?sslmode=require",
		"postgresql://reader@db/app":                                           "postgresql://db/app",
		"postgres:///app?host=/run/pg&user=reader&password=pw&sslmode=disable": "postgres:///app?host=/run/pg&sslmode=disable",
		"postgres://db/app?sslrootcert=/ca.pem&token=abc":                      "postgres://db/app?sslrootcert=/ca.pem&" + redact.Marker,
		"host=db port=5432 user=reader password='p w' dbname=app":              "host=db port=5432 dbname=app",
	} {
		if got := redact.DatabaseAddress(raw); got != want {
			t.Errorf("DatabaseAddress(%q) = %q; want %q", raw, got, want)
		}
	}
}
