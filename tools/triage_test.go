//go:build unix

package tools_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// gateway stands for a payment gateway: partner p-9's upstream is down
// while outage is set; a charge without an amount, or in a currency it does
// not take, is refused for good.
type gateway struct{ outage atomic.Bool }

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var c struct {
		Partner  string   `json:"partner"`
		Amount   *float64 `json:"amount"`
		Currency string   `json:"currency"`
	}
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		http.Error(w, "malformed JSON", http.StatusBadRequest)
		return
	}
	switch {
	case c.Partner == "p-9" && g.outage.Load():
		http.Error(w, "upstream of partner p-9 unavailable", http.StatusServiceUnavailable)
	case c.Amount == nil:
		http.Error(w, "amount is missing", http.StatusBadRequest)
	case c.Currency != "EUR" && c.Currency != "USD":
		http.Error(w, fmt.Sprintf("currency %q is not supported", c.Currency), http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// imageTool stands for an image converter run by the exec handler: it
// refuses TIFF input (EX_DATAERR) and hangs on SVG. The payload arrives as
// PostgreSQL prints jsonb, so the script matches quoted values, not keys
// and colons.
const imageTool = `in=$(cat)
case "$in" in
*'"tiff"'*) echo 'convert: unsupported input format: tiff' >&2; exit 65 ;;
*'"svg"'*) echo 'convert: rendering svg' >&2; exec sleep 600 ;;
esac
echo converted`

// TestAgentTriageTwoQueues plays an agent's triage over failures of five
// causes in two queues, made by the built-in handlers against real
// downstreams: a payment gateway (http) whose partner p-9 has an outage,
// the only transient cause, and refuses bad charges two ways; and an image
// tool (exec) that refuses a format and hangs on another. Its first two
// calls, pgbus_health then pgbus_dlq_summary, must show every cause with
// its error message, counts and the safe field that singles out the outage.
// It then retries the outage by filter under an expect that a new death
// makes stale, is refused, dry-runs again, and the retried messages succeed
// once the gateway is back.
func TestAgentTriageTwoQueues(t *testing.T) {
	t.Parallel()
	// A database of its own: health and an unfiltered summary see every
	// queue, and only this test's may be there for exact counts.
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	const payments, images = "payments", "images"
	for _, q := range []string{payments, images} {
		pgtest.CreateQueue(t, st, q)
		// Two attempts: the outage and the hang die within seconds.
		pgtest.SetFastSettings(t, st, q, func(s *store.QueueSettings) { s.MaxRetries = 2 })
	}

	gw := &gateway{}
	gw.outage.Store(true)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	// Breakers off: an open breaker snoozes jobs until its cool-off, which
	// would make when (and whether, within the test) the failures die
	// depend on the order the jobs ran in. Breakers have tests of their own.
	noBreaker := map[string]any{"enabled": false}
	work := func(queue string, spec handlers.Spec) *engine.Client {
		fn, opts, err := handlers.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		c := pgtest.NewClient(t, st, queue, nil)
		c.HandleQueue(queue, fn, opts)
		pgtest.Start(t, c)
		return c
	}
	pay := work(payments, handlers.Spec{Type: handlers.TypeHTTP, Timeout: handlers.Duration(30 * time.Second),
		Options: map[string]any{"url": srv.URL + "/charge", "breaker": noBreaker}})
	// The timeout is what turns the hang into a failure; it is far above
	// what a conversion takes, so that a slow machine does not time out
	// the ones that succeed.
	img := work(images, handlers.Spec{Type: handlers.TypeExec, Timeout: handlers.Duration(2 * time.Second),
		Options: map[string]any{"command": []any{"sh", "-c", imageTool}, "breaker": noBreaker}})

	charge := func(partner string, amount any, currency string) {
		p := map[string]any{"partner": partner, "currency": currency}
		if amount != nil {
			p["amount"] = amount
		}
		pgtest.Send(t, pay, payments, p, engine.SendOptions{Kind: "charge"})
	}
	convert := func(name, typ string) {
		pgtest.Send(t, img, images, map[string]any{"file": map[string]any{"name": name, "type": typ}}, engine.SendOptions{Kind: "thumbnail"})
	}
	const (
		outage, noAmount, badCurrency, paid = 4, 3, 2, 4
		tiff, svg, converted                = 2, 1, 3
	)
	for range outage {
		charge("p-9", 10, "EUR")
	}
	charge("p-1", nil, "EUR")
	charge("p-1", nil, "USD")
	charge("p-2", nil, "EUR")
	charge("p-3", 5, "XTS")
	charge("p-4", 7, "GBP")
	for i := range paid {
		charge(fmt.Sprintf("p-%d", 1+i%3), 20, "USD")
	}
	for i := range tiff {
		convert(fmt.Sprintf("scan-%d.tiff", i), "tiff")
	}
	for i := range svg {
		convert(fmt.Sprintf("logo-%d.svg", i), "svg")
	}
	for i := range converted {
		convert(fmt.Sprintf("photo-%d.png", i), "png")
	}
	dead := map[string]int{payments: outage + noAmount + badCurrency, images: tiff + svg}
	done := map[string]int{payments: paid, images: converted}
	pgtest.Eventually(t, 60*time.Second, "every message to succeed or die, and the stats to count the deaths", func() bool {
		for _, q := range []string{payments, images} {
			stats, err := st.QueueStats(testContext(t), q, store.QueueStatsOptions{Archive: true})
			if err != nil {
				t.Fatal(err)
			}
			if pgtest.Live(t, st, q+"_dlq") != dead[q] || pgtest.Archived(t, st, q) != done[q] || len(stats) != 1 || stats[0].LastHour.DeadLettered != int64(dead[q]) {
				return false
			}
		}
		return true
	})

	// The agent's first two calls.
	e := newEnvOn(t, st, ops.Options{SafeFields: []string{"partner", "file.type"}})
	health := healthOK(t, e, nil)
	if health.Status != ops.HealthDegraded || counted(health.DeadMessages) != int64(dead[payments]+dead[images]) || counted(health.Workers) != 2 {
		t.Errorf("health: %+v", health)
	}
	if !slices.Equal(health.Payloads.SafeFields, []string{"file.type", "partner"}) {
		t.Errorf("health names safe fields %v, want file.type and partner to break failures down by", health.Payloads.SafeFields)
	}
	for _, q := range []string{payments, images} {
		i := slices.IndexFunc(health.Reasons, func(r ops.HealthReason) bool { return r.Queue == q && r.Code == "dead_letters_growing" })
		if i < 0 {
			t.Errorf("health does not report %s's new dead letters: %+v", q, health.Reasons)
			continue
		}
		r := health.Reasons[i]
		if !strings.Contains(r.Message, fmt.Sprintf("%d messages dead-lettered", dead[q])) {
			t.Errorf("reason of %s: %q", q, r.Message)
		}
		if h, ok := findHint(r.Next, "pgbus_dlq_summary"); !ok || hintArg(h, "queue") != `"`+q+`"` {
			t.Errorf("next of %s's dead letters: %+v", q, r.Next)
		}
	}

	// Both queues have dead letters: health points at one summary of every
	// DLQ, and names the fields it can break groups down by.
	if len(health.Next) != 1 || health.Next[0].Op != "pgbus_dlq_summary" || health.Next[0].Args["queue"] != nil ||
		!strings.Contains(health.Next[0].Why, "every queue, the 2 whose dead letters grow") || !strings.Contains(health.Next[0].Why, "partner") {
		t.Errorf("health's next step: %+v; want one summary of both queues naming the safe fields", health.Next)
	}
	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"by_field": "partner"})
	if sum.TotalGroups != 5 || len(sum.Groups) != 5 || sum.Truncated || sum.Total != int64(dead[payments]+dead[images]) {
		t.Fatalf("summary: %+v", sum)
	}
	type cause struct {
		name, queue, kind, class, reason string
		texts                            []string // in the error message
		count                            int64
		partners                         []ops.FieldValue // nil: not one partner
	}
	causes := []cause{
		{"outage", payments, "charge", "http.503", store.ReasonMaxRetriesExceeded,
			[]string{"503 Service Unavailable", "upstream of partner p-9 unavailable"}, outage, []ops.FieldValue{{Value: "p-9", Count: outage}}},
		{"missing amount", payments, "charge", "http.400", store.ReasonNonRetryable,
			[]string{"400 Bad Request", "amount is missing"}, noAmount, nil},
		// Two currencies, one cause: their names are quoted values, which
		// the grouping reads as the same pattern.
		{"unsupported currency", payments, "charge", "http.400", store.ReasonNonRetryable,
			[]string{"400 Bad Request", "is not supported"}, badCurrency, nil},
		{"unsupported format", images, "thumbnail", "exec.exit_65", store.ReasonNonRetryable,
			[]string{"exit code 65", "unsupported input format: tiff"}, tiff, nil},
		{"hang", images, "thumbnail", "exec.timeout", store.ReasonMaxRetriesExceeded,
			[]string{"still running at its timeout 2s", "rendering svg"}, svg, nil},
	}
	groupOf := map[string]ops.DeadGroup{}
	for _, c := range causes {
		i := slices.IndexFunc(sum.Groups, func(g ops.DeadGroup) bool {
			if g.SourceQueue != c.queue || g.ErrorClass != c.class {
				return false
			}
			for _, s := range c.texts {
				if !strings.Contains(g.ErrorMessage, s) {
					return false
				}
			}
			return true
		})
		if i < 0 {
			t.Errorf("no group of the %s (%s %s, error with %q) in the summary: %+v", c.name, c.queue, c.class, c.texts, sum.Groups)
			continue
		}
		g := sum.Groups[i]
		groupOf[c.name] = g
		if g.DLQ != c.queue+"_dlq" || g.Kind != c.kind || g.Count != c.count || !slices.Equal(g.Reasons, []string{c.reason}) || len(g.SampleMsgIDs) != int(min(c.count, 5)) {
			t.Errorf("group of the %s: %+v", c.name, g)
		}
		if strings.TrimSpace(g.ErrorMessage) != g.ErrorMessage {
			t.Errorf("the %s's message ends in blanks, which an agent shows as empty lines: %q", c.name, g.ErrorMessage)
		}
		b := g.ByField
		if b == nil || b.Field != "partner" {
			t.Errorf("group of the %s has no breakdown by partner: %+v", c.name, g)
			continue
		}
		switch {
		case c.partners != nil:
			if !slices.Equal(b.Values, c.partners) || b.Other != 0 || b.Missing != 0 {
				t.Errorf("the %s's partners: %+v, want all %v", c.name, b, c.partners)
			}
		case c.queue == images:
			if len(b.Values) != 0 || b.Missing != c.count {
				t.Errorf("the %s's images have no partner: %+v", c.name, b)
			}
		default:
			if len(b.Values) < 2 || b.Missing != 0 {
				t.Errorf("the %s comes from several partners: %+v", c.name, b)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if p := groupOf["unsupported currency"].ErrorPattern; !strings.Contains(p, "currency <str> is not supported") {
		t.Errorf("pattern of the unsupported currencies: %q", p)
	}

	// Retry the outage by filter, guarded by the dry run's expect.
	g := groupOf["outage"]
	retry := func(more map[string]any) map[string]any {
		args := map[string]any{"queue": g.DLQ, "kind": g.Kind, "error_class": g.ErrorClass, "limit": 100}
		for k, v := range more {
			args[k] = v
		}
		return args
	}
	first := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", retry(map[string]any{"dry_run": true}))
	if !first.DryRun || first.Retried != outage || first.Expect == "" {
		t.Fatalf("dry run: %+v", first)
	}
	// Meanwhile another of p-9's charges dies: the set the dry run saw is
	// no longer what the filter selects.
	charge("p-9", 12, "EUR")
	pgtest.Eventually(t, 60*time.Second, "the new charge of p-9 to die", func() bool {
		return pgtest.Live(t, st, payments+"_dlq") == dead[payments]+1
	})
	refused := e.callErr(t, "pgbus_dlq_retry", retry(map[string]any{"expect": first.Expect}),
		"changed since they were counted, by the dry run", "nothing was moved", "run the dry run again")
	if !strings.Contains(refused, `pgbus_dlq_retry {`) || !strings.Contains(refused, `"dry_run":true`) {
		t.Errorf("the refusal does not give the dry run to call: %s", refused)
	}
	if n := pgtest.Live(t, st, payments+"_dlq"); n != dead[payments]+1 {
		t.Fatalf("the refused retry moved messages: the DLQ holds %d, want %d", n, dead[payments]+1)
	}

	// The gateway is back; the agent dry-runs again and retries that set.
	gw.outage.Store(false)
	second := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", retry(map[string]any{"dry_run": true}))
	if !second.DryRun || second.Retried != outage+1 || second.Expect == "" || second.Expect == first.Expect {
		t.Fatalf("second dry run: %+v (first expect %q)", second, first.Expect)
	}
	rep := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", retry(map[string]any{"expect": second.Expect}))
	if rep.DryRun || rep.Retried != outage+1 || rep.Failed != 0 || len(rep.Moved) != outage+1 {
		t.Fatalf("retry: %+v", rep)
	}
	if len(rep.Workers) != 1 || rep.Workers[0].Queue != payments || !rep.Workers[0].Served() {
		t.Errorf("the retry does not say a worker serves %s: %+v", payments, rep.Workers)
	}
	pgtest.Eventually(t, 60*time.Second, "the retried charges to succeed", func() bool {
		return pgtest.Archived(t, st, payments) == paid+outage+1 && pgtest.Live(t, st, payments) == 0
	})

	// Nothing lost: every message sent succeeded or waits in a DLQ, and
	// what waits is the causes that need a person.
	sent := map[string]int{payments: outage + noAmount + badCurrency + paid + 1, images: tiff + svg + converted}
	for _, q := range []string{payments, images} {
		archived, inDLQ := pgtest.Archived(t, st, q), pgtest.Live(t, st, q+"_dlq")
		if archived+inDLQ != sent[q] || pgtest.Live(t, st, q) != 0 {
			t.Errorf("%s: %d archived + %d dead, %d live; %d were sent", q, archived, inDLQ, pgtest.Live(t, st, q), sent[q])
		}
	}
	left := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{})
	if left.TotalGroups != 4 || left.Total != int64(noAmount+badCurrency+tiff+svg) ||
		slices.ContainsFunc(left.Groups, func(g ops.DeadGroup) bool { return g.ErrorClass == "http.503" }) {
		t.Errorf("left after the retry: %+v", left)
	}
	rows := auditRows(t, st, "dlq_retry", payments)
	if len(rows) != 4 || !rows[2].IsError || rows[0].IsError || rows[1].IsError || rows[3].IsError {
		t.Errorf("audit of the retries (newest first): want dry run, refusal, dry run, retry; got %+v", rows)
	}
}
