package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Defaults of Config.
const (
	DefaultCheckInterval   = 30 * time.Second
	DefaultGrowthThreshold = 100
	DefaultGrowthWindow    = 10 * time.Minute
	DefaultTimeout         = 10 * time.Second
	DefaultQueueSize       = 100
	DefaultRetryBackoff    = time.Second
	DefaultRetryBackoffMax = time.Minute
	DefaultMaxAttempts     = 10
)

// Config configures a Notifier. Zero values take the defaults.
type Config struct {
	// URL receives each alert as a POST.
	URL string
	// Headers are sent with every post (an Authorization token, say).
	Headers map[string]string
	// Format of the body: FormatJSON (default) or FormatSlack.
	Format string
	// CheckInterval is how often the health verdict and the dead-letter
	// groups are read. Default DefaultCheckInterval.
	CheckInterval time.Duration
	// A group that grows by GrowthThreshold messages within GrowthWindow
	// is reported; a group is reported at most once per GrowthWindow, and
	// what it gains meanwhile is reported when that window ends, if it
	// reaches GrowthThreshold.
	GrowthThreshold int64
	GrowthWindow    time.Duration
	// Timeout bounds one post. Default DefaultTimeout.
	Timeout time.Duration
	// QueueSize bounds the alerts waiting to be sent; when full, the
	// oldest is dropped. Default DefaultQueueSize.
	QueueSize int
	// A failed post is retried after RetryBackoff, doubling up to
	// RetryBackoffMax, or after the receiver's Retry-After when longer
	// (up to 15 minutes), MaxAttempts times in all.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
	MaxAttempts     int
	Logger          *slog.Logger
	// Client posts the alerts. Default: a client of its own. Redirects
	// are not followed unless its CheckRedirect says how: a webhook that
	// answers with one is told of as refusing the alert.
	Client *http.Client
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.CheckInterval, DefaultCheckInterval)
	def(&c.GrowthWindow, DefaultGrowthWindow)
	def(&c.Timeout, DefaultTimeout)
	def(&c.RetryBackoff, DefaultRetryBackoff)
	def(&c.RetryBackoffMax, DefaultRetryBackoffMax)
	if c.GrowthThreshold <= 0 {
		c.GrowthThreshold = DefaultGrowthThreshold
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Format == "" {
		c.Format = FormatJSON
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	client := http.Client{}
	if c.Client != nil {
		client = *c.Client
	}
	if client.CheckRedirect == nil {
		client.CheckRedirect = noRedirect
	}
	c.Client = &client
	return c
}

// noRedirect keeps a post from following a redirect: a 301, 302 or 303
// would turn it into a GET without the alert, which the next address
// answers as if it were delivered, and any of them would send the alert
// and Headers (a token) to an address the configuration does not name.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// CheckURL checks a webhook URL: absolute, http or https, with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("is not an absolute http:// or https:// URL; give the webhook's full address, such as https://hooks.example.com/pgbus")
	}
	return nil
}

// CheckFormat checks a body format.
func CheckFormat(f string) error {
	if f != "" && f != FormatJSON && f != FormatSlack {
		return fmt.Errorf("%q is not a format; use %s (the alert as JSON) or %s ({\"text\": ...})", f, FormatJSON, FormatSlack)
	}
	return nil
}

// Notifier checks, in one elected process at a time, what needs a person
// and posts alerts about it.
type Notifier struct {
	st      *store.Store
	svc     *ops.Service
	cfg     Config
	log     *slog.Logger
	sender  *sender
	watcher *Watcher
	now     func() time.Time
	checks  atomic.Int64
	// partial is set while the summary lists only the largest groups, so
	// that saying so is logged once, not at every check.
	partial bool
	// outage is the UNREACHABLE verdict this process reported, until it
	// reports the database's return (reportUnreachable).
	outage *ops.Health
}

// CheckInterval is how often the elected process checks.
func (n *Notifier) CheckInterval() time.Duration { return n.cfg.CheckInterval }

// Checks counts the checks this Notifier ran as the elected process.
func (n *Notifier) Checks() int64 { return n.checks.Load() }

// New returns a Notifier reading through svc and elected over st, posting
// to cfg.URL; it reads nothing until Run. It refuses a bad URL or format,
// and a nil store or service, with an error wrapping ops.ErrInvalid: Run
// would have nothing to be elected over or to check through.
func New(st *store.Store, svc *ops.Service, cfg Config) (*Notifier, error) {
	cfg = cfg.withDefaults()
	if err := CheckURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("alerts: webhook URL %w", err)
	}
	if err := CheckFormat(cfg.Format); err != nil {
		return nil, fmt.Errorf("alerts: body format %w", err)
	}
	if st == nil {
		return nil, fmt.Errorf("%w: alerts.New needs a store: open one with store.Open", ops.ErrInvalid)
	}
	if svc == nil {
		return nil, fmt.Errorf("%w: alerts.New needs a service: make one with ops.New", ops.ErrInvalid)
	}
	s := newSender(cfg)
	s.record = st.RecordAlertCheck
	return &Notifier{st: st, svc: svc, cfg: cfg, log: cfg.Logger, sender: s, now: st.Now}, nil // the clock the times it compares were written by
}

