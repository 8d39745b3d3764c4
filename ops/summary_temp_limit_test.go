package ops_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A summary filtered by text and time under a temp_file_limit too small
// for its sort is refused with advice a summary can follow: it has no
// "less" to ask for, so the advice is to raise temp_file_limit for the
// role (the statement given), or to narrow the filter, a shorter time or
// a queue, and not to "ask for less in one call".
func TestSummaryUnderATinyTempFileLimit(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	specs := make([]pgtest.DeadSpec, 3000)
	for i := range specs {
		specs[i] = pgtest.DeadSpec{Kind: fmt.Sprintf("k%d", i), Class: fmt.Sprintf("Class%d", i), Message: fmt.Sprintf("boom %s %d", strings.Repeat("x", 200), i)}
	}
	pgtest.DeadLetter(t, s, q, specs...)
	pgtest.Exec(t, url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET work_mem = ''64kB''', current_database()); EXECUTE format('ALTER DATABASE %I SET temp_file_limit = ''64kB''', current_database()); END $$`)
	limited := pgtest.OpenStore(t, url)
	svc := newService(t, limited, ops.Options{})
	_, err := svc.DLQSummary(testContext(t), ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, Text: "boom", Since: "1h"}})
	if err == nil {
		t.Fatal("the summary passed under a temp_file_limit of 64kB: the test needs one that refuses it")
	}
	msg := err.Error()
	if strings.Contains(msg, "ask for less") || !strings.Contains(msg, "temp_file_limit") || !strings.Contains(msg, "SET temp_file_limit") || !strings.Contains(msg, "narrow") {
		t.Errorf("the summary refused under temp_file_limit says %q; want advice a summary can follow: raise temp_file_limit (the statement), or narrow its filter", msg)
	}
}
