// Package yamlerr puts the messages of the YAML decoder (gopkg.in/yaml.v3)
// into plain words, for the configuration file and for the handler blocks
// that package handlers decodes; and reads, for both, a quoted true or
// false as the boolean it says (QuotedBool).
package yamlerr

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	lineMsg      = regexp.MustCompile(`(?s)^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): (.*)$`)
	cannotDecode = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
)

// First returns the first problem of a decoder error: its line (0 when
// the message gives none), its message without the line, and how many more
// problems the error holds.
func First(err error) (line int, msg string, more int) {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	msg = strings.TrimSpace(msgs[0])
	if m := lineMsg.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return line, strings.TrimPrefix(msg, "yaml: "), len(msgs) - 1
}

// The decoder's messages for a tab where indentation is expected: neither
// says that a tab is the problem, and on the first line the first gives no
// line at all.
const (
	notAToken    = "found character that cannot start any token"
	tabIndenting = "found a tab character that violates indentation"
)

// TabsIndent words a decoder error about a tab in a line's indentation,
// since people paste tabs and the decoder does not say so plainly. It
// returns the line and column (both from 1) of that tab in data, which the
// error was about, and the reason in plain words; ok is false when err is
// about something else.
func TabsIndent(data []byte, err error) (line, col int, reason string, ok bool) {
	at, msg, _ := First(err)
	if msg != notAToken && msg != tabIndenting {
		return 0, 0, "", false
	}
	// The decoder gives no line for the first one, and for a tab that
	// breaks the indentation it gives the line above the tab.
	from := max(at, 1)
	for i, text := range strings.Split(string(data), "\n") {
		n := i + 1
		indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
		tab := strings.IndexByte(indent, '\t')
		switch {
		case n < from || tab < 0:
			continue
		case msg == notAToken && n != from:
			// That message on a line without a tab in its indentation is
			// about another character (such as @ or `).
			return 0, 0, "", false
		}
		return n, tab + 1, "a tab indents this line; YAML indents with spaces, not tabs: replace the tab with spaces", true
	}
	return 0, 0, "", false
}

// Reason is the first problem of a decoder error in plain words, without
// its line.
func Reason(err error) string {
	_, msg, _ := First(err)
	return Words(msg)
}

// Words turns a "cannot unmarshal" message of the decoder (without its
// line) into plain words, such as `"ten" is not a whole number`; other
// messages are returned as they are. A value is quoted only where a plain
// value of another type goes.
func Words(msg string) string {
	m := cannotDecode.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	tag, value, goType := m[1], m[2], m[3]
	want, structured := wanted(goType)
	switch {
	// A plain value where a mapping or list goes is not quoted: under
	// headers or env it is a secret written without its name.
	case value == "" || structured:
		return fmt.Sprintf("expected %s, got a %s", want, kindOfTag(tag))
	default:
		return fmt.Sprintf("%q is not %s", value, want)
	}
}

// wanted describes a Go type as what to write for it, and whether it is a
// list or a mapping.
func wanted(goType string) (what string, structured bool) {
	switch {
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "a whole number", false
	case strings.HasPrefix(goType, "float"):
		return "a number", false
	case goType == "bool":
		return "true or false", false
	case goType == "string":
		return "text", false
	case strings.HasPrefix(goType, "[]"):
		return "a list", true
	case strings.HasPrefix(goType, "map[") || strings.Contains(goType, "."):
		// A named type here is a struct, such as config.Worker: scalar
		// types decode themselves with messages of their own.
		return "a mapping (key: value lines)", true
	}
	return "a " + goType, false
}

func kindOfTag(tag string) string {
	switch tag {
	case "seq":
		return "list"
	case "map":
		return "mapping"
	}
	return "plain value"
}

// Kind names the kind of a node as the messages do: mapping, list or plain
// value.
func Kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	default:
		return "plain value"
	}
}

// QuotedBool returns n as a boolean where it decodes into one (of type t,
// or a pointer to one) and is true or false quoted ("false"): the decoder
// takes the other words YAML has for them (no, off, yes, on) quoted or
// not, but refuses these quoted, as "not true or false". Otherwise it
// returns n itself. The configuration file's keys and a handler's options
// both read their booleans through it.
func QuotedBool(n *yaml.Node, t reflect.Type) *yaml.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Bool || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return n
	}
	switch n.Value {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		b := *n
		b.Tag, b.Style = "!!bool", 0
		return &b
	}
	return n
}
