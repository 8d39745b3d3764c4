package store

import (
	"slices"
	"testing"
)

// Upgrade says what a call took part in: its from is the version before
// the upgrade it shared (not the version another process had reached
// when it read the record, nor the one before its own first), its to the
// version the schema has after it (not its own last), and a first install
// under way is no upgrade.
func TestUpgradeOfMigrationsShared(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		st       MigrationStatus
		from, to int
		byOthers []int
		ok       bool
	}{
		{"alone", MigrationStatus{From: 20, Settled: 20, AppliedVersions: []int{21, 22, 23}, Version: 23}, 20, 23, nil, true},
		{"nothing applied", MigrationStatus{From: 23, Settled: 23, Version: 23}, 0, 0, nil, false},
		{"first install alone", MigrationStatus{AppliedVersions: []int{1, 2, 3}, Version: 3}, 0, 0, nil, false},
		{"first install joined under way", MigrationStatus{From: 3, AppliedVersions: []int{4, 6, 8}, Version: 9}, 0, 0, nil, false},
		{"upgrade interleaved with another's", MigrationStatus{From: 20, Settled: 20, AppliedVersions: []int{22, 24}, Version: 26}, 20, 26, []int{21, 23, 25, 26}, true},
		{"upgrade joined under way", MigrationStatus{From: 22, Settled: 20, AppliedVersions: []int{23, 24, 25, 26}, Version: 26}, 20, 26, []int{21, 22}, true},
		{"after an older pgbus's upgrade", MigrationStatus{From: 17, Settled: 17, AppliedVersions: []int{25, 26}, Version: 26}, 24, 26, []int{18, 19, 20, 21, 22, 23, 24}, true},
	} {
		from, to, byOthers, ok := c.st.Upgrade()
		if from != c.from || to != c.to || !slices.Equal(byOthers, c.byOthers) || ok != c.ok {
			t.Errorf("%s: Upgrade = from %d to %d, by others %v, %v; want from %d to %d, by others %v, %v", c.name, from, to, byOthers, ok, c.from, c.to, c.byOthers, c.ok)
		}
	}
}
