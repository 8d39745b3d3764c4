package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// promtool returns the path of Prometheus' promtool, failing the test when
// it is not installed: the alert rules would otherwise go untested.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/promtool"); err == nil {
		return "/usr/bin/promtool"
	}
	t.Fatal("promtool is not installed, and it evaluates the alert rules of deploy/prometheus/alerts.yml here: install it (Debian/Ubuntu: apt-get install prometheus; .ci/run does) or put Prometheus' promtool on PATH")
	return ""
}

// alertRule is one rule of the rule file, as the tests need it.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Annotations map[string]string `yaml:"annotations"`
}

func readAlertRules(t *testing.T, path string) map[string]alertRule {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	rules := map[string]alertRule{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	return rules
}

// snapshot is one scrape of a process's /metrics: its samples by series,
// each series written as PromQL writes it, with the job and instance
// labels Prometheus adds to what it scrapes.
type snapshot map[string]scraped

type scraped struct {
	name    string
	value   float64
	counter bool // a counter, or a histogram's bucket, sum or count
}

// capture scrapes base's /metrics over HTTP.
func capture(t *testing.T, base string) snapshot {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	target := map[string]string{"job": "pgbus", "instance": u.Host}
	out := snapshot{}
	add := func(name string, labels map[string]string, v float64, counter bool) {
		all := map[string]string{}
		for k, v := range target {
			all[k] = v
		}
		for k, v := range labels {
			if v != "" { // Prometheus keeps no label of an empty value
				all[k] = v
			}
		}
		keys := make([]string, 0, len(all))
		for k := range all {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + strconv.Quote(all[k])
		}
		out[name+"{"+strings.Join(parts, ",")+"}"] = scraped{name: name, value: v, counter: counter}
	}
	for name, f := range scrape(t, base) {
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, labels, m.Counter.GetValue(), true)
			case dto.MetricType_GAUGE:
				add(name, labels, m.Gauge.GetValue(), false)
			case dto.MetricType_HISTOGRAM:
				h := m.Histogram
				for _, b := range h.Bucket {
					bl := map[string]string{"le": strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)}
					for k, v := range labels {
						bl[k] = v
					}
					add(name+"_bucket", bl, float64(b.GetCumulativeCount()), true)
				}
				inf := map[string]string{"le": "+Inf"}
				for k, v := range labels {
					inf[k] = v
				}
				add(name+"_bucket", inf, float64(h.GetSampleCount()), true)
				add(name+"_sum", labels, h.GetSampleSum(), true)
				add(name+"_count", labels, float64(h.GetSampleCount()), true)
			default:
				t.Fatalf("%s is a %s, which this test does not turn into series", name, f.GetType())
			}
		}
	}
	return out
}

// as is s scraped from base, as if from to: the same target.
func (s snapshot) as(t *testing.T, base, to string) snapshot {
	t.Helper()
	from, into := `instance="`+strings.TrimPrefix(base, "http://")+`"`, `instance="`+strings.TrimPrefix(to, "http://")+`"`
	out := snapshot{}
	for k, v := range s {
		if !strings.Contains(k, from) {
			t.Fatalf("series %s has no %s", k, from)
		}
		out[strings.Replace(k, from, into, 1)] = v
	}
	return out
}

// has reports whether s has a series of the metric name.
func (s snapshot) has(name string) bool {
	for _, v := range s {
		if v.name == name {
			return true
		}
	}
	return false
}

// phase is a stretch of the simulated timeline, one sample a minute, in
// which Prometheus scrapes what one real scrape returned.
type phase struct {
	scrape  int // index of the scrape; notScraped: no process answers
	minutes int
	// ramp makes counters grow each minute by what they grew between the
	// previous scrape and this one (from zero for the first): the work
	// seen between two real scrapes goes on at that pace. Otherwise
	// counters stay where the scrape left them.
	ramp bool
	// aging makes each oldest ready age above zero grow by 60 seconds a
	// minute from the value scraped (from where the phase before left it,
	// when that one was aging too), as it does while nobody takes that
	// message: a test cannot wait the minutes the rules wait for, so the
	// series and its labels are the real ones and only the value is
	// carried forward in time.
	aging bool
	// unread makes pgbus_gauges_age_seconds grow by 60 a minute, from
	// where the phase before left it when that one was unread too, as it
	// does while no read of the gauges succeeds.
	unread bool
}

const notScraped = -1

