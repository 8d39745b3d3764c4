package tools

import (
	"strings"
	"testing"
)

// pgbus_dlq_purge's description says to check first where what it would
// delete shows: its own dry run and pgbus_dlq_discarded, the archive it
// deletes from; not pgbus_dlq_list, which lists what a purge leaves.
func TestPurgeDescriptionPointsAtWhatItWouldDelete(t *testing.T) {
	t.Parallel()
	for _, want := range []string{"dry_run", "pgbus_dlq_discarded"} {
		if !strings.Contains(dlqPurgeDescription, want) {
			t.Errorf("pgbus_dlq_purge's description does not name %s to check first what would go:\n%s", want, dlqPurgeDescription)
		}
	}
	if strings.Contains(dlqPurgeDescription, "pgbus_dlq_list") {
		t.Errorf("pgbus_dlq_purge's description names pgbus_dlq_list, which lists the dead messages a purge leaves:\n%s", dlqPurgeDescription)
	}
}
