package ops_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// checkParseError asserts what every refusal of the time grammar must be:
// a sentence that says what to give.
func checkParseError(t *testing.T, input string, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || !strings.Contains(msg, "give") || strings.Contains(msg, "SQLSTATE") {
		t.Fatalf("%q: error %q does not say what to give", input, msg)
	}
}

// FuzzParseAge: an age is refused with a message saying what to give, or
// is a duration from 0 to 100 years that reads back the same from its Go
// form (and, for whole days, from its days form).
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"0", "0s", "30m", "2h30m", "7d", " 7d ", "36500d", "36501d", "-1h", "-1d", "1.5d",
		"d", "", "1e3h", "876000h", "876001h", "9223372036854775807ns", "99999999999999999999d", "+3d", "7D", "1h\x00", "\xff"} {
		f.Add(s)
	}
	const maxAge = 100 * 365 * 24 * time.Hour
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ops.ParseAge(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		if d < 0 || d > maxAge {
			t.Fatalf("%q: age %v is out of 0..100 years", s, d)
		}
		if back, err := ops.ParseAge(d.String()); err != nil || back != d {
			t.Fatalf("%q: %v reads back from %q as %v, %v", s, d, d.String(), back, err)
		}
		if d%(24*time.Hour) == 0 {
			days := fmt.Sprintf("%dd", d/(24*time.Hour))
			if back, err := ops.ParseAge(days); err != nil || back != d {
				t.Fatalf("%q: %v does not read back from %q: %v, %v", s, d, days, back, err)
			}
		}
	})
}

// FuzzParseTime: a time is refused with a message saying what to give, or
// lies between 1970 and a year ahead and reads back the same from its RFC
// 3339 form.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-29T20:00:00Z", "2026-11-29T20:00:00.123456789+05:30", "2026-11-29", "1969-12-31", "1970-01-01",
		"9999-12-31", "30m", "7d", "0s", "36500d", "2026-02-30", "2026-11-29T25:00:00Z", "yesterday", "", " 2h ", "2026-11-29T20:00:00", "\x00", "\xff"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ops.ParseTime(s, now)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		if got.Before(time.Unix(0, 0)) || got.After(now.AddDate(1, 0, 0)) {
			t.Fatalf("%q: %v is outside 1970 .. a year ahead", s, got)
		}
		text := got.Format(time.RFC3339Nano)
		if back, err := ops.ParseTime(text, now); err != nil || !back.Equal(got) {
			t.Fatalf("%q: %v reads back from %q as %v, %v", s, got, text, back, err)
		}
	})
}

// FuzzParseID: a message id written as text is read only in its one
// spelling, the decimal digits FormatInt gives (so +42, 042, " 42" and
// 4_2 are refused, not read as 42); a refusal is ErrInvalid and says the
// form expected.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"42", "1", "9223372036854775807", "9223372036854775808", "+42", "042", "0", "-0", "+0", "-42", " 42", "42 ", "4_2",
		"42.0", "4.2e1", "0x2a", "٤٢", "", "\x00", "\xff", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ops.ParseID(s)
		if err != nil {
			if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "message id") {
				t.Fatalf("%q: error %v is not a refusal that names the id", s, err)
			}
			if canonical := strings.Trim(s, "0123456789") == "" && s != "" && s[0] != '0'; !canonical && !strings.Contains(err.Error(), ops.IDForm) {
				t.Fatalf("%q: error %q does not say the form expected", s, err)
			}
			return
		}
		if id <= 0 || strconv.FormatInt(id, 10) != s {
			t.Fatalf("%q: read as %d, which is written %q", s, id, strconv.FormatInt(id, 10))
		}
	})
}
