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
