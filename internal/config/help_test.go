package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
)

// The help (pgbus help config) names every key the file takes: those of
// the file, its worker and queue blocks, and of each handler type (in that
// type's part), nested ones included.
func TestHelpNamesEveryKey(t *testing.T) {
	out := config.Help()
	for _, key := range yamlKeys(reflect.TypeFor[config.File]()) {
		if !hasKey(out, key) {
			t.Errorf("pgbus help config does not show the file's key %s", key)
		}
	}

	options := map[string]any{
		handlers.TypeDemo: handlers.DemoOptions{},
		handlers.TypeHTTP: handlers.HTTPOptions{},
		handlers.TypeExec: handlers.ExecOptions{},
	}
	var types []string
	for typ := range options {
		types = append(types, typ)
	}
	slices.Sort(types)
	if got := handlers.Types(); !slices.Equal(got, types) {
		t.Fatalf("handler types %v; this test knows the option structs of %v", got, types)
	}
	parts := strings.Split(out, "\n  type: ")
	for typ, opts := range options {
		i := slices.IndexFunc(parts, func(p string) bool { return strings.HasPrefix(p, typ+"\n") })
		if i < 0 {
			t.Errorf("pgbus help config has no part for handler type %s", typ)
			continue
		}
		for _, key := range yamlKeys(reflect.TypeOf(opts)) {
			if !hasKey(parts[i], key) {
				t.Errorf("pgbus help config does not show the %s handler's key %s", typ, key)
			}
		}
	}
}

// hasKey reports whether text has a line that starts, after indentation,
// with key and a colon.
func hasKey(text, key string) bool {
	return regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(key) + `:`).MatchString(text)
}

// yamlKeys lists the yaml keys of a struct and of the structs its fields
// hold (directly, by pointer, or as list or mapping values).
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name != "" {
			keys = append(keys, name)
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.NumField() > 0 {
			keys = append(keys, yamlKeys(ft)...)
		}
	}
	return keys
}

// The file has no per-kind policy: a queue's handler block runs every
// kind of its messages. The help and the README say so, and that per-kind
// policies are a Go program's (engine.Client.Handle), where the README
// advertises them.
func TestPerKindPoliciesAreSaidToBeGos(t *testing.T) {
	help := strings.Join(strings.Fields(config.Help()), " ")
	for _, want := range []string{"whatever its kind", "engine.Client.Handle(kind"} {
		if !strings.Contains(help, want) {
			t.Errorf("pgbus help config does not say %q", want)
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(raw)), " ")
	if !strings.Contains(readme, "per-kind overrides from Go") {
		t.Error("README.md advertises per-kind overrides without saying they are set from Go")
	}
	_, section, _ := strings.Cut(readme, "## Configuration")
	section, _, _ = strings.Cut(section, "## Behind PgBouncer")
	for _, want := range []string{"whatever its kind", "engine.Client.Handle(kind"} {
		if !strings.Contains(section, want) {
			t.Errorf("README.md's Configuration does not say %q", want)
		}
	}
}

// The help's sentence on durations gives every unit the file takes, days
// included, which its own example writes (audit_retention: 90d), and each
// duration it gives is one the file takes.
func TestHelpGivesEveryDurationUnit(t *testing.T) {
	var sentence string
	for _, line := range strings.Split(config.Help(), "\n") {
		if strings.HasPrefix(line, "Durations take") {
			sentence = line
		}
	}
	examples := regexp.MustCompile(`\b\d+(ms|s|m|h|d)\b`).FindAllStringSubmatch(sentence, -1)
	units := map[string]bool{}
	for _, m := range examples {
		units[m[1]] = true
		file := "queues:\n  orders:\n    handler: {type: demo, timeout: " + m[0] + "}\n"
		if _, err := config.Parse("pgbus.yaml", []byte(file)); err != nil {
			t.Errorf("the help gives the duration %s, which the file refuses: %v", m[0], err)
		}
	}
	for _, unit := range []string{"ms", "s", "m", "h", "d"} {
		if !units[unit] {
			t.Errorf("pgbus help config says %q, with no duration in %s, which the file takes", sentence, unit)
		}
	}
}