// inputSeries turns scrapes, laid out on a timeline of phases, into
// promtool's input_series, in its notation (axN, a+bxN, _xN).
func inputSeries(scrapes []snapshot, phases []phase) []map[string]string {
	keys := map[string]bool{}
	for _, s := range scrapes {
		for k := range s {
			keys[k] = true
		}
	}
	var out []map[string]string
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		var parts []string
		extra := 0.0        // what ramps added to a counter, so that it never goes down
		carry := math.NaN() // where an aging or unread phase left an age
		present := false    // the series had a sample in the phase before
		for _, p := range phases {
			var cur scraped
			ok := p.scrape != notScraped
			if ok {
				cur, ok = scrapes[p.scrape][key]
			}
			if !ok {
				// A series a scrape no longer returns is marked stale, as
				// Prometheus marks it, and goes at once; one whose target
				// is not scraped fades after the lookback, as here.
				if present && p.scrape != notScraped {
					parts = append(parts, "stale")
					if p.minutes > 1 {
						parts = append(parts, blanks(p.minutes-1))
					}
				} else {
					parts = append(parts, blanks(p.minutes))
				}
				present, carry = false, math.NaN()
				continue
			}
			present = true
			start, step := cur.value, 0.0
			switch {
			case cur.counter:
				if p.ramp {
					step = cur.value
					if p.scrape > 0 {
						step -= scrapes[p.scrape-1][key].value
					}
				}
				start += extra
				extra += step * float64(p.minutes-1)
			case p.aging && cur.name == "pgbus_queue_oldest_ready_age_seconds" && cur.value > 0,
				p.unread && cur.name == "pgbus_gauges_age_seconds":
				step = 60
				if !math.IsNaN(carry) {
					start = carry + 60
				}
			}
			carry = math.NaN()
			if step == 60 && !cur.counter {
				carry = start + step*float64(p.minutes-1)
			}
			parts = append(parts, progression(start, step, p.minutes))
		}
		out = append(out, map[string]string{"series": key, "values": strings.Join(parts, " ")})
	}
	return out
}

func blanks(n int) string {
	if n == 1 {
		return "_"
	}
	return fmt.Sprintf("_x%d", n)
}

// progression is n samples from start, step apart: promtool's a+bxN
// gives N+1 of them.
func progression(start, step float64, n int) string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case n == 1:
		return num(start)
	case step == 0:
		return fmt.Sprintf("%sx%d", num(start), n-1)
	case step < 0:
		return fmt.Sprintf("%s-%sx%d", num(start), num(-step), n-1)
	}
	return fmt.Sprintf("%s+%sx%d", num(start), num(step), n-1)
}

// firing is an alert expected to fire.
type firing struct {
	alert  string
	labels map[string]string // every label but alertname
	// summary is the summary annotation, written out in full.
	summary string
	// value is how the description writes {{ $value ... }}, when it does.
	value string
}

// check is what fires at one moment of the timeline: exactly these
// alerts, and no other of the rule file.
type check struct {
	minute int
	firing []firing
}

var (
	labelAction = regexp.MustCompile(`\{\{\s*\$labels\.(\w+)\s*\}\}`)
	valueAction = regexp.MustCompile(`\{\{\s*\$value\b[^}]*\}\}`)
)

// ruleTests is the test group of one scenario for promtool test rules:
// at each check, every rule of the file is asked for its firing alerts.
func ruleTests(t *testing.T, rules map[string]alertRule, series []map[string]string, checks []check) map[string]any {
	t.Helper()
	var tests []map[string]any
	for _, c := range checks {
		for _, name := range slices.Sorted(maps.Keys(rules)) {
			exp := []map[string]any{}
			for _, f := range c.firing {
				if rules[f.alert].Alert == "" {
					t.Fatalf("no rule %s in the rule file", f.alert)
				}
				if f.alert != name {
					continue
				}
				// The summary is what this test says; the description,
				// which promtool compares too, is the rule's own with
				// the alert's labels and value put in.
				desc := labelAction.ReplaceAllStringFunc(rules[name].Annotations["description"], func(a string) string {
					return f.labels[labelAction.FindStringSubmatch(a)[1]]
				})
				desc = valueAction.ReplaceAllString(desc, f.value)
				exp = append(exp, map[string]any{
					"exp_labels":      f.labels,
					"exp_annotations": map[string]string{"summary": f.summary, "description": desc},
				})
			}
			tests = append(tests, map[string]any{"eval_time": fmt.Sprintf("%dm", c.minute), "alertname": name, "exp_alerts": exp})
		}
	}
	return map[string]any{"interval": "1m", "input_series": series, "alert_rule_test": tests}
}

// scenario makes a situation for real and scrapes pgbus meanwhile.
type scenario struct {
	name string
	// run returns the scrapes, the timeline they are laid on, and what
	// must fire when.
	run func(t *testing.T) ([]snapshot, []phase, []check)
}

// system is a database of the scenario's own (the gauges read every queue
// of the database), with the operations layer, metrics served over HTTP,
// and workers that report to them.
type system struct {
	st   *store.Store
	svc  *ops.Service
	m    *metrics.Metrics
	base string
}

func newSystem(t *testing.T, st *store.Store) *system {
	t.Helper()
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	return &system{st: st, svc: svc, m: m, base: serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))}
}

