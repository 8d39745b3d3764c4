package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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

// registered returns every pgbus metric family a process registers, each
// of them made to have a sample.
func registered(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	svc, err := ops.New(pgtest.Store(t), ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	job := &engine.Job{Queue: "q", Kind: "k"}
	m.JobFinished(context.Background(), job, engine.Finish{Outcome: engine.OutcomeDeadLettered, Reason: store.ReasonNonRetryable, Err: errors.New("x"), ErrorClass: "error", Ran: true})
	m.BreakerChanged("b", store.BreakerClosed, store.BreakerOpen)
	m.ToolCalled("pgbus_health", metrics.ToolOK)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	// Gauges with no queue or breaker yet are described all the same.
	for name, typ := range Types {
		if out[name] == nil && typ == dto.MetricType_GAUGE {
			out[name] = &dto.MetricFamily{Name: &name, Type: typ.Enum()}
		}
	}
	return out
}

var metricName = regexp.MustCompile(`\bpgbus_[a-z0-9_]+`)

// known reports whether name is a registered family, or a series of a
// registered histogram.
func known(fams map[string]*dto.MetricFamily, name string) bool {
	if fams[name] != nil {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && fams[base] != nil && fams[base].GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// Every metric the Grafana dashboard and the alert rules use is one the
// process registers, and the dashboard shows every one of them: they
// cannot drift apart.
func TestDeployFilesUseRegisteredMetrics(t *testing.T) {
	fams := registered(t)
	if len(fams) != len(Types) {
		t.Fatalf("%d families registered, %d in Types", len(fams), len(Types))
	}

	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "pgbus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	shown := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q uses no pgbus metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				if !known(fams, n) {
					t.Errorf("panel %q uses %s, which pgbus does not register", p.Title, n)
				}
				shown[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
			}
		}
	}
	for name := range fams {
		if !shown[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}

	raw, err = os.ReadFile(filepath.Join("..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("the alert rules are not a rule file: %v", err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if !strings.HasPrefix(r.Alert, "Pgbus") || r.Annotations["summary"] == "" || r.Annotations["description"] == "" ||
				!slices.Contains([]string{"info", "warning", "critical"}, r.Labels["severity"]) {
				t.Errorf("rule %q needs a Pgbus name, a severity of info, warning or critical, a summary and a description", r.Alert)
			}
			names := metricName.FindAllString(r.Expr, -1)
			if len(names) == 0 {
				t.Errorf("rule %q uses no pgbus metric: %q", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !known(fams, n) {
					t.Errorf("rule %q uses %s, which pgbus does not register", r.Alert, n)
				}
			}
		}
	}
	if len(alerts) < 5 {
		t.Errorf("only %d alert rules: %v", len(alerts), alerts)
	}
}

// dashboard is the Grafana dashboard, as the tests of its shape read it.
type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Templating struct {
		List []struct {
			Name    string `json:"name"`
			Type    string `json:"type"`
			Query   any    `json:"query"`
			Current struct {
				Text  any `json:"text"`
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Interval   string `json:"interval"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Targets []struct {
			Expr       string `json:"expr"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "pgbus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	return d
}

var increaseOf = regexp.MustCompile(`increase\((pgbus_\w+_total(?:\{[^}]*\})?)\[([^\]]+)\]\)`)

// The dashboard's panels count events as the alert rules do: a counter's
// series appears at its first event, which increase() and rate() over a
// series born within their window drop (a first dead letter, a breaker's
// first opening, a new error class read 0), so a count per interval
// counts series that were not there an interval ago from their value; its
// windows are the points' own interval ($__interval, at least a minute),
// not $__rate_interval, which overlap and change the count with the zoom.
// A stat shows no data, not a green 0, while the gauges it counts are
// missing. Every query is PromQL Prometheus takes, once Grafana's
// variables are put in.
func TestDashboardCountsEveryEvent(t *testing.T) {
	d := readDashboard(t)
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$queue", ".*")
	var exprs []map[string]string
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			exprs = append(exprs, map[string]string{"record": fmt.Sprintf("dashboard:panel%d_%d", len(exprs), i), "expr": vars.Replace(tg.Expr)})
		}
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": exprs}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's queries, as promtool check rules reads them: %v\n%s", err, out)
	}
	for _, p := range d.Panels {
		counts := false
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "vector(0)") {
				t.Errorf("panel %q: %q shows 0 while the gauges are missing (the database down, or a lock held past the grace): show no data then", p.Title, tg.Expr)
			}
			for _, name := range []string{"pgbus_job_failures_total", "pgbus_circuit_breaker_transitions_total"} {
				if strings.Contains(tg.Expr, "rate("+name) {
					t.Errorf("panel %q: %q takes a rate of %s, which misses the first event of each new series: count them per interval", p.Title, tg.Expr, name)
				}
			}
			if strings.Contains(tg.Expr, `outcome="dead_lettered"`) && !increaseOf.MatchString(tg.Expr) {
				t.Errorf("panel %q: %q does not count dead letters per interval", p.Title, tg.Expr)
			}
			for _, m := range increaseOf.FindAllStringSubmatch(tg.Expr, -1) {
				counts = true
				sel, window := m[1], m[2]
				if window != "$__interval" {
					t.Errorf("panel %q: %q counts over %s, which overlaps the next point's window: use $__interval", p.Title, tg.Expr, window)
				}
				if born := sel + " unless " + sel + " offset " + window; !strings.Contains(tg.Expr, born) {
					t.Errorf("panel %q: %q drops the first value of series born within the window: add (%s) or before it", p.Title, tg.Expr, born)
				}
			}
		}
		if counts {
			if min, err := time.ParseDuration(p.Interval); err != nil || min < time.Minute {
				t.Errorf("panel %q counts per interval with a minimum interval of %q: set one of at least 1m, so that each window holds several scrapes", p.Title, p.Interval)
			}
			if strings.Contains(p.Title, "per second") {
				t.Errorf("panel %q counts per interval, not per second", p.Title)
			}
		}
	}
}

// Grafana's import screen offers a data source to pick only for the
// dashboard's __inputs: the dashboard asks for a Prometheus one there,
// which becomes the default of its datasource variable, through which
// every panel queries.
func TestDashboardImportAsksForADataSource(t *testing.T) {
	d := readDashboard(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Fatalf("__inputs = %+v, want one input DS_PROMETHEUS of type datasource, plugin prometheus: without it the import screen offers no data source", d.Inputs)
	}
	found := false
	for _, v := range d.Templating.List {
		if v.Name != "datasource" {
			continue
		}
		found = true
		if v.Type != "datasource" || v.Query != "prometheus" || v.Current.Value != "${DS_PROMETHEUS}" || v.Current.Text != "${DS_PROMETHEUS}" {
			t.Errorf("the datasource variable is %+v; want a prometheus datasource variable whose current value is ${DS_PROMETHEUS}, the source picked at import", v)
		}
	}
	if !found {
		t.Fatal("the dashboard has no datasource variable")
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q queries %q, not the datasource variable", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: %q queries %q, not the datasource variable", p.Title, tg.Expr, tg.Datasource.UID)
			}
		}
	}
}
