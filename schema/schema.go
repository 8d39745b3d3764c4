// Package schema holds pgbus's versioned SQL migrations, embedded in the binary.
//
// Files are named NNNN_description.sql and applied in order by store.Migrate.
// A migration, once released, is never edited: add a new file instead.
package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns every migration in version order.
func All() ([]Migration, error) {
	entries, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("schema: list migrations: %w", err)
	}
	out := make([]Migration, 0, len(entries))
	for _, file := range entries {
		m, err := parse(file)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("schema: migration versions must run 1..n without gaps; found %d at position %d", out[i].Version, i+1)
		}
	}
	return out, nil
}

func parse(file string) (Migration, error) {
	base := strings.TrimSuffix(file, ".sql")
	num, name, ok := strings.Cut(base, "_")
	version, err := strconv.Atoi(num)
	if !ok || err != nil || version <= 0 {
		return Migration{}, fmt.Errorf("schema: migration file %q must be named NNNN_description.sql", file)
	}
	body, err := files.ReadFile(file)
	if err != nil {
		return Migration{}, fmt.Errorf("schema: read %s: %w", file, err)
	}
	return Migration{Version: version, Name: name, SQL: string(body)}, nil
}
