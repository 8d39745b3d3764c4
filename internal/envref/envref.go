// Package envref replaces ${NAME} in configuration values by the
// environment variable NAME, so that tokens and keys stay out of a file
// that is checked into repositories and mounted into containers. The
// alerts block, the http and exec handlers' options and the file's
// database_url and data_dir use it, with the same rules: NAME is letters, digits and _, not starting with a digit; a
// variable that is not set, or empty, is an error naming it; a ${ without
// its closing } is an error too; $${NAME} stands for a literal ${NAME}, and
// $${ for a literal ${.
package envref

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

var (
	// ref is a reference with, optionally, the $ that escapes it.
	ref  = regexp.MustCompile(`\$?\$\{([^}]*)\}`)
	name = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Var is a variable a value used, with the value it had.
type Var struct {
	Name  string
	Value string
}

// Expand replaces each ${NAME} in s by the environment variable NAME, and
// each $${NAME} by a literal ${NAME}. It returns the variables it used,
// so that their values can be kept out of what is shown. An unset or
// empty variable is an error that IsUnset reports, saying what to do; a
// reference that is not a variable name is another error, and so is a ${
// without its closing }, which it leaves as written ($${ is a literal
// ${). The error is
// the first one s holds; the rest of s is expanded all the same.
func Expand(s string) (string, []Var, error) {
	return expand(s, os.LookupEnv)
}

// Check reports what Expand would about s but an unset variable: for the
// commands that read a configuration without running what it configures,
// on a machine that need not have its secrets.
func Check(s string) error {
	_, _, err := expand(s, func(string) (string, bool) { return "x", true })
	return err
}

func expand(s string, lookup func(string) (string, bool)) (string, []Var, error) {
	var (
		err  error
		used []Var
		b    strings.Builder
	)
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	last := 0
	for _, m := range ref.FindAllStringIndex(s, -1) {
		fail(unclosed(&b, s, last, m[0]))
		last = m[1]
		r := s[m[0]:m[1]]
		if strings.HasPrefix(r, "$$") {
			b.WriteString(r[1:])
			continue
		}
		n := r[2 : len(r)-1]
		if !name.MatchString(n) {
			fail(fmt.Errorf("%s is not a variable reference; write ${NAME} with NAME of letters, digits and _ (and $${NAME} for a literal ${NAME})", r))
			b.WriteString(r)
			continue
		}
		v, ok := lookup(n)
		if !ok || v == "" {
			state := "not set"
			if ok {
				state = "empty"
			}
			fail(unsetError(fmt.Sprintf("uses ${%s}, but the environment variable %s is %s; export %s before starting pgbus, or write the value in the file", n, n, state, n)))
		}
		if v != "" && !slices.Contains(used, Var{n, v}) {
			used = append(used, Var{n, v})
		}
		b.WriteString(v)
	}
	fail(unclosed(&b, s, last, len(s)))
	return b.String(), used, err
}

// Ref is a ${NAME} of a value: the variable's name, and where the
// reference stands in the value as written, s[Start:End].
type Ref struct {
	Name       string
	Start, End int
}

// Refs returns the ${NAME}s of s in their order, without the $${NAME}s
// that stand for a literal and what is not a variable reference: the
// places Expand puts the variables' values at.
func Refs(s string) []Ref {
	var refs []Ref
	for _, m := range ref.FindAllStringSubmatchIndex(s, -1) {
		r := s[m[0]:m[1]]
		if strings.HasPrefix(r, "$$") || !name.MatchString(s[m[2]:m[3]]) {
			continue
		}
		refs = append(refs, Ref{Name: s[m[2]:m[3]], Start: m[0], End: m[1]})
	}
	return refs
}

// CheckURLValues refuses a url written with ${NAME}s whose values (vars)
// would change its structure where they stand, as a value goes in as it
// is: a # would cut the url there (a fragment is never sent), a ? before
// the rest of the url would make that rest its query, and a & would split
// the query parameter it stands in. A value that ends the url, or is the
// whole query or a whole parameter of it, may bring ? and &: a url, or
// its query, kept whole in a variable. The http handler's url and the
// alerts' webhook are checked alike.
func CheckURLValues(written string, vars []Var) error {
	values := map[string]string{}
	for _, v := range vars {
		values[v.Name] = v.Value
	}
	query := strings.IndexByte(written, '?')
	for _, r := range Refs(written) {
		v, ref := values[r.Name], written[r.Start:r.End]
		inQuery := query >= 0 && r.Start > query
		switch {
		case strings.Contains(v, "#"):
			return fmt.Errorf("%s brings a # into the url, which would end it there: what follows would not be sent (a fragment never is); write the # in %s's value as %%23, or leave the fragment out", ref, r.Name)
		case !inQuery && r.End < len(written) && strings.Contains(v, "?"):
			return fmt.Errorf("%s brings a ? into the url before the rest of it, which would start the query there and make what the url has after %s part of it; write the ? in %s's value as %%3F, or keep the rest of the url in the variable too", ref, ref, r.Name)
		case inQuery && strings.Contains(v, "&") && !wholeParameter(written, r):
			return fmt.Errorf("%s brings a & into a parameter of the url's query, which would split the parameter in two; write the & in %s's value as %%26", ref, r.Name)
		}
	}
	return nil
}

// wholeParameter reports whether r, a reference in the query of written,
// is a whole parameter of it, between ? or & and & or the end.
func wholeParameter(written string, r Ref) bool {
	before, after := written[:r.Start], written[r.End:]
	return (strings.HasSuffix(before, "?") || strings.HasSuffix(before, "&")) && (after == "" || after[0] == '&')
}

// unclosed writes s[from:to], a stretch of s between references, to b
// with each $${ as the literal ${ it stands for. A ${ there has no
// closing } after it (the next } would have closed it): it is written as
// it is, and the error says where it is. The error quotes what follows it only when that is a variable's
// name up to the end of s (Bearer ${TOKEN): anything else may be part of
// a secret.
func unclosed(b *strings.Builder, s string, from, to int) error {
	var err error
	for i := from; i < to; i++ {
		switch {
		case strings.HasPrefix(s[i:to], "$${"):
			b.WriteString("${")
			i += 2
		case strings.HasPrefix(s[i:to], "${"):
			if err == nil {
				if rest := s[i+2:]; name.MatchString(rest) {
					err = fmt.Errorf("${%s has no closing }: write ${%s}, or $${ for a literal ${", rest, rest)
				} else {
					err = fmt.Errorf("the ${ at character %d has no closing }: write ${NAME} with its closing }, or $${ for a literal ${", utf8.RuneCountInString(s[:i])+1)
				}
			}
			b.WriteString("${")
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return err
}

// Hide returns text with the value of each variable of vars replaced by
// its ${NAME}, longest values first: text that quotes what the expanded
// value said (a parser's error) then reads as the value was written.
func Hide(text string, vars []Var) string {
	vars = slices.Clone(vars)
	slices.SortStableFunc(vars, func(a, b Var) int { return len(b.Value) - len(a.Value) })
	for _, v := range vars {
		if v.Value != "" {
			text = strings.ReplaceAll(text, v.Value, "${"+v.Name+"}")
		}
	}
	return text
}

// unsetError is a ${NAME} whose variable is not set or empty.
type unsetError string

func (e unsetError) Error() string { return string(e) }

// IsUnset reports whether err is, or wraps, the error of a variable that
// is not set or empty.
func IsUnset(err error) bool {
	var u unsetError
	return errors.As(err, &u)
}
