package store

import "testing"

// The fix a refusal gives keeps the path's other entries as written, in
// their order, with pg_catalog first and nowhere else.
func TestCatalogFirst(t *testing.T) {
	for setting, want := range map[string]string{
		"ext, pg_catalog, public":        "pg_catalog, ext, public",
		`"$user", public`:                `pg_catalog, "$user", public`,
		`"a,b",PG_CATALOG, "pg_catalog"`: `pg_catalog, "a,b"`,
		"":                               "pg_catalog",
	} {
		if got := catalogFirst(setting); got != want {
			t.Errorf("catalogFirst(%q) = %q, want %q", setting, got, want)
		}
	}
}
