package handlers

import (
	"reflect"
	"slices"
	"strings"
)

// Option documents one key of a handler block, for help texts. It is made
// from the yaml and help tags of the options structs, so that the help
// cannot miss a key.
type Option struct {
	// Key is the key as a file writes it.
	Key string
	// Value says what to write: text, whole number, number, true or false,
	// duration, list of ..., mapping of ..., or mapping.
	Value string
	// Doc says what the key does.
	Doc string
	// Options are the keys of a mapping value (breaker), or of the mapping
	// each entry may be (on_status, on_exit).
	Options []Option
}

// TypeDoc documents a handler type.
type TypeDoc struct {
	Type    string
	Summary string
	// Options are the keys of the type besides type and timeout.
	Options []Option
}

// CommonOptions documents the keys every handler block takes: type and
// timeout.
func CommonOptions() []Option { return optionsOf(reflect.TypeFor[Spec]()) }

// Docs documents every handler type, sorted by name.
func Docs() []TypeDoc {
	out := make([]TypeDoc, 0, len(registry))
	for _, t := range Types() {
		r := registry[t]
		out = append(out, TypeDoc{Type: t, Summary: r.summary, Options: optionsOf(reflect.TypeOf(r.options))})
	}
	return out
}

// optionsOf documents the fields of a struct that have a yaml key.
func optionsOf(t reflect.Type) []Option {
	var out []Option
	for f := range t.Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		o := Option{Key: key, Value: valueOf(f.Type), Doc: f.Tag.Get("help")}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			o.Options = optionsOf(ft)
		}
		out = append(out, o)
	}
	return out
}

var durationType = reflect.TypeFor[Duration]()

// valueOf says what a file writes for a value of type t.
func valueOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case slices.Contains([]reflect.Kind{reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64}, t.Kind()):
		return "whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice:
		return "list of " + plural(valueOf(t.Elem()))
	case t.Kind() == reflect.Map && t.Elem().Kind() != reflect.Struct:
		return "mapping of " + plural(valueOf(t.Elem()))
	}
	return "mapping"
}

func plural(v string) string {
	switch v {
	case "whole number", "number", "duration":
		return v + "s"
	}
	return v
}
