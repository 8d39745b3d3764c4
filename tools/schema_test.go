package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

// listDeps returns dependencies for listing the tools: an operations layer
// over a store whose pool has made no connection, which listing never
// asks for (its address takes none).
func listDeps(t testing.TB, readOnly bool) tools.Deps {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	svc, err := ops.New(store.New(pool), ops.Options{ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	return tools.Deps{Ops: svc}
}

var update = flag.Bool("update", false, "rewrite tools/testdata/<tool name>.golden.json from the current tools, and remove the files of tools that no longer exist")

const (
	goldenDir    = "testdata"
	goldenSuffix = ".golden.json"
)

// goldenPath is the snapshot file of the tool called name.
func goldenPath(name string) string {
	return filepath.Join(goldenDir, name+goldenSuffix)
}

// toolSnapshot is what clients see of one tool, as its golden file holds it.
func toolSnapshot(t *testing.T, tool mcp.Tool) []byte {
	t.Helper()
	b, err := json.MarshalIndent(tool, "", "  ")
	if err != nil {
		t.Fatalf("marshal %s: %v", tool.Name, err)
	}
	return append(b, '\n')
}

// TestGolden compares every tool's name, title, description, annotations
// and schemas with its snapshot, testdata/<tool name>.golden.json, and fails
// on a tool without a snapshot or a snapshot without a tool. After an
// intended change, run go test ./tools -run TestGolden -update and review
// the diff.
func TestGolden(t *testing.T) {
	t.Parallel()
	got := map[string][]byte{}
	var names []string
	for _, st := range tools.All(listDeps(t, false)) {
		name := st.Tool.Name
		if name == "" || filepath.Base(name) != name || strings.ContainsAny(name, `/\`) {
			t.Fatalf("tool name %q cannot name its golden file", name)
		}
		if _, dup := got[name]; dup {
			t.Fatalf("two tools are named %s", name)
		}
		got[name] = toolSnapshot(t, st.Tool)
		names = append(names, name)
	}
	// A read-only server lists the read tools as the full server does, so
	// one snapshot covers both.
	for _, st := range tools.All(listDeps(t, true)) {
		name := st.Tool.Name
		full, ok := got[name]
		if !ok {
			t.Errorf("%s is in the read-only set but not in the full one", name)
			continue
		}
		if ro := toolSnapshot(t, st.Tool); !bytes.Equal(ro, full) {
			t.Errorf("%s differs between the read-only and the full set (first difference at line %d):\n%s",
				name, firstDiffLine(ro, full), diffContext(ro, full))
		}
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*"+goldenSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if err := os.WriteFile(goldenPath(name), got[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range files {
			if name := strings.TrimSuffix(filepath.Base(path), goldenSuffix); got[name] == nil {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				t.Logf("removed %s: there is no tool %s", path, name)
			}
		}
		return
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			path := goldenPath(name)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read %s: %v; create it with: go test ./tools -run TestGolden -update", path, err)
			}
			if !bytes.Equal(got[name], want) {
				t.Fatalf("the tool differs from %s (first difference at line %d):\n%s\nIf the change is intended, run: go test ./tools -run TestGolden -update, and review the diff",
					path, firstDiffLine(got[name], want), diffContext(got[name], want))
			}
		})
	}
	for _, path := range files {
		if name := strings.TrimSuffix(filepath.Base(path), goldenSuffix); got[name] == nil {
			t.Errorf("%s is the snapshot of no tool: there is no tool %s. Remove it, or run: go test ./tools -run TestGolden -update", path, name)
		}
	}
}

func firstDiffLine(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

func diffContext(got, want []byte) string {
	n := firstDiffLine(got, want)
	pick := func(b []byte) string {
		lines := strings.Split(string(b), "\n")
		lo, hi := max(n-4, 0), min(n+3, len(lines))
		return strings.Join(lines[lo:hi], "\n")
	}
	return "--- want\n" + pick(want) + "\n+++ got\n" + pick(got)
}

// TestSchemas checks what clients rely on: every schema compiles, is one
// inline object (no $ref or $defs), inputs reject unknown properties, and
// every tool is annotated in full.
func TestSchemas(t *testing.T) {
	t.Parallel()
	all := tools.All(listDeps(t, false))
	readOnly := tools.All(listDeps(t, true))
	if len(all) != 19 || len(readOnly) != 10 {
		t.Fatalf("want 19 tools, 10 of them read-only; got %d and %d", len(all), len(readOnly))
	}
	for _, st := range all {
		tool := st.Tool
		t.Run(tool.Name, func(t *testing.T) {
			if !strings.HasPrefix(tool.Name, "pgbus_") || tool.Description == "" || tool.Title == "" {
				t.Errorf("name, title and description: %q %q %q", tool.Name, tool.Title, tool.Description)
			}
			if !strings.Contains(tool.Description, "pgbus_") {
				t.Errorf("description does not say which tool to call next")
			}
			a := tool.Annotations
			if a.Title == "" || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("annotations are not all explicit: %+v", a)
			}
			if *a.OpenWorldHint {
				t.Errorf("openWorldHint is true")
			}
			for kind, raw := range map[string]json.RawMessage{"input": tool.RawInputSchema, "output": tool.RawOutputSchema} {
				s := string(raw)
				if strings.Contains(s, "$ref") || strings.Contains(s, "$defs") || strings.Contains(s, "$schema") || strings.Contains(s, "$id") {
					t.Errorf("%s schema is not one inline object: %s", kind, s)
				}
				var top map[string]any
				if err := json.Unmarshal(raw, &top); err != nil {
					t.Fatalf("%s schema: %v", kind, err)
				}
				if top["type"] != "object" {
					t.Errorf("%s schema type is %v, not object", kind, top["type"])
				}
				if kind == "input" && top["additionalProperties"] != false {
					t.Errorf("input schema allows additional properties")
				}
				compileSchema(t, tool.Name+" "+kind, raw)
			}
		})
	}
	for _, st := range readOnly {
		if !*st.Tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is in the read-only set but is not read-only", st.Tool.Name)
		}
	}
}

func compileSchema(t testing.TB, name string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s schema: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem://" + strings.ReplaceAll(name, " ", "/")
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s schema: %v", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s schema does not compile: %v", name, err)
	}
	return s
}
