package handlers

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/internal/yamlerr"
)

// Spec chooses and configures a built-in handler. It is what a handler
// block of the configuration file decodes to,
//
//	handler:
//	  type: http
//	  timeout: 10s
//	  url: https://billing.internal/hooks/charge
//
// and a Go program can fill it in itself and pass it to Build.
//
// Type and Timeout are documented by their help tags.
type Spec struct {
	Type    string   `yaml:"type" help:"required: the handler, one of demo, http, exec"`
	Timeout Duration `yaml:"timeout,omitempty" help:"bounds one attempt (http and exec: at most 24h, default 30s; demo: default the queue's visibility_timeout). At it an exec command's process group is sent SIGKILL, with no SIGTERM first: a command that must clean up bounds its own work below it"`
	// Options are the type's own keys (see DemoOptions, HTTPOptions and
	// ExecOptions), with the values a YAML decoder gives or plain Go
	// values: strings, numbers, bools, durations written as text ("10s"),
	// slices and maps with string keys. Decoded from a file, the keys of
	// their mappings are as the file writes them (see UnmarshalYAML).
	Options map[string]any `yaml:",inline"`
}

// UnmarshalYAML decodes a handler block, keeping the keys of the mappings
// of its options (on_status, on_exit, headers, env) as the file writes
// them. Decoded as values, they would be numbers where they look like
// numbers: 0503 the octal 323, 0x1F7, +503 and 5_03 the status 503, so
// that a rule would be about a status the file does not name, or one it
// did not mean, without a word; as written, the handler rejects those it
// cannot read as a code.
func (s *Spec) UnmarshalYAML(n *yaml.Node) error {
	type plain Spec
	if err := n.Decode((*plain)(s)); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if _, ok := s.Options[k]; !ok {
			continue
		}
		v, err := asWritten(n.Content[i+1])
		if err != nil {
			return err
		}
		s.Options[k] = v
	}
	return nil
}

// asWritten decodes a value as a plain Go value, its mappings, at any
// depth, into maps keyed by the text of their keys. A mapping whose keys
// are not all plain scalars (a merge key, a list as a key) is decoded as
// it is.
func asWritten(n *yaml.Node) (any, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return decodeAny(n)
			}
			v, err := asWritten(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		items := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := asWritten(item)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return items, nil
	}
	return decodeAny(n)
}

func decodeAny(n *yaml.Node) (any, error) {
	var v any
	err := n.Decode(&v)
	return v, err
}

// Duration is a time.Duration that YAML writes with a unit ("500ms",
// "30s", "5m").
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration with its unit.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDuration parses a duration with a unit, or a bare 0; a whole number
// of days is taken too (7d), as the command line's ages are, retentions
// being counted in days. Negative values are rejected: no pgbus setting
// takes one.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && strings.HasPrefix(days, "-") && len(days) > 1 && strings.Trim(days[1:], "0123456789") == "" {
		return 0, fmt.Errorf("%q is negative; durations here are 0 or more", s)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > int64(math.MaxInt64/int64(24*time.Hour)) {
			return 0, fmt.Errorf("%q is more days than a duration holds; give at most %d", s, math.MaxInt64/int64(24*time.Hour))
		}
		return Duration(time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write a number with a unit, such as 500ms, 30s, 5m, 1h or 7d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative; durations here are 0 or more", s)
	}
	return Duration(d), nil
}

// UnmarshalYAML reads a duration with a unit. Errors carry the line, as
// the decoder's own do.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected a duration such as 30s, got a %s", n.Line, yamlerr.Kind(n))}}
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}