// Run checks at each interval until ctx ends, while this process is the
// elected one; the others wait their turn, trying at each interval. A
// process newly elected goes on from the last check recorded, the last
// whose alerts were all delivered (see newWatcher), so that an alert is
// delivered at least once across a stop or a crash. Alerts are posted, and
// checks recorded, from a goroutine of their own; Run returns once both
// have stopped. A Store closed while Run runs (Store.Close) stops it as
// ctx would: every check would fail from then on.
func (n *Notifier) Run(parent context.Context) {
	ctx, stop := context.WithCancel(parent)
	defer stop()
	go func() {
		select {
		case <-n.st.Closed():
			n.log.Warn("pgbus alerts: the store was closed; alerting stopped. Close the store only after Run returns")
			stop()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { n.sender.run(ctx) })
	var lease *store.Lease
	defer func() {
		if lease != nil {
			lease.Release(ctx)
		}
	}()
	t := time.NewTicker(n.cfg.CheckInterval)
	defer t.Stop()
	for {
		lease = n.check(ctx, lease)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// check runs one check when this process leads, and returns the lease it
// holds after.
func (n *Notifier) check(ctx context.Context, lease *store.Lease) *store.Lease {
	if lease != nil {
		if err := lease.Check(ctx); err != nil {
			if ctx.Err() == nil {
				n.log.Warn("pgbus alerts: lost the election of the alerting process; trying again", "err", err)
				n.reportUnreachable(ctx)
			}
			lease.Release(ctx)
			lease = nil
		}
	}
	if lease == nil {
		l, err := n.st.TryLeadRenewing(ctx, store.ElectionAlerts)
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("pgbus alerts: could not take part in the election of the alerting process; trying again at the next check", "err", err)
			}
			return nil
		}
		if l == nil {
			n.reportReturn(ctx) // another process leads: the database answers
			return nil
		}
		lease = l
		n.watcher = nil
	}
	// The check's time is taken before anything is read, so that what
	// dies while it reads is after it for the process elected next
	// (store.AlertCheckTime says how).
	now := n.now()
	checkedAt, err := n.st.AlertCheckTime(ctx)
	if err != nil {
		checkedAt = now
	}
	if n.watcher == nil {
		n.sender.restart()
		n.watcher = n.newWatcher(ctx, checkedAt)
		if n.outage != nil {
			// The outage this process reported is the verdict the check
			// changes, whatever the last check recorded said.
			n.watcher.observeVerdict(*n.outage)
		}
	}
	h, err := n.svc.Health(ctx)
	if err == nil {
		var sum ops.DLQSummary
		sum, err = n.svc.DLQSummary(ctx, ops.DLQSummaryRequest{All: true})
		if err == nil {
			n.notePartial(sum)
			var a *Alert
			if events := n.watcher.Observe(now, h, sum); len(events) > 0 {
				a = &Alert{Source: "pgbus", Status: h.Status, At: now.UTC(), Events: events, Text: Text(events)}
			}
			// Recorded by the sender once the alert is delivered: recorded
			// now, an alert that never arrives would be taken as sent by
			// the process elected next.
			n.sender.add(a, &store.AlertCheck{At: checkedAt, Status: h.Status, Reasons: alertReasons(h)})
			n.outage = nil
		}
	}
	n.checks.Add(1)
	if err != nil && ctx.Err() == nil {
		n.log.Warn("pgbus alerts: check failed; trying again at the next", "err", err)
		if errors.Is(err, ops.ErrUnavailable) {
			n.reportUnreachable(ctx)
		}
	}
	return lease
}

// reportUnreachable alerts, from the process that sent the alerts, that
// the database does not answer, once an outage: while it is down no
// process can be elected, so no check would say so, and a team that
// watches only the webhook heard nothing. The verdict is
// HealthOrUnreachable's (UNREACHABLE, with the error); a blip that the
// health check no longer meets reports nothing. The return is reported as
// the change of that verdict, by the next check this process makes or,
// if another process is elected first, by reportReturn.
func (n *Notifier) reportUnreachable(ctx context.Context) {
	if n.watcher == nil || n.outage != nil {
		return
	}
	h, err := n.svc.HealthOrUnreachable(ctx)
	if err != nil || h.Status != ops.HealthUnreachable {
		return
	}
	n.outage = &h
	n.post(n.watcher.observeVerdict(h), h.Status)
}

// reportReturn alerts that the database answers again, with its verdict,
// when this process reported it unreachable and another process was
// elected since: that process goes on from the last check recorded, from
// before the outage, and would not report the return.
func (n *Notifier) reportReturn(ctx context.Context) {
	if n.outage == nil || n.watcher == nil {
		return
	}
	h, err := n.svc.Health(ctx)
	if err != nil {
		return
	}
	n.outage = nil
	n.post(n.watcher.observeVerdict(h), h.Status)
}

// post queues an alert of events outside a check: none is recorded, as
// no check was.
func (n *Notifier) post(events []Event, status string) {
	if len(events) > 0 {
		n.sender.add(&Alert{Source: "pgbus", Status: status, At: n.now().UTC(), Events: events, Text: Text(events)}, nil)
	}
}

// notePartial logs, once while it lasts, that the summary lists only the
// largest groups: a group outside them is not watched until it grows among
// them.
func (n *Notifier) notePartial(sum ops.DLQSummary) {
	if sum.Truncated && !n.partial {
		n.log.Warn("pgbus alerts: the dead-letter groups are too many to watch all: only the largest are; a new or growing group outside them is not reported until it grows among them. Retry or discard the groups that are done with (pgbus dlq summary lists them)",
			"watched", len(sum.Groups), "groups", sum.TotalGroups)
	}
	n.partial = sum.Truncated
}

// newWatcher is the Watcher of a process just elected, at its first check
// (at, on the database's clock): it goes on from the last check recorded,
// by whichever process it was, or else takes what it sees as its baseline.
// Going on, it counts the messages each group gained since that check
// (within the growth window), read before the check's own reads so that
// nothing dying between them counts twice. That count reads the DLQs'
// messages of the time, once per election.
func (n *Notifier) newWatcher(ctx context.Context, at time.Time) *Watcher {
	w := NewWatcher(n.cfg.GrowthThreshold, n.cfg.GrowthWindow)
	last, err := n.st.LastAlertCheck(ctx)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
			n.log.Warn("pgbus alerts: could not read the last check", "err", err)
		}
		n.log.Info("pgbus alerts: this process sends the alerts; what it sees at its first check is the baseline", "every", n.cfg.CheckInterval)
		return w
	}
	h := Handover{Last: last.At, Status: last.Status, From: last.At}
	for _, r := range last.Reasons {
		h.Reasons = append(h.Reasons, ops.ReasonKey(r))
	}
	if start := at.Add(-n.cfg.GrowthWindow); start.After(h.From) {
		h.From = start
	}
	recent, err := n.svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Since: h.From.UTC().Format(time.RFC3339Nano)}, All: true})
	if err == nil {
		h.Recent = recent.Groups
	} else if ctx.Err() == nil {
		n.log.Warn("pgbus alerts: could not count what died since the last check; growth counts from this check", "err", err)
		h.From = time.Time{}
	}
	w.Resume(h)
	n.log.Info("pgbus alerts: this process sends the alerts; it goes on from the last check", "last_check", last.At.UTC(), "last_health", last.Status,
		"groups_dead_since", len(h.Recent), "every", n.cfg.CheckInterval)
	return w
}

