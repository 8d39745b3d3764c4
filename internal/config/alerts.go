package config

import (
	"maps"
	"slices"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/pgbus/pgbus/alerts"
	"github.com/pgbus/pgbus/internal/envref"
)

// Alerts configures the webhook that pgbus work and the workers of pgbus
// serve post alerts to (one process at a time: the elected one).
type Alerts struct {
	// Enabled turns alerts off when false; a block with a url is on.
	Enabled *bool `yaml:"enabled"`
	// URL receives the alerts; ${NAME} is replaced by the environment
	// variable NAME, and $${NAME} by a literal ${NAME} (see envref).
	URL string `yaml:"url"`
	// Headers are sent with every post; ${NAME} in a value is replaced by
	// the environment variable NAME, so that tokens stay out of the file.
	Headers map[string]string `yaml:"headers"`
	// Format is json (the default) or slack.
	Format string `yaml:"format"`
	// CheckInterval is how often the health verdict and the dead-letter
	// groups are checked.
	CheckInterval *Duration `yaml:"check_interval"`
	// A dead-letter group that grows by GrowthThreshold messages within
	// GrowthWindow is reported.
	GrowthThreshold *int      `yaml:"growth_threshold"`
	GrowthWindow    *Duration `yaml:"growth_window"`
	// Timeout bounds one post.
	Timeout *Duration `yaml:"timeout"`

	url     string            // URL, expanded
	headers map[string]string // Headers, expanded
	// unset is why URL or Headers could not be expanded (a variable not
	// set): it stops only the processes that send alerts (Ready), not the
	// commands that read the same file.
	unset error
}

// Ready reports why alerts that are On cannot be sent as configured: a
// ${NAME} whose variable is not set. nil on nil.
func (a *Alerts) Ready() error {
	if a == nil {
		return nil
	}
	return a.unset
}

// On reports whether alerts are configured and not turned off; false on
// nil.
func (a *Alerts) On() bool {
	return a != nil && a.URL != "" && (a.Enabled == nil || *a.Enabled)
}

// Config is the notifier's configuration, with ${NAME} expanded; call it
// only on alerts that are On.
func (a *Alerts) Config() alerts.Config {
	c := alerts.Config{URL: a.url, Headers: maps.Clone(a.headers), Format: a.Format}
	if a.CheckInterval != nil {
		c.CheckInterval = a.CheckInterval.D()
	}
	if a.GrowthThreshold != nil {
		c.GrowthThreshold = int64(*a.GrowthThreshold)
	}
	if a.GrowthWindow != nil {
		c.GrowthWindow = a.GrowthWindow.D()
	}
	if a.Timeout != nil {
		c.Timeout = a.Timeout.D()
	}
	return c
}

// checkAlerts validates the alerts block and expands its ${NAME}s.
func (f *File) checkAlerts() error {
	a := f.Alerts
	if a == nil {
		return nil
	}
	if err := alerts.CheckFormat(a.Format); err != nil {
		return f.Errorf("alerts.format", "%v", err)
	}
	if tag, ok := f.tags["alerts.growth_threshold"]; ok && tag != "!!int" && tag != "!!null" {
		return f.Errorf("alerts.growth_threshold", "%q is not a whole number", f.values["alerts.growth_threshold"])
	}
	if a.URL == "" && (a.Enabled == nil || *a.Enabled) {
		return f.Errorf("alerts.url", "missing; give the webhook's URL, or set alerts.enabled: false")
	}
	for _, r := range []struct {
		key      string
		d        *Duration
		min, max time.Duration
		rng      string
	}{
		{"alerts.check_interval", a.CheckInterval, time.Second, time.Hour, "1s..1h"},
		{"alerts.growth_window", a.GrowthWindow, 10 * time.Second, 7 * 24 * time.Hour, "10s..168h"},
		{"alerts.timeout", a.Timeout, time.Second, 5 * time.Minute, "1s..5m"},
	} {
		if r.d != nil && (r.d.D() < r.min || r.d.D() > r.max) {
			return f.Errorf(r.key, "%s is out of range %s", r.d, r.rng)
		}
	}
	if n := a.GrowthThreshold; n != nil && (*n < 1 || *n > 1_000_000_000) {
		return f.Errorf("alerts.growth_threshold", "%d is out of range 1..1000000000", *n)
	}
	for _, name := range slices.Sorted(maps.Keys(a.Headers)) {
		if !httpguts.ValidHeaderFieldName(name) {
			return f.Errorf("alerts.headers."+name, "%q is not a header name; use letters, digits and -, such as Authorization", name)
		}
	}
	if !a.On() {
		return nil
	}
	// A value goes into the url as it is: one that changes its structure
	// is refused, as in a handler's url (envref.CheckURLValues).
	u, vars, err := envref.Expand(a.URL)
	if envref.IsUnset(err) {
		if err := envref.Check(a.URL); err != nil {
			return f.Errorf("alerts.url", "%v", err)
		}
		a.unset = f.Errorf("alerts.url", "%v", err)
	} else if err != nil {
		return f.Errorf("alerts.url", "%v", err)
	} else if err := alerts.CheckURL(u); err != nil {
		return f.Errorf("alerts.url", "%v", err)
	} else if err := envref.CheckURLValues(a.URL, vars); err != nil {
		return f.Errorf("alerts.url", "%v", err)
	}
	a.url, a.headers = u, map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(a.Headers)) {
		// The parent key, and the header's name in the reason: a reason
		// after "...Authorization: " would read as a credential, and its
		// first word be redacted from the error.
		v, _, err := envref.Expand(a.Headers[name])
		switch {
		case envref.IsUnset(err):
			if err := envref.Check(a.Headers[name]); err != nil {
				return f.Errorf("alerts.headers", "in header %s, %v", name, err)
			}
			if a.unset == nil {
				a.unset = f.Errorf("alerts.headers", "header %s %v", name, err)
			}
		case err != nil:
			return f.Errorf("alerts.headers", "in header %s, %v", name, err)
		case !httpguts.ValidHeaderFieldValue(v):
			return f.Errorf("alerts.headers", "in header %s, the value holds a control character (a line break, ESC, DEL, ...), which a header cannot carry; remove it (a tab is allowed)", name)
		}
		a.headers[name] = v
	}
	return nil
}
