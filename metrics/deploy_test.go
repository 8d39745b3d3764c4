package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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
