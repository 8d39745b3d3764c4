package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A secret quoted with spaces in it under a secret key is kept by the
// group's pattern, which replaces the key: the summary shows the pattern
// of the redacted message instead, for every caller (agents, the CLI, the
// dashboard, alerts), and keeps what is no secret.
func TestSummaryPatternHidesSecretsWithSpaces(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	secrets := []string{"correct horse battery staple", "blue whale Orbit", "tr0ub4dor and 3", "hunter two"}
	pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Class: "http.400", Message: `login failed: {"password":"correct horse battery staple","client_secret":"blue whale Orbit","error":"bad login"}`},
		pgtest.DeadSpec{Class: "http.400", Message: `login failed: {"password":"tr0ub4dor and 3","client_secret":"hunter two","error":"bad login"}`},
		pgtest.DeadSpec{Class: "http.500", Message: `upstream said "service is down for maintenance" at 12:00`},
	)
	for label, svc := range map[string]*ops.Service{
		"agent bounds": newService(t, s, ops.Options{}),
		"full bounds":  newService(t, s, ops.Options{Bounds: ops.FullBounds}),
	} {
		sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
		if err != nil {
			t.Fatal(err)
		}
		out := mustJSON(t, sum)
		for _, sec := range secrets {
			if strings.Contains(out, sec) {
				t.Errorf("%s: the summary shows the secret %q:\n%s", label, sec, out)
			}
		}
		if !strings.Contains(out, "bad login") || !strings.Contains(out, "service is down for maintenance") {
			t.Errorf("%s: the summary lost what is no secret:\n%s", label, out)
		}
		for _, g := range sum.Groups {
			if g.ErrorClass == "http.400" && !strings.Contains(g.ErrorPattern, "login failed") {
				t.Errorf("%s: pattern %q; want the redacted message's pattern", label, g.ErrorPattern)
			}
		}
	}
}