// alertReasons are the reasons of h as a check records them: after the
// check, each was reported.
func alertReasons(h ops.Health) []store.AlertReason {
	out := make([]store.AlertReason, 0, len(h.Reasons))
	for _, k := range reasonKeys(h) {
		out = append(out, store.AlertReason(k))
	}
	return out
}

// Text says what events report in a few lines, for a person.
func Text(events []Event) string { return text(events, func(s string) string { return s }) }

// text is Text with the words taken from the system (messages, queues,
// kinds, error classes) passed through esc, and pgbus's own words as they
// are: a chat's markup in those words is shown, not followed.
func text(events []Event, esc func(string) string) string {
	var lines []string
	for _, e := range events {
		switch e.Type {
		case EventHealthChanged:
			fresh := 0
			for _, r := range e.Reasons {
				if r.New {
					fresh++
				}
			}
			line := "pgbus health is " + e.Status
			switch e.PreviousStatus {
			case "":
			case e.Status:
				line = "pgbus health is still " + e.Status + ", with " + plural(fresh, "a new reason", "new reasons")
			default:
				line += " (was " + e.PreviousStatus + ")"
			}
			for _, r := range e.Reasons {
				// The new reasons are marked beside the others, which a
				// person was told of before.
				mark := ""
				if r.New && fresh < len(e.Reasons) {
					mark = "new: "
				}
				line += "\n  - " + mark + esc(r.Message)
			}
			lines = append(lines, line)
		case EventGroupNew:
			lines = append(lines, fmt.Sprintf("pgbus: new dead-letter group on %s: %s, %d dead", esc(e.Group.Queue), describe(e.Group, esc), e.Group.Count))
		case EventGroupGrowing:
			lines = append(lines, fmt.Sprintf("pgbus: dead-letter group on %s grew by %d in %s: %s, %d dead", esc(e.Group.Queue), e.Growth,
				time.Duration(e.WindowSeconds*float64(time.Second)), describe(e.Group, esc), e.Group.Count))
		}
	}
	return strings.Join(lines, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func describe(g *Group, esc func(string) string) string {
	kind, class := esc(g.Kind), esc(g.ErrorClass)
	if kind == "" {
		kind = "(none)"
	}
	if class == "" {
		class = "(no failure recorded)"
	}
	s := "kind " + kind + ", error class " + class
	if g.Error != "" {
		s += `, e.g. "` + esc(g.Error) + `"`
	}
	if g.RetriesFromDLQ > 0 {
		s += fmt.Sprintf("; it came back: its newest message died again after %d %s", g.RetriesFromDLQ, plural(g.RetriesFromDLQ, "DLQ retry", "DLQ retries"))
	}
	return s
}