func (s *system) client(t *testing.T, q string, edit func(*engine.Config)) *engine.Client {
	t.Helper()
	return pgtest.NewClient(t, s.st, q, func(c *engine.Config) {
		c.Observers = []engine.Observer{s.m}
		if edit != nil {
			edit(c)
		}
	})
}

func (s *system) queue(t *testing.T, prefix string) string {
	t.Helper()
	return pgtest.NewFastQueue(t, s.st, prefix, func(q *store.QueueSettings) { q.RetryBackoff, q.RetryBackoffMax = 0, 0 })
}

// finished is how many jobs of queue the scraped process settled.
func (s *system) finished(t *testing.T, queue, outcome string) float64 {
	t.Helper()
	n := 0.0
	for _, f := range scrape(t, s.base) {
		if f.GetName() != "pgbus_jobs_finished_total" {
			continue
		}
		for _, m := range f.Metric {
			var q, o string
			for _, l := range m.Label {
				switch l.GetName() {
				case "queue":
					q = l.GetValue()
				case "outcome":
					o = l.GetValue()
				}
			}
			if q == queue && o == outcome {
				n += m.Counter.GetValue()
			}
		}
	}
	return n
}

func sendN(t *testing.T, c *engine.Client, q string, n int, w work) {
	t.Helper()
	for range n {
		pgtest.Send(t, c, q, w, engine.SendOptions{Kind: "charge"})
	}
}

// humanMinutes is how promtool's humanizeDuration writes an age of a few
// minutes.
func humanMinutes(seconds float64) string {
	s := int64(seconds)
	return fmt.Sprintf("%dm %ds", s/60, s%60)
}

