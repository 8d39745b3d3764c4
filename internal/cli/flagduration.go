package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/ops"
)

// durationVar defines a duration flag that reads whole days too (7d), as
// the time filters, --for and the configuration file's retentions do: a
// week is 7d wherever a duration is asked for, not 168h in some places.
func durationVar(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var(durationValue{p}, name, usage)
}

type durationValue struct{ d *time.Duration }

// Set reads a Go duration or whole days. Values out of a command's range,
// negative or huge, are read for the command to refuse in its own words.
func (v durationValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "d") {
		d, err := ops.ParseAge(s)
		if err != nil {
			return worded{err} // says what is wrong with the days: too many, negative
		}
		*v.d = d
		return nil
	}
	d, err := time.ParseDuration(s)
	if ops.IsDurationOverflow(s) {
		return worded{fmt.Errorf("%q is too long for a duration: give a shorter one, in days when long (7d)", s)}
	}
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// worded is a parser's error in words for people, which a flag's error
// repeats rather than its own general ones.
type worded struct{ error }

func (v durationValue) Type() string { return "duration" }

// String gives a zero duration as "0", which the help takes for no default:
// "0s" printed "(default 0s)" after a default the usage names itself.
func (v durationValue) String() string {
	if *v.d == 0 {
		return "0"
	}
	return v.d.String()
}
