// Package handlers holds the handlers built into the pgbus binary, which a
// configuration file or the --handler flag attaches to a queue: demo
// (a flaky simulated downstream for the quick start), http and exec.
//
// Each handler type registers a Builder under its name. Build checks a
// handler block of the configuration and returns the engine handler it
// describes; the command line calls it for every configured queue before
// anything starts, so that a bad block fails at once.
package handlers

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/config"
)

// Builder turns a handler block into a handler and its options. It rejects
// options its type does not know.
type Builder func(spec config.HandlerSpec) (engine.HandlerFunc, engine.HandlerOptions, error)

var registry = map[string]Builder{
	TypeDemo: buildDemo,
}

// Types lists the handler types there are, sorted.
func Types() []string {
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Build returns the handler a spec describes. Errors say what to change;
// the caller adds where (file, key).
func Build(spec config.HandlerSpec) (engine.HandlerFunc, engine.HandlerOptions, error) {
	b, ok := registry[spec.Type]
	if !ok {
		return nil, engine.HandlerOptions{}, fmt.Errorf("unknown handler type %q; use one of: %s", spec.Type, strings.Join(Types(), ", "))
	}
	fn, opts, err := b(spec)
	if err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	if spec.Timeout > 0 {
		opts.Timeout = spec.Timeout.D()
	}
	return fn, opts, nil
}

// decodeOptions checks that spec holds only the keys of out (a pointer to
// a struct with yaml tags) and decodes them into it.
func decodeOptions(spec config.HandlerSpec, out any) error {
	if len(spec.Options) == 0 {
		return nil
	}
	known := knownOptions(out)
	for k := range spec.Options {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return fmt.Errorf("handler type %s takes no option %q (only type and timeout)", spec.Type, k)
			}
			return fmt.Errorf("handler type %s has no option %q; its options: %s (and type, timeout)", spec.Type, k, strings.Join(known, ", "))
		}
	}
	raw, err := yaml.Marshal(spec.Options)
	if err != nil {
		return fmt.Errorf("handler type %s: options: %v", spec.Type, err)
	}
	if err := yaml.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("handler type %s: options: %s", spec.Type, strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return nil
}

// knownOptions lists the yaml keys of the struct out points to.
func knownOptions(out any) []string {
	t := reflect.TypeOf(out)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var keys []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}