// The alert rules of deploy/prometheus/alerts.yml are valid, and, run by
// Prometheus' own rule engine (promtool) on series scraped from pgbus's
// /metrics in real situations, fire exactly when they should, with the
// labels and summaries they should, and stay quiet when all is well.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	rulesPath, err := filepath.Abs(filepath.Join("..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", rulesPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesPath, err, out)
	}
	rules := readAlertRules(t, rulesPath)
	const sev, crit = "warning", "critical"

	scenarios := []scenario{
		{"all well, then no process scraped", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			q := s.queue(t, "well")
			c := s.client(t, q, nil)
			c.HandleQueue(q, handle)
			pgtest.Start(t, c)
			var scrapes []snapshot
			for round := 1; round <= 2; round++ {
				// Nine in ten succeed at once, one fails once first: a
				// failure rate well under the rule's quarter.
				sendN(t, c, q, 9, work{Mode: "ok"})
				sendN(t, c, q, 1, work{Mode: "retry"})
				pgtest.Eventually(t, time.Minute, "the jobs done", func() bool {
					return s.finished(t, q, engine.OutcomeSucceeded) == float64(10*round)
				})
				scrapes = append(scrapes, capture(t, s.base))
			}
			var checks []check
			for m := 0; m <= 60; m += 5 {
				checks = append(checks, check{minute: m})
			}
			// The last sample is at 60m; absent() sees it go 5 minutes
			// later, and the rule waits 10 more.
			checks = append(checks, check{minute: 74}, check{minute: 76, firing: []firing{{alert: "PgbusNotScraped",
				labels: map[string]string{"severity": crit}, summary: "no pgbus process reports metrics"}}})
			return scrapes, []phase{{scrape: 0, minutes: 1, ramp: true}, {scrape: 1, minutes: 60, ramp: true}, {scrape: notScraped, minutes: 30}}, checks
		}},

		{"messages and no worker", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			// idle has no worker either, but nothing waits in it: no
			// alert for it, while the others have theirs.
			worked, orphan, _ := s.queue(t, "worked"), s.queue(t, "orphan"), s.queue(t, "idle")
			c := s.client(t, worked, nil)
			c.HandleQueue(worked, handle)
			stop := pgtest.Start(t, c)
			sendN(t, c, worked, 3, work{Mode: "ok"})
			sendN(t, c, orphan, 2, work{Mode: "ok"}) // no process works it
			pgtest.Eventually(t, time.Minute, "the jobs done", func() bool { return s.finished(t, worked, engine.OutcomeSucceeded) == 3 })
			first := capture(t, s.base)
			stop()
			sendN(t, c, worked, 2, work{Mode: "ok"})
			second := capture(t, s.base)
			without := func(q string) firing {
				return firing{alert: "PgbusQueueWithoutWorkers", labels: map[string]string{"queue": q, "severity": crit},
					summary: "pgbus queue " + q + " has messages and no worker"}
			}
			none := firing{alert: "PgbusNoWorkers", labels: map[string]string{"severity": crit}, summary: "pgbus: messages are waiting and no worker process runs"}
			return []snapshot{first, second}, []phase{{scrape: 0, minutes: 20}, {scrape: 1, minutes: 30}}, []check{
				{minute: 4},
				{minute: 6, firing: []firing{without(orphan)}},
				{minute: 24, firing: []firing{without(orphan)}},
				{minute: 26, firing: []firing{without(orphan), without(worked), none}},
				{minute: 49, firing: []firing{without(orphan), without(worked), none}},
			}
		}},

		{"another PGMQ client's queue", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			// Made and consumed by another PGMQ client (no settings of
			// pgbus's, no pgbus worker ever served it): its messages wait,
			// growing old, for that client, and no rule pages about it,
			// though no pgbus worker runs at all.
			q := s.queue(t, "theirs")
			if _, err := s.st.Pool().Exec(pgtest.Context(t), `DELETE FROM pgbus.queues WHERE queue_name = '`+q+`';
				INSERT INTO pgmq.q_`+q+` (vt, message) VALUES (now(), '{}'), (now(), '{}')`); err != nil {
				t.Fatal(err)
			}
			first := capture(t, s.base)
			if !first.has("pgbus_queue_messages") {
				t.Fatalf("no gauge of %s scraped: the other client's queue is listed all the same", q)
			}
			return []snapshot{first}, []phase{{scrape: 0, minutes: 40, aging: true}}, []check{
				{minute: 6}, {minute: 15}, {minute: 25}, {minute: 39},
			}
		}},

		{"dead letters", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			q := s.queue(t, "dead")
			c := s.client(t, q, nil)
			c.HandleQueue(q, handle)
			pgtest.Start(t, c)
			sendN(t, c, q, 3, work{Mode: "ok"})
			pgtest.Eventually(t, time.Minute, "the jobs done", func() bool { return s.finished(t, q, engine.OutcomeSucceeded) == 3 })
			scrapes := []snapshot{capture(t, s.base)} // no dead letter yet, so no series of them
			for _, n := range []int{3, 120} {
				want := max(s.finished(t, q, engine.OutcomeDeadLettered), 0) + float64(n)
				sendN(t, c, q, n, work{Mode: "dead", Class: "bank_declined"})
				pgtest.Eventually(t, time.Minute, "the dead letters", func() bool { return s.finished(t, q, engine.OutcomeDeadLettered) == want })
				scrapes = append(scrapes, capture(t, s.base))
			}
			dead := func(n int) firing {
				return firing{alert: "PgbusDeadLetters", labels: map[string]string{"queue": q, "reason": store.ReasonNonRetryable, "severity": sev},
					summary: fmt.Sprintf("pgbus queue %s: about %d messages dead-lettered (%s) in 15 minutes", q, n, store.ReasonNonRetryable)}
			}
			growing := firing{alert: "PgbusDLQGrowing", labels: map[string]string{"queue": q, "severity": sev},
				summary: "pgbus DLQ of " + q + " grew by 120 in 30 minutes", value: "120"}
			return scrapes, []phase{{scrape: 0, minutes: 20}, {scrape: 1, minutes: 30}, {scrape: 2, minutes: 40}}, []check{
				{minute: 10},
				// The counter's series is born at 20m with its first
				// three: increase() alone reads 0 there.
				{minute: 20, firing: []firing{dead(3)}},
				{minute: 34, firing: []firing{dead(3)}},
				{minute: 36},
				{minute: 50, firing: []firing{dead(120), growing}},
				{minute: 64, firing: []firing{dead(120), growing}},
				{minute: 66, firing: []firing{growing}},
				{minute: 80},
			}
		}},

		{"circuit breaker opened", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			q := s.queue(t, "brk")
			breaker := pgtest.Name("bank")
			c := s.client(t, q, nil)
			c.HandleQueue(q, handle, engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: breaker, FailureThreshold: 5, CoolOff: time.Minute, MaxCoolOff: time.Hour}})
			pgtest.Start(t, c)
			closed := map[string]string{"breaker": breaker, "state": store.BreakerClosed}
			pgtest.Eventually(t, time.Minute, "the breaker reported", func() bool { return value(scrape(t, s.base), "pgbus_circuit_breaker_state", closed) == 1 })
			first := capture(t, s.base)
			if _, err := s.svc.CircuitOpen(pgtest.Context(t), ops.CircuitOpenRequest{Name: breaker, For: time.Hour, Reason: "maintenance"}); err != nil {
				t.Fatal(err)
			}
			second := capture(t, s.base)
			open := firing{alert: "PgbusCircuitBreakerOpen", labels: map[string]string{"breaker": breaker, "severity": sev},
				summary: "pgbus circuit breaker " + breaker + " has not closed for 10 minutes: it is open"}
			return []snapshot{first, second}, []phase{{scrape: 0, minutes: 5}, {scrape: 1, minutes: 30}}, []check{
				{minute: 3}, {minute: 14}, {minute: 15, firing: []firing{open}}, {minute: 34, firing: []firing{open}},
			}
		}},

		{"circuit breaker half-open", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			q := pgtest.NewFastQueue(t, s.st, "probe", func(q *store.QueueSettings) { q.RetryBackoff, q.RetryBackoffMax, q.MaxRetries = 0, 0, 100 })
			breaker := pgtest.Name("bank")
			// Two failures open the breaker; its probe, once the cool-off
			// ends, hangs: the breaker stays half-open.
			release := make(chan struct{})
			var calls atomic.Int32
			c := s.client(t, q, nil)
			c.HandleQueue(q, func(ctx context.Context, _ *engine.Job) error {
				if calls.Add(1) <= 2 {
					return errors.New("bank down")
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}, engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: breaker, FailureThreshold: 2, CoolOff: 200 * time.Millisecond, MaxCoolOff: 200 * time.Millisecond}})
			closed := map[string]string{"breaker": breaker, "state": store.BreakerClosed}
			pgtest.Start(t, c)
			t.Cleanup(func() { close(release) }) // before the worker stops
			pgtest.Eventually(t, time.Minute, "the breaker reported", func() bool { return value(scrape(t, s.base), "pgbus_circuit_breaker_state", closed) == 1 })
			first := capture(t, s.base)
			sendN(t, c, q, 2, work{Mode: "ok"})
			half := map[string]string{"breaker": breaker, "state": store.BreakerHalfOpen}
			pgtest.Eventually(t, time.Minute, "the breaker half-open", func() bool { return value(scrape(t, s.base), "pgbus_circuit_breaker_state", half) == 1 })
			second := capture(t, s.base)
			probing := firing{alert: "PgbusCircuitBreakerOpen", labels: map[string]string{"breaker": breaker, "severity": sev},
				summary: "pgbus circuit breaker " + breaker + " has not closed for 10 minutes: it is half-open, letting a trial call through"}
			return []snapshot{first, second}, []phase{{scrape: 0, minutes: 5}, {scrape: 1, minutes: 30}}, []check{
				{minute: 3}, {minute: 14}, {minute: 15, firing: []firing{probing}}, {minute: 34, firing: []firing{probing}},
			}
		}},

		{"high failure rate", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			q := s.queue(t, "flaky")
			c := s.client(t, q, nil)
			c.HandleQueue(q, handle)
			pgtest.Start(t, c)
			var scrapes []snapshot
			for round := 1; round <= 2; round++ {
				// Each fails once, then succeeds: half the deliveries fail.
				sendN(t, c, q, 3, work{Mode: "retry"})
				pgtest.Eventually(t, time.Minute, "the jobs done", func() bool {
					return s.finished(t, q, engine.OutcomeSucceeded) == float64(3*round)
				})
				scrapes = append(scrapes, capture(t, s.base))
			}
			failing := firing{alert: "PgbusHighFailureRate", labels: map[string]string{"queue": q, "severity": sev},
				summary: "pgbus queue " + q + ": 50% of deliveries fail"}
			return scrapes, []phase{{scrape: 0, minutes: 1, ramp: true}, {scrape: 1, minutes: 30, ramp: true}}, []check{
				{minute: 9}, {minute: 12, firing: []firing{failing}}, {minute: 29, firing: []firing{failing}},
			}
		}},

		{"failure rate with series born in the window", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			q := s.queue(t, "kinds")
			c := s.client(t, q, nil)
			c.HandleQueue(q, handle)
			pgtest.Start(t, c)
			pgtest.Send(t, c, q, work{Mode: "ok"}, engine.SendOptions{Kind: "charge"})
			pgtest.Eventually(t, time.Minute, "the first job done", func() bool { return s.finished(t, q, engine.OutcomeSucceeded) == 1 })
			scrapes := []snapshot{capture(t, s.base)}
			// Each minute, a kind seen for the first time fails twice, then
			// succeeds twice, beside one charge that succeeds: 2 failed
			// deliveries in 5, 40%. The failures share one series, born
			// once, while each new kind's deliveries are series of their
			// own, born that minute: a rate() of them misses their first
			// value, and the ratio read 200%.
			const rounds = 16
			for i := 1; i <= rounds; i++ {
				pgtest.Send(t, c, q, work{Mode: "ok"}, engine.SendOptions{Kind: "charge"})
				for range 2 {
					pgtest.Send(t, c, q, work{Mode: "retry"}, engine.SendOptions{Kind: fmt.Sprintf("kind%d", i)})
				}
				pgtest.Eventually(t, time.Minute, "the jobs done", func() bool {
					return s.finished(t, q, engine.OutcomeSucceeded) == float64(1+3*i)
				})
				scrapes = append(scrapes, capture(t, s.base))
			}
			phases := []phase{{scrape: 0, minutes: 5}}
			for i := 1; i <= rounds; i++ {
				phases = append(phases, phase{scrape: i, minutes: 1, ramp: true})
			}
			phases = append(phases, phase{scrape: rounds, minutes: 20}) // then no more work
			failing := firing{alert: "PgbusHighFailureRate", labels: map[string]string{"queue": q, "severity": sev},
				summary: "pgbus queue " + q + ": 40% of deliveries fail"}
			// The first failures are at 5m, the last at 20m: the rule
			// holds from 5m, fires 10 minutes later, and its 5 minutes of
			// failures end at 25m.
			return scrapes, phases, []check{
				{minute: 4}, {minute: 14},
				{minute: 15, firing: []firing{failing}}, {minute: 20, firing: []firing{failing}}, {minute: 24, firing: []firing{failing}},
				{minute: 26}, {minute: 40},
			}
		}},

		{"database unreachable", func(t *testing.T) ([]snapshot, []phase, []check) {
			_, cluster, st := pgtest.PrivateStore(t)
			s := newSystem(t, st)
			first := capture(t, s.base)
			if err := cluster.Stop(pgtest.Context(t)); err != nil {
				t.Fatal(err)
			}
			second := capture(t, s.base)
			if v := value(scrape(t, s.base), "pgbus_database_up", nil); v != 0 {
				t.Fatalf("pgbus_database_up = %v with the database stopped, want 0", v)
			}
			instance := strings.TrimPrefix(s.base, "http://")
			down := firing{alert: "PgbusDatabaseUnreachable", labels: map[string]string{"instance": instance, "job": "pgbus", "severity": crit},
				summary: "pgbus on " + instance + " cannot read its database"}
			return []snapshot{first, second}, []phase{{scrape: 0, minutes: 5}, {scrape: 1, minutes: 20}}, []check{
				{minute: 4}, {minute: 6}, {minute: 7, firing: []firing{down}}, {minute: 24, firing: []firing{down}},
			}
		}},

		{"schema missing for a role that may not migrate it", func(t *testing.T) ([]snapshot, []phase, []check) {
			// pgbus serve on a database that answers, without the pgbus
			// schema, which its role may not make: it holds its calls
			// (ops.Gate). The database is up; the schema is what ails.
			url := pgtest.NewDatabase(t)
			role, roleURL := pgtest.NewRole(t, url)
			st, err := store.Open(pgtest.Context(t), roleURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			_, migrateErr := st.Migrate(pgtest.Context(t))
			if !errors.Is(migrateErr, store.ErrSchemaMissing) || !store.IsPermissionDenied(migrateErr) {
				t.Fatalf("migrate as %s, who may not create the schema: %v", role, migrateErr)
			}
			gate := ops.NewGate()
			gate.Hold(migrateErr)
			svc, err := ops.New(st, ops.Options{Gate: gate})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(metrics.New(metrics.Options{Ops: svc, CacheFor: -1}))
			base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))
			first := capture(t, base)
			if up, ready := value(scrape(t, base), "pgbus_database_up", nil), value(scrape(t, base), "pgbus_schema_ready", nil); up != 1 || ready != 0 {
				t.Fatalf("pgbus_database_up = %v, pgbus_schema_ready = %v with the schema missing; want 1 and 0", up, ready)
			}
			instance := strings.TrimPrefix(base, "http://")
			missing := firing{alert: "PgbusSchemaNotReady", labels: map[string]string{"instance": instance, "job": "pgbus", "severity": crit},
				summary: "pgbus on " + instance + ": the database answers, but its pgbus schema is not ready"}
			// No gauge is ever read: the gauges' age grows, and only the
			// schema's rule fires, not the database's nor the gauges'.
			return []snapshot{first}, []phase{{scrape: 0, minutes: 30, unread: true}}, []check{
				{minute: 4}, {minute: 5, firing: []firing{missing}}, {minute: 29, firing: []firing{missing}},
			}
		}},

		{"a lock on one queue's table", func(t *testing.T) ([]snapshot, []phase, []check) {
			url := pgtest.NewDatabase(t)
			s := newSystem(t, pgtest.OpenStore(t, url))
			// held has messages and no worker, and another session comes
			// to hold its table.
			held := s.queue(t, "held")
			sendN(t, s.client(t, held, nil), held, 2, work{Mode: "ok"})
			// The same process past the grace: another Metrics that
			// serves no gauge of a read that failed, scraped as the same
			// target.
			past := metrics.New(metrics.Options{Ops: s.svc, CacheFor: -1, GaugesGrace: -1})
			reg := prometheus.NewRegistry()
			reg.MustRegister(past)
			pastBase := serve(t, metrics.Mux(reg, s.svc, metrics.ProbeOptions{}))
			first := capture(t, s.base)
			capture(t, pastBase) // its last successful read
			pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+held)
			second := capture(t, s.base)
			third := capture(t, pastBase).as(t, pastBase, s.base)
			for i, snap := range []snapshot{second, third} {
				if up := value(scrape(t, []string{s.base, pastBase}[i]), "pgbus_database_up", nil); up != 1 {
					t.Fatalf("pgbus_database_up = %v while a lock holds one queue's table, want 1", up)
				}
				if !snap.has("pgbus_gauges_age_seconds") {
					t.Fatal("no pgbus_gauges_age_seconds while a lock holds one queue's table")
				}
			}
			if !second.has("pgbus_queue_messages") || third.has("pgbus_queue_messages") {
				t.Fatal("the gauges should be served within the grace and left out past it")
			}
			var age float64
			for _, v := range second {
				if v.name == "pgbus_gauges_age_seconds" {
					age = v.value
				}
			}
			without := firing{alert: "PgbusQueueWithoutWorkers", labels: map[string]string{"queue": held, "severity": crit},
				summary: "pgbus queue " + held + " has messages and no worker"}
			none := firing{alert: "PgbusNoWorkers", labels: map[string]string{"severity": crit}, summary: "pgbus: messages are waiting and no worker process runs"}
			// The lock comes at 4m: served through the grace, the gauges
			// keep the pending alerts' clocks, which fire at 5m; past it,
			// at 6m, they go, and the age of the last read passes 5
			// minutes at 9m.
			unread := func(a float64) firing {
				return firing{alert: "PgbusGaugesNotRead", labels: map[string]string{"severity": crit}, value: humanMinutes(a),
					summary: "pgbus: the queue gauges have not been read for 5 minutes while the database answers"}
			}
			return []snapshot{first, second, third}, []phase{{scrape: 0, minutes: 4}, {scrape: 1, minutes: 2, unread: true}, {scrape: 2, minutes: 20, unread: true}}, []check{
				{minute: 3},
				{minute: 5, firing: []firing{without, none}},
				{minute: 6}, {minute: 8},
				{minute: 9, firing: []firing{unread(age + 300)}},
				{minute: 25, firing: []firing{unread(age + 21*60)}},
			}
		}},

		{"a queue paused on purpose", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			// Its messages wait, growing old, with no worker: paused, it
			// is not stalled, behind or forgotten, until it has been
			// paused for hours.
			q := s.queue(t, "paused")
			sendN(t, s.client(t, q, nil), q, 2, work{Mode: "ok"})
			if _, err := s.svc.QueuePause(pgtest.Context(t), ops.QueueRequest{Queue: q}); err != nil {
				t.Fatal(err)
			}
			first := capture(t, s.base)
			long := firing{alert: "PgbusQueuePaused", labels: map[string]string{"queue": q, "severity": "info"},
				summary: "pgbus queue " + q + " has been paused for 6 hours"}
			return []snapshot{first}, []phase{{scrape: 0, minutes: 400, aging: true}}, []check{
				{minute: 5}, {minute: 15}, {minute: 60}, {minute: 359},
				{minute: 361, firing: []firing{long}},
			}
		}},

		{"backlog draining through new series", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			// One job at a time, each of a kind of its own, finishes when
			// the test lets it: the others wait, ready, and grow old.
			// Each minute one finishes, the first of its kind: a series
			// born that minute, whose first value rate() misses, so the
			// queue read as not draining.
			q := s.queue(t, "drip")
			release := make(chan struct{})
			c := s.client(t, q, func(cfg *engine.Config) { cfg.Queues = []engine.QueueConfig{{Name: q, Concurrency: 1}} })
			c.HandleQueue(q, func(ctx context.Context, _ *engine.Job) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			})
			const rounds = 16
			for i := 1; i <= rounds+2; i++ {
				pgtest.Send(t, c, q, work{Mode: "ok"}, engine.SendOptions{Kind: fmt.Sprintf("kind%d", i)})
			}
			pgtest.Start(t, c)
			t.Cleanup(func() { close(release) }) // before the worker stops
			scrapes := []snapshot{capture(t, s.base)}
			for i := 1; i <= rounds; i++ {
				release <- struct{}{}
				pgtest.Eventually(t, time.Minute, "the job done", func() bool { return s.finished(t, q, engine.OutcomeSucceeded) == float64(i) })
				scrapes = append(scrapes, capture(t, s.base))
			}
			age := -1.0
			for k, v := range scrapes[0] {
				if v.name == "pgbus_queue_oldest_ready_age_seconds" && strings.Contains(k, `queue="`+q+`"`) {
					age = v.value
				}
			}
			if age <= 0 || age >= 60 {
				t.Fatalf("oldest ready age of %s scraped as %v, want a few seconds: a backlog is waiting", q, age)
			}
			phases := []phase{{scrape: 0, minutes: 1, aging: true}}
			for i := 1; i <= rounds; i++ {
				phases = append(phases, phase{scrape: i, minutes: 1, ramp: true, aging: true})
			}
			phases = append(phases, phase{scrape: rounds, minutes: 20, aging: true}) // then none finishes
			// The age grows a minute a minute from the first scrape, at 0m.
			behind := func(m int) firing {
				return firing{alert: "PgbusBacklogGrowingOld", labels: map[string]string{"queue": q, "severity": sev}, value: humanMinutes(age + float64(m*60)),
					summary: "pgbus queue " + q + ": workers are behind"}
			}
			stalled := firing{alert: "PgbusBacklogStalled", labels: map[string]string{"queue": q, "severity": crit}, value: humanMinutes(age + 27*60),
				summary: "pgbus queue " + q + " is not draining"}
			// The last job finishes at 16m: its series is 5 minutes old at
			// 21m, and the rule fires 5 minutes later.
			return scrapes, phases, []check{
				{minute: 5}, {minute: 10},
				{minute: 12, firing: []firing{behind(12)}},
				{minute: 20, firing: []firing{behind(20)}},
				{minute: 25, firing: []firing{behind(25)}},
				{minute: 27, firing: []firing{behind(27), stalled}},
			}
		}},

		{"backlog stalled or behind", func(t *testing.T) ([]snapshot, []phase, []check) {
			s := newSystem(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
			// stuck's worker runs but its handlers hang: nothing of it
			// finishes. slow's worker finishes jobs, more slowly than they
			// come.
			stuck, slow := s.queue(t, "stuck"), s.queue(t, "slow")
			release := make(chan struct{})
			var started atomic.Int32
			c := s.client(t, stuck, func(cfg *engine.Config) {
				cfg.Queues = []engine.QueueConfig{{Name: stuck, Concurrency: 2}, {Name: slow, Concurrency: 1}}
			})
			c.HandleQueue(stuck, func(ctx context.Context, job *engine.Job) error {
				var w work
				_ = json.Unmarshal(job.Payload, &w)
				if w.Mode == "hang" {
					started.Add(1)
					select {
					case <-release:
					case <-ctx.Done():
					}
					return errors.New("released")
				}
				return nil
			})
			c.HandleQueue(slow, func(ctx context.Context, _ *engine.Job) error {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-ctx.Done():
				}
				return nil
			})
			pgtest.Start(t, c)
			t.Cleanup(func() { close(release) }) // before the worker stops
			sendN(t, c, stuck, 2, work{Mode: "ok"})
			pgtest.Eventually(t, time.Minute, "stuck's first jobs done", func() bool { return s.finished(t, stuck, engine.OutcomeSucceeded) == 2 })
			sendN(t, c, stuck, 4, work{Mode: "hang"})
			sendN(t, c, slow, 30, work{Mode: "ok"})
			pgtest.Eventually(t, time.Minute, "stuck's handlers hung, slow's working", func() bool {
				return started.Load() >= 2 && s.finished(t, slow, engine.OutcomeSucceeded) >= 1
			})
			first := capture(t, s.base)
			done := s.finished(t, slow, engine.OutcomeSucceeded)
			pgtest.Eventually(t, time.Minute, "more of slow's jobs done", func() bool { return s.finished(t, slow, engine.OutcomeSucceeded) >= done+2 })
			second := capture(t, s.base)
			age := func(q string) float64 {
				a := -1.0
				for k, v := range second {
					if v.name == "pgbus_queue_oldest_ready_age_seconds" && strings.Contains(k, `queue="`+q+`"`) {
						a = v.value
					}
				}
				if a <= 0 || a >= 60 {
					t.Fatalf("oldest ready age of %s scraped as %v, want a few seconds: a backlog is waiting", q, a)
				}
				return a
			}
			ageStuck, ageSlow := age(stuck), age(slow)
			// The second scrape is at 10m; the ages grow a minute a
			// minute from there (aging), so at 22m they are 12 minutes
			// older than scraped.
			old := func(alert, q string, a float64) firing {
				f := firing{alert: alert, labels: map[string]string{"queue": q, "severity": sev}, value: humanMinutes(a + 12*60),
					summary: "pgbus queue " + q + ": workers are behind"}
				if alert == "PgbusBacklogStalled" {
					f.labels["severity"], f.summary = crit, "pgbus queue "+q+" is not draining"
				}
				return f
			}
			return []snapshot{first, second}, []phase{{scrape: 0, minutes: 10}, {scrape: 1, minutes: 30, ramp: true, aging: true}}, []check{
				{minute: 5}, {minute: 19},
				{minute: 22, firing: []firing{
					old("PgbusBacklogStalled", stuck, ageStuck),
					old("PgbusBacklogGrowingOld", stuck, ageStuck),
					old("PgbusBacklogGrowingOld", slow, ageSlow),
				}},
			}
		}},
	}

	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			scrapes, phases, checks := sc.run(t)
			group := ruleTests(t, rules, inputSeries(scrapes, phases), checks)
			file := map[string]any{"rule_files": []string{rulesPath}, "evaluation_interval": "1m", "tests": []any{group}}
			raw, err := yaml.Marshal(file)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "alerts_test.yml")
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(tool, "test", "rules", path).CombinedOutput(); err != nil {
				t.Errorf("promtool test rules: %v\n%s\nthe rule tests, made from the scrapes:\n%s", err, out, raw)
			}
		})
	}
}
