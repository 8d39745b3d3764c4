package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const limit = time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"3600", time.Hour, true},
		{"3601", limit, true},
		{"99999999999999999999999", limit, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, false},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), limit, true},
		{now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second, true},
	} {
		got, ok := Parse(tc.in, now, limit)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A date is measured from the response's Date when it has a valid one,
// from the local clock otherwise.
func TestWaitMeasuresADateFromTheResponsesDate(t *testing.T) {
	local := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	server := local.Add(-10 * time.Minute)
	for _, tc := range []struct {
		what, date string
		want       time.Duration
		ok         bool
	}{
		{"the server's Date", server.Format(http.TimeFormat), 30 * time.Second, true},
		{"no Date", "", 0, false},
		{"a Date that is no date", "yesterday", 0, false},
	} {
		h := http.Header{"Retry-After": {server.Add(30 * time.Second).Format(http.TimeFormat)}}
		if tc.date != "" {
			h.Set("Date", tc.date)
		}
		got, ok := Wait(h, local, time.Hour)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: Wait = %s, %v; want %s, %v", tc.what, got, ok, tc.want, tc.ok)
		}
	}
}
