package ops

import (
	"strings"

	"github.com/pgbus/pgbus/store"
)

// checkText refuses request text that PostgreSQL cannot take as text or
// compare with it (bytes that are not UTF-8, NUL characters), given as
// pairs of a request field's name and its value. It runs before anything
// reaches the database, so the caller learns which field is wrong instead
// of getting the database's encoding error; the error names the field
// (Error.Field) so that front ends can name it in their own words.
func checkText(fieldValues ...string) error {
	for i := 0; i+1 < len(fieldValues); i += 2 {
		name, value := fieldValues[i], fieldValues[i+1]
		if why := store.CheckText(value); why != "" {
			e := invalidf("%s cannot be used: %s; pass UTF-8 text without NUL characters", name, why)
			e.Field = name
			return e
		}
	}
	return nil
}

// checkText refuses filter text PostgreSQL cannot take (checkText).
func (f DeadFilter) checkText() error {
	return checkText("queue", f.Queue, "kind", f.Kind, "error_class", f.ErrorClass, "reason", f.Reason,
		"since", f.Since, "until", f.Until, "text", f.Text, "group", f.Group)
}

// ptrText is *s, or "" for nil.
func ptrText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// storableText replaces what PostgreSQL cannot store in s (bytes that are
// not UTF-8, NUL characters) by U+FFFD.
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
