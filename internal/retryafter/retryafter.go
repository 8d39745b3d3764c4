// Package retryafter reads the wait an HTTP response asks for in its
// Retry-After header, for the http handler's retries and the alerts'
// webhook posts alike.
package retryafter

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Wait is the wait h's Retry-After asks for: whole seconds, or an HTTP
// date measured from the response's Date header when it has a valid one,
// else from local, this host's clock. The date is a time on the server's
// clock: measured against a host whose clock is minutes off, it would wait
// minutes too long or not at all. Waits longer than limit are capped. It
// reports false for none, a malformed value or a time already past.
func Wait(h http.Header, local time.Time, limit time.Duration) (time.Duration, bool) {
	return Parse(h.Get("Retry-After"), ServerNow(h, local), limit)
}

// ServerNow is the time a response was made as its server tells it (its
// Date header), else local.
func ServerNow(h http.Header, local time.Time) time.Time {
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		return t
	}
	return local
}

// Parse reads a Retry-After value, whole seconds or an HTTP date, as the
// wait from now, capped at limit. It reports false for none, a malformed
// value or a time already past.
func Parse(v string, now time.Time, limit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		return seconds(v, limit)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0, false
	}
	return min(d, limit), true
}

// seconds reads a Retry-After in whole seconds; a number too large for
// any integer is a wait as long as the cap.
func seconds(v string, limit time.Duration) (time.Duration, bool) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return limit, true
		}
		return 0, false
	}
	if n == 0 {
		return 0, false
	}
	if n > uint64(limit/time.Second) {
		return limit, true
	}
	return time.Duration(n) * time.Second, true
}
