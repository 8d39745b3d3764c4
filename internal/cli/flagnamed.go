package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/ops"
)

// flagNamed names the command's flags in an operation's error about
// request fields (--error-class for error_class, at its start or where its
// words name one: "drop --expect, or --dry-run"), as the person types
// them. Other errors, and fields the command takes as arguments rather
// than flags, pass unchanged.
func flagNamed(cmd *cobra.Command, err error) error {
	if cmd == nil {
		return err
	}
	return ops.NameFields(err, func(field string) (string, bool) {
		flag := flagName(field)
		return "--" + flag, cmd.Flags().Lookup(flag) != nil
	})
}

// onceFlags makes every flag of cmd and its subcommands that takes one
// value (text, a number, a duration) refuse to be given twice: --kind job
// --kind email, or --limit 5 --limit 100000, would keep the last and drop
// the first without a word, and a retry or discard would select other
// messages than the person meant. Lists (--header) add each value, and a
// switch (--json) given twice says the same thing twice.
func onceFlags(cmd *cobra.Command) {
	wrap := func(fl *pflag.Flag) {
		if _, done := fl.Value.(onceValue); !done && takesOneValue(fl) {
			fl.Value = onceValue{Value: fl.Value, flag: fl}
		}
	}
	cmd.Flags().VisitAll(wrap)
	cmd.PersistentFlags().VisitAll(wrap)
	for _, sub := range cmd.Commands() {
		onceFlags(sub)
	}
}

// takesOneValue reports whether fl takes one value, which a second one
// would replace.
func takesOneValue(fl *pflag.Flag) bool {
	t := fl.Value.Type()
	return t != "bool" && !strings.HasSuffix(t, "Slice") && !strings.HasSuffix(t, "Array")
}

// onceValue is a flag's value that refuses a second value from the
// command line. pflag marks a flag changed once the command line set it,
// and values from the environment or the file are set only on flags the
// command line left alone.
type onceValue struct {
	pflag.Value
	flag *pflag.Flag
}

func (v onceValue) Set(s string) error {
	if v.flag.Changed {
		return givenTwice{fmt.Errorf("--%s was given twice (%q, then %q): give it once", v.flag.Name, v.Value.String(), s)}
	}
	return v.Value.Set(s)
}

// givenTwice is the refusal of a flag's second value.
type givenTwice struct{ error }
