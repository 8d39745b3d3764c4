package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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

// maxDays is the most whole days a time.Duration holds (106,751).
const maxDays = int64(math.MaxInt64 / (24 * time.Hour))

// Set reads a Go duration or whole days. Values out of a command's range,
// negative or huge, are read for the command to refuse in its own words.
func (v durationValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		switch {
		case err == nil && n >= 0 && n <= maxDays:
			*v.d = time.Duration(n) * 24 * time.Hour
			return nil
		case strings.HasPrefix(days, "-"):
			return worded{fmt.Errorf("%q is negative: give 0 or more days, such as 7d", s)}
		case err == nil || errors.Is(err, strconv.ErrRange):
			return worded{fmt.Errorf("%q is too long for a duration: give at most %dd", s, maxDays)}
		}
		return worded{fmt.Errorf("%q is not a duration: give whole days (7d) or hours and minutes (36h, 90m)", s)}
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
