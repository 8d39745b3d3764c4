package store

import "testing"

// SetAuditPruneBatch makes PruneAudit delete n entries per statement until
// the test ends, so that a test prunes over several batches with few rows.
func SetAuditPruneBatch(tb testing.TB, n int) {
	old := auditPruneBatch
	auditPruneBatch = n
	tb.Cleanup(func() { auditPruneBatch = old })
}
