package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cobraWords rewords cobra's errors for a mistyped command line, which say
// what was wrong ("accepts 1 arg(s), received 0") but not what to give:
// the arguments the command takes, the commands there are, where its
// flags are listed. Other errors pass unchanged.
func (a *app) cobraWords(cmd *cobra.Command, err error) error {
	if err == nil || cmd == nil || !isCobraUsage(err) {
		return err
	}
	msg, path := err.Error(), cmd.CommandPath()
	name := strings.TrimPrefix(path, cmd.Root().Name()+" ") // after "pgbus: "
	switch {
	case strings.HasPrefix(msg, "accepts "), strings.HasPrefix(msg, "requires "):
		return usageError{fmt.Errorf("%s takes %s (%s): %s; see %s --help", name, argumentsOf(cmd), msg, cmd.UseLine(), path)}
	case strings.HasPrefix(msg, "unknown command") && !cmd.HasAvailableSubCommands():
		return usageError{fmt.Errorf("%s takes %s (%s); see %s --help", name, argumentsOf(cmd), msg, path)}
	case strings.HasPrefix(msg, "unknown command"):
		return a.unknownSubcommand(cmd, unknownName(msg))
	case strings.HasPrefix(msg, "unknown flag"):
		return usageError{fmt.Errorf("%s; %s%s --help lists the flags it takes", msg, didYouMean(closest(unknownFlag(msg), flagNames(cmd)), "--"), path)}
	case strings.HasPrefix(msg, "unknown shorthand flag"):
		return usageError{fmt.Errorf("%s; %s --help lists the flags it takes", msg, path)}
	}
	return err
}

// unknownCommand reads the name out of cobra's "unknown command "x" for
// "pgbus"".
var unknownCommand = regexp.MustCompile(`^unknown command ("(?:[^"\\]|\\.)*")`)

// unknownName is the command name cobra's unknown command error msg
// quotes.
func unknownName(msg string) string {
	m := unknownCommand.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		return ""
	}
	return name
}

// unknownFlag is the flag name, without its dashes, in pflag's "unknown
// flag: --queeu".
func unknownFlag(msg string) string {
	_, name, _ := strings.Cut(msg, "unknown flag: --")
	return name
}

// flagNames are the names of the flags cmd takes, its own and the global
// ones, but the hidden.
func flagNames(cmd *cobra.Command) []string {
	var names []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if !fl.Hidden {
			names = append(names, fl.Name)
		}
	})
	return names
}

// closest returns the candidates that name is likely a mistyping of: those
// the fewest typos from it (typoDistance), at most one for a name of four
// letters or fewer and two for a longer one, or else those that begin
// with it (at least two letters of it).
func closest(name string, candidates []string) []string {
	name = strings.ToLower(name)
	if name == "" {
		return nil
	}
	limit := 1
	if len(name) > 4 {
		limit = 2
	}
	best, out := limit, []string(nil)
	for _, c := range candidates {
		switch d := typoDistance(name, strings.ToLower(c)); {
		case d > best:
		case d < best || out == nil:
			best, out = d, []string{c}
		default:
			out = append(out, c)
		}
	}
	if len(out) > 0 || len(name) < 2 {
		return out
	}
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), name) {
			out = append(out, c)
		}
	}
	return out
}

// typoDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of neighbours that turn a into b: retyr is one
// from retry, where editDistance counts two.
func typoDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// didYouMean words names, each after prefix, as a question that ends a
// clause ("did you mean queue or queues? "), or "" for no names.
func didYouMean(names []string, prefix string) string {
	if len(names) == 0 {
		return ""
	}
	names = slices.Clone(names)
	for i := range names {
		names[i] = prefix + names[i]
	}
	last := names[len(names)-1]
	if len(names) > 1 {
		last = strings.Join(names[:len(names)-1], ", ") + " or " + last
	}
	return "did you mean " + last + "? "
}

// argumentsOf says what arguments cmd takes, from its usage line: those
// it needs, then one in brackets it may take ("an optional QUEUE"); a
// bracket of flags ("[--queue Q]") is no argument.
func argumentsOf(cmd *cobra.Command) string {
	var args, optional []string
	words := usageWords.FindAllString(cmd.Use, -1)[1:]
	for i, w := range words {
		inner, bracketed := strings.CutPrefix(w, "[")
		inner = strings.TrimSuffix(inner, "]")
		flagValue := i > 0 && strings.HasPrefix(words[i-1], "-")
		switch {
		case strings.HasPrefix(inner, "-") || flagValue:
		case bracketed && !strings.ContainsAny(inner, " |"):
			optional = append(optional, inner)
		case !bracketed:
			args = append(args, w)
		}
	}
	for _, o := range optional {
		args = append(args, "an optional "+o)
	}
	if len(args) == 0 {
		return "no arguments"
	}
	return strings.Join(args, " and ")
}

// usageWords are the words of a usage line, a bracket of several one.
var usageWords = regexp.MustCompile(`\[[^\]]*\]|\S+`)

// commandNames are the names of cmd's commands that a person may use.
func commandNames(cmd *cobra.Command) []string {
	names := []string{}
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}
