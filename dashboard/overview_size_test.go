package dashboard_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// traffic is the jobs of a large install over the last hour: for queue i
// and the minute k minutes ago, the outcomes of that minute.
type traffic func(i, k int) store.StatsDelta

// steady runs jobs in every queue every minute, a few of them retried,
// dead-lettered or discarded now and then: every minute of every chart
// has a bar, the most bytes a chart can take.
func steady(i, k int) store.StatsDelta {
	d := store.StatsDelta{Succeeded: int64(5 + (i*k)%20)}
	if (i+k)%7 == 0 {
		d.Retried = 1
	}
	if (i+k)%23 == 0 {
		d.DeadLettered = 1
	}
	if (i+k)%31 == 0 {
		d.Discarded = 1
	}
	return d
}

// bursty runs jobs in each queue in two bursts of five minutes, at times of
// its own: most minutes of a chart are empty.
func bursty(i, k int) store.StatsDelta {
	var d store.StatsDelta
	if a, b := (i*7)%50, (i*13+20)%50; k >= a && k < a+5 || k >= b && k < b+5 {
		d = steady(i, k)
	}
	return d
}

// addTraffic records tr for every queue of names over the last hour.
func addTraffic(t *testing.T, st *store.Store, names []string, tr traffic) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Minute)
	var deltas []store.StatsDelta
	for i, q := range names {
		for k := 1; k < 60; k++ {
			d := tr(i, k)
			if d.Succeeded+d.Retried+d.DeadLettered+d.Discarded == 0 {
				continue
			}
			d.Minute, d.Queue, d.Kind = now.Add(-time.Duration(k)*time.Minute), q, "k"
			deltas = append(deltas, d)
		}
	}
	if err := st.AddStats(pgtest.Context(t), deltas); err != nil {
		t.Fatal(err)
	}
}

// fetch gets path from the dashboard at addr with the headers given, as
// sent: it returns the response and its body, not decompressed.
func fetch(t *testing.T, addr, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// The transport itself, which neither asks for gzip nor decompresses.
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
	}
	return resp, body
}

// The overview of 300 queues, 20 of them charted, stays small however
// busy the queues are: a chart draws no bucket without jobs, each bar's
// outcomes in one path an outcome, and its hover text only for a bucket
// with jobs; and the page is compressed for the browser that asked for it
// on the dashboard. (Before, every bucket had a bar, a slot and hover
// text: 442 KB with jobs in every minute, 351 KB with some bursts, sent
// as they were.)
func TestOverviewSizeOfManyBusyQueues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		tr         traffic
		html, sent int
	}{{"steady", steady, 225_000, 20_000}, {"bursty", bursty, 110_000, 10_000}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each on a database of its own
			st, _, _, _ := bigInstall(t)
			addTraffic(t, st, bigNames(), c.tr)
			addr := serve(t, st, serverOpts{})
			resp, sent := fetch(t, addr, "/", map[string]string{"Sec-Fetch-Site": "same-origin", "Accept-Encoding": "gzip, deflate, br, zstd"})
			_, page := fetch(t, addr, "/", nil)
			t.Logf("%s traffic: %d bytes of HTML, %d sent (%s)", c.name, len(page), len(sent), resp.Header.Get("Content-Encoding"))
			if n, d := strings.Count(string(page), `<svg class="tp"`), len(descRE.FindAllString(string(page), -1)); n != 20 || d != 20 {
				t.Fatalf("the overview draws %d charts, %d described; want 20 and 20", n, d)
			}
			if len(page) > c.html || len(sent) > c.sent || resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("the overview of 300 queues with %s traffic is %d bytes of HTML, %d sent (%q); want at most %d, and %d sent with gzip",
					c.name, len(page), len(sent), resp.Header.Get("Content-Encoding"), c.html, c.sent)
			}
		})
	}
}
