package ops

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// Health statuses, from best to worst.
const (
	HealthOK       = "OK"
	HealthDegraded = "DEGRADED"
	HealthStalled  = "STALLED"
	// HealthUnreachable is the verdict of HealthOrUnreachable when the
	// database does not answer: nothing is known of the queues.
	HealthUnreachable = "UNREACHABLE"
	// HealthNotice is the level of a reason that leaves the verdict as it
	// is, never a verdict: something to act on when convenient while
	// every queue works, such as a newer pgbus having migrated the
	// database. A verdict of OK may list such reasons.
	HealthNotice = "NOTICE"
)

// schemaRecheck is how long health trusts the schema version it read:
// a newer pgbus that migrates while this process runs (a rolling deploy)
// shows within it, and the health calls between (probes, the dashboard's
// refresh every few seconds) read nothing more for it.
const schemaRecheck = time.Minute

// Health is a one-look verdict on the whole system.
type Health struct {
	Status  string         `json:"status" jsonschema:"enum=OK,enum=DEGRADED,enum=STALLED,enum=UNREACHABLE"`
	Reasons []HealthReason `json:"reasons"`
	// Queues, Backlog, DeadMessages and Workers are the counts the check
	// read; nil when it could not read them (UNREACHABLE,
	// health_check_slow, or the rest of a verdict of stopped workers
	// unread), as they are then unknown, not 0.
	Queues  *int   `json:"queues,omitempty" jsonschema_description:"Queues; absent when the check could not count them (UNREACHABLE, health_check_slow)"`
	Backlog *int64 `json:"backlog,omitempty" jsonschema_description:"Messages ready to run across all queues; absent when the check could not count them"`
	// BacklogEstimated says Backlog adds up an estimate: a queue too large
	// to count at each read (QueueStats.CountsEstimated).
	BacklogEstimated bool      `json:"backlog_estimated,omitempty" jsonschema_description:"True when backlog adds up the estimate of a queue too large to count at each read (counts_estimated in its stats)"`
	DeadMessages     *int64    `json:"dead_messages,omitempty" jsonschema_description:"Messages waiting in dead-letter queues; absent when the check could not count them"`
	Workers          *int      `json:"workers_running,omitempty" jsonschema_description:"Worker processes running; absent when the check could not count them"`
	CheckedAt        time.Time `json:"checked_at"`
	// Payloads is what the server shows of payloads, so that an agent knows
	// before asking.
	Payloads PayloadPolicy `json:"payload_policy" jsonschema_description:"What this server shows of message payloads."`
	// Next is the one call that explains every new dead letter at once,
	// when several queues have them; and, when the response bound left
	// reasons out, the health check of each of the first codes left out.
	Next []Hint `json:"next,omitempty" jsonschema_description:"When several queues have new dead letters: the one summary that groups all of them by cause. When reasons were left out: the health check by code that lists them, page by page."`
	// Omitted counts the reasons left out: past the response bound
	// (Health), or past an overview's MaxReasons. Status and the totals
	// count them.
	Omitted int `json:"omitted,omitempty" jsonschema_description:"Reasons left out so that the response stays under 16,000 characters: NOTICE ones, then DEGRADED ones, after every STALLED one. status counts them."`
	// NextCursor is, when a HealthRequest's Code listed some of its
	// reasons, where the next page of them starts.
	NextCursor string   `json:"next_cursor,omitempty" jsonschema_description:"With code: pass as cursor, with the same code, for the reasons left out. Absent on the last page."`
	Notes      []string `json:"notes,omitempty" jsonschema_description:"What was left out."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// HealthReason is one thing that is not OK, and what to look at next.
type HealthReason struct {
	// Status is the reason's level: NOTICE leaves the verdict as it is.
	Status  string `json:"status" jsonschema:"enum=DEGRADED,enum=STALLED,enum=UNREACHABLE,enum=NOTICE" jsonschema_description:"The reason's level: STALLED and DEGRADED make the verdict; NOTICE leaves it as it is (something to act on when convenient, while the queues work)."`
	Code    string `json:"code" jsonschema:"enum=database_unreachable,enum=backlog_not_draining,enum=backlog_growing_old,enum=no_workers,enum=stale_workers,enum=dead_letters_growing,enum=queue_paused,enum=circuit_open,enum=dlq_of_dropped_queue,enum=workers_of_dropped_queue,enum=queue_tables_missing,enum=schema_newer,enum=standby,enum=health_check_slow,enum=old_transaction,enum=workers_stopped,enum=handlers_stuck"`
	Queue   string `json:"queue,omitempty"`
	Message string `json:"message"`
	// Workers tells no_workers apart: never served, or served once.
	Workers string `json:"workers,omitempty" jsonschema:"enum=never,enum=stopped,enum=stale" jsonschema_description:"For no_workers: never (no worker process served the queue in the last 24 hours), stopped (those that did shut down) or stale (one that did stopped heartbeating: crashed or hung)."`
	Next    []Hint `json:"next,omitempty" jsonschema_description:"Where to look next."`
	// RateLimited, for circuit_open, says the breaker's last failure was
	// its downstream limiting its rate or concurrency, and which setting
	// bounds the requests in flight.
	RateLimited *RateLimited `json:"rate_limited,omitempty" jsonschema_description:"For circuit_open: the breaker's last failure was the downstream limiting its rate or concurrency (429, or 503 with a Retry-After); the jobs it held, released when it closes, open it again while more run at once than the downstream takes, until the setting named bounds the requests in flight."`
	// subject is what else the reason is about, when its code and queue
	// do not tell it apart: the breaker of circuit_open, since several
	// breakers can hold up one queue.
	subject string
}

// ReasonKey tells a reason apart from the others of a verdict, and stays
// the same from one check to the next while its cause lasts (its message
// holds counts and ages that change): its code, its queue, and what else it
// is about (the breaker of circuit_open).
type ReasonKey struct {
	Code    string
	Queue   string
	Subject string
}

// Key returns what tells r apart.
func (r HealthReason) Key() ReasonKey {
	return ReasonKey{Code: r.Code, Queue: r.Queue, Subject: r.subject}
}

// Health checks queues and workers: STALLED when ready work is not being
// done (no running worker serves a queue pgbus manages, store.ManagedQueues,
// with ready or retrying messages, a
// backlog that does not drain, the workers this process runs stopped on an
// error: workers_stopped, see Options.OwnWorkers, and those of any
// process whose start failed on an error, the last to serve a queue no
// running worker serves: workers_stopped on that queue, a NOTICE when the
// queue does not exist), DEGRADED when something needs a look (stale workers, new dead
// letters, paused queues, an aging backlog, an open circuit breaker that a
// running handler uses, dead messages left by a dropped queue, running
// workers waiting for their dropped queue, a queue whose tables are gone
// while pgbus's settings list it: queue_tables_missing), OK otherwise. A NOTICE reason
// leaves the verdict as it is: a newer pgbus migrated the database, which
// this one works on without what the newer versions added (schema_newer),
// or the dead letters of the last hour were all retried or discarded since
// (dead_letters_growing with an empty DLQ).
// STALLED reasons are listed first, NOTICE ones last; those past the
// response bound are left out and counted.
func (s *Service) Health(ctx context.Context) (_ Health, err error) {
	return s.health(ctx, HealthRequest{})
}

// HealthRequest narrows the reasons of a verdict to those of one code, a
// page at a time: those a verdict too long for its response left out.
// The verdict and its totals still count every reason.
type HealthRequest struct {
	// Code lists only the reasons of this code, in the order of their
	// queues; "" lists every reason.
	Code string
	// Cursor is the NextCursor of the page before, with the same Code;
	// "" for the first page.
	Cursor string
}

// healthCodes are the codes of HealthReason, as its schema lists them.
var healthCodes = func() []string {
	f, _ := reflect.TypeFor[HealthReason]().FieldByName("Code")
	var codes []string
	for part := range strings.SplitSeq(f.Tag.Get("jsonschema"), ",") {
		if c, ok := strings.CutPrefix(part, "enum="); ok {
			codes = append(codes, c)
		}
	}
	return codes
}()

// check refuses a request health cannot answer, and returns where its
// page starts: after the reason of that queue and subject.
func (r HealthRequest) check() (after ReasonKey, err error) {
	if r.Code != "" && !slices.Contains(healthCodes, r.Code) {
		return after, invalidf("health: no reason has code %q: give one of %s, or none for every reason", r.Code, strings.Join(healthCodes, ", "))
	}
	if r.Cursor == "" {
		return after, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(r.Cursor)
	queue, subject, ok := strings.Cut(string(raw), "\x00")
	if err != nil || !ok || r.Code == "" {
		return after, invalidf("health: cursor %q is no next_cursor of the reasons of a code: pass it with the code it was given with, or leave it out for the first page", r.Cursor)
	}
	return ReasonKey{Code: r.Code, Queue: queue, Subject: subject}, nil
}

// healthCursor is the cursor of the page after the one ending with r.
func healthCursor(r HealthReason) string {
	return base64.RawURLEncoding.EncodeToString([]byte(r.Queue + "\x00" + r.subject))
}

func (s *Service) health(ctx context.Context, req HealthRequest) (_ Health, err error) {
	after, err := req.check()
	if err != nil {
		return Health{}, err
	}
	ctx, end, err := s.enter(ctx, "Health", reads)
	if err != nil {
		return Health{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	h, err := retryVanished(func() (Health, error) {
		stats, err := s.store.QueueStats(ctx, "", store.QueueStatsOptions{})
		if err != nil {
			return Health{}, err
		}
		return s.healthOf(ctx, stats, nil)
	})
	if err != nil {
		return h, err
	}
	if req.Code != "" {
		return s.healthPage(h, req, after), nil
	}
	rest := h
	rest.Reasons, rest.Notes = nil, []string{strings.Repeat("x", 350)}
	for range maxCutCodeHints {
		rest.Next = append(rest.Next, cutCodeHint(strings.Repeat("x", 40), 1000))
	}
	in := reasonsInTurns(h.Reasons)
	kept := slices.Clone(in)
	if n := fitList(s.opts.Bounds, &kept, rest); n > 0 {
		left := map[string]int{}
		for _, r := range h.Reasons {
			left[r.Code]++
		}
		for _, r := range kept {
			left[r.Code]--
		}
		var parts []string
		for _, code := range slices.Sorted(maps.Keys(left)) {
			if left[code] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", code, left[code]))
			}
		}
		// The codes left out, as the list ranks them (STALLED first): the
		// health check of each lists its reasons page by page.
		var codes []string
		for _, r := range in[len(kept):] {
			if !slices.Contains(codes, r.Code) && len(codes) < maxCutCodeHints {
				codes = append(codes, r.Code)
				h.Next = append(h.Next, cutCodeHint(r.Code, left[r.Code]))
			}
		}
		// Listed in the order of the verdict, the kinds mixed again.
		h.Reasons = slices.DeleteFunc(h.Reasons, func(r HealthReason) bool { return !slices.ContainsFunc(kept, r.same) })
		h.Omitted = n
		h.Notes, h.Asks = nil, nil
		askOp(&h.Notes, &h.Asks, AskAll, OpHealth, fmt.Sprintf("%d of the %d reasons %s listed (STALLED ones first, each kind of reason in turn; left out: %s) so that the response stays under %d characters; "+
			"the health check by its code lists each kind's reasons page by page (the next steps name it for %s)",
			len(h.Reasons), len(h.Reasons)+n, plural.Of(len(h.Reasons), "is", "are"), strings.Join(parts, ", "), ResponseBudget, strings.Join(codes, ", ")))
	}
	return h, nil
}

// maxCutCodeHints bounds the health checks by code that a verdict cut by
// the response bound names as its next steps: those of the first codes
// it left out, as the list ranks them; its note counts every code.
const maxCutCodeHints = 3

// cutCodeHint is the health check of code, which lists the n reasons of
// it a verdict left out, page by page.
func cutCodeHint(code string, n int) Hint {
	return hint(OpHealth, fmt.Sprintf("lists the %d %s %s left out, page by page, each page giving the cursor of the next", n, code, plural.Of(n, "reason", "reasons")), "code", code)
}

// healthPage is h listing only the reasons of req.Code, in the order of
// their queues and subjects, from after on, as many as fit its response.
func (s *Service) healthPage(h Health, req HealthRequest, after ReasonKey) Health {
	var of []HealthReason
	for _, r := range h.Reasons {
		if r.Code == req.Code && (req.Cursor == "" || cmp.Or(cmp.Compare(r.Queue, after.Queue), cmp.Compare(r.subject, after.Subject)) > 0) {
			of = append(of, r)
		}
	}
	slices.SortStableFunc(of, func(a, b HealthReason) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.subject, b.subject))
	})
	h.Reasons = of
	rest := h
	rest.Reasons, rest.NextCursor, rest.Notes = nil, strings.Repeat("x", 100), append(slices.Clone(h.Notes), strings.Repeat("x", 300))
	if n := fitList(s.opts.Bounds, &h.Reasons, rest); n > 0 && len(h.Reasons) > 0 {
		h.Omitted = n
		h.NextCursor = healthCursor(h.Reasons[len(h.Reasons)-1])
		ask(&h.Notes, &h.Asks, AskNextPage, fmt.Sprintf("%d of the %d %s reasons from here %s listed so that the response stays under %d characters",
			len(h.Reasons), len(h.Reasons)+n, req.Code, plural.Of(len(h.Reasons), "is", "are"), ResponseBudget), 0)
	}
	return h
}

// reasonsInTurns orders reasons for a list the response bound may cut:
// level by level, STALLED first, and within a level each code in turn, so
// that three hundred queues with new dead letters do not crowd out the
// one queue dropped with its DLQ full.
func reasonsInTurns(reasons []HealthReason) []HealthReason {
	var out []HealthReason
	var levels []string // as they come: the verdict lists STALLED first
	for _, r := range reasons {
		if !slices.Contains(levels, r.Status) {
			levels = append(levels, r.Status)
		}
	}
	for _, level := range levels {
		var of []HealthReason
		byCode := map[string][]HealthReason{}
		var codes []string
		for _, r := range reasons {
			if r.Status != level {
				continue
			}
			if _, seen := byCode[r.Code]; !seen {
				codes = append(codes, r.Code)
			}
			byCode[r.Code] = append(byCode[r.Code], r)
			of = append(of, r)
		}
		lists := make([][]HealthReason, len(codes))
		for i, c := range codes {
			lists[i] = byCode[c]
		}
		out = append(out, inTurns(of, HealthReason.key, lists...)...)
	}
	return out
}

// key tells a reason from the others of a verdict.
func (r HealthReason) key() string {
	return r.Status + "\x00" + r.Code + "\x00" + r.Queue + "\x00" + r.Message
}

// same reports whether o is r.
func (r HealthReason) same(o HealthReason) bool { return r.key() == o.key() }

// HealthOrUnreachable is Health for a caller that needs a verdict
// whatever the database does, as an agent's first call does: a database
// that does not answer (down, restarting, taking no connections now) is
// the verdict UNREACHABLE, its one reason database_unreachable saying why
// and to check again in a moment, rather than an error that leaves the
// caller to guess whether pgbus or the database is at fault. A database
// where another session's lock kept the check from reading its tables in
// time is DEGRADED instead, its one reason health_check_slow naming the
// session. It answers within HealthCheckTimeout and a few seconds more,
// whatever the call timeout (HealthOrSlow). Other errors stay errors, but while the workers this process
// runs are stopped (workers_stopped, which either verdict lists too).
func (s *Service) HealthOrUnreachable(ctx context.Context) (Health, error) {
	return s.HealthOf(ctx, HealthRequest{})
}

// HealthOf is HealthOrUnreachable listing the reasons req asks for: those
// of one code, a page at a time. A request it cannot answer (a code no
// reason has, a cursor it did not give) is refused with ErrInvalid.
func (s *Service) HealthOf(ctx context.Context, req HealthRequest) (Health, error) {
	if _, err := req.check(); err != nil {
		return Health{}, err
	}
	h, err := s.healthOrSlow(ctx, req)
	if err == nil || !errors.Is(err, ErrUnavailable) {
		return h, err
	}
	msg, _ := RedactText(err.Error())
	if advice := DatabaseAdvice(err); advice != "" && !strings.Contains(msg, advice) {
		msg += "; " + advice
	}
	next := []Hint{hint(OpHealth, "check again in a moment: the verdict on the queues comes back once the database answers")}
	var held *Error
	if !s.opts.Gate.Ready() && errors.As(err, &held) {
		// The steps of a process that readies its database, but for the
		// health check itself (the migration of a schema too old).
		next = append(next, slices.DeleteFunc(slices.Clone(held.Hints), func(h Hint) bool { return h.Op == OpHealth })...)
	}
	h = Health{Status: HealthUnreachable, CheckedAt: s.now().UTC(), Payloads: s.PayloadPolicy(),
		Reasons: []HealthReason{{Status: HealthUnreachable, Code: "database_unreachable", Message: msg, Next: next}}}
	s.withStoppedWorkers(&h)
	return h, nil
}

// DatabaseAdvice says what to check about err, the error of an operation
// on a database that could not be reached or used: the reason found, when
// it says so (PgBouncer cannot reach PostgreSQL, or has no server
// connection to give; a server that refuses this process), else, for a
// database that gave no answer in time, PostgreSQL and PgBouncer's pools.
// It is the advice HealthOrUnreachable's reason database_unreachable
// gives with the error, in words that name no host, user or database, for
// a front end that may not show the error itself (a probe served without
// a token). It returns "" when err carries no such advice.
func DatabaseAdvice(err error) string { return store.DatabaseAdvice(err) }

// OutOfFiles reports whether err, the error of an operation, is this
// process failing to open a connection for want of a file descriptor (a
// low ulimit -n): the database was not asked, and DatabaseAdvice says
// what limit to raise.
func OutOfFiles(err error) bool { return store.OutOfFiles(err) }

// DatabaseRefused reports whether err, the error of an operation, holds a
// connection the database (or a connection pooler in front of it)
// answered and refused at its login: a password changed since the process
// started, a role no longer let in, no connection left for the role or
// the database. The database answers, so it is not one that did not
// answer; DatabaseAdvice says what to do.
func DatabaseRefused(err error) bool { return store.Refused(err) }

// HealthOrSlow is Health for a caller that reports a database that does
// not answer as the error it is, but a verdict on one that answers: where
// another session's lock kept the check from reading the tables in time,
// the verdict is DEGRADED, its one reason health_check_slow naming the
// session and the statement that ends it (no outage: whoever waits for
// the database to come back would wait for nothing); so it is where the
// check waited for a connection while other calls held every one of the
// pool's, and a new connection was answered at once. While the workers
// this process runs are stopped on an error, any other error of the check
// is the verdict STALLED with their reason workers_stopped, the error in
// its notes: that reason is known without the read, which often failed
// for the same cause. Its database work is bounded by HealthCheckTimeout
// rather than the call timeout, when that is shorter: a database that
// does not answer within it fails as ErrUnavailable saying so and what to
// check, and one that answers a new connection at once, though the check
// took longer, is DEGRADED, health_check_slow.
func (s *Service) HealthOrSlow(ctx context.Context) (Health, error) {
	return s.healthOrSlow(ctx, HealthRequest{})
}

func (s *Service) healthOrSlow(ctx context.Context, req HealthRequest) (Health, error) {
	outer := ctx
	if s.usable(ctx, "HealthOrSlow") == nil {
		var end context.CancelFunc
		ctx, end = s.healthBound(ctx)
		defer end()
	}
	h, err := s.health(ctx, req)
	if err != nil && !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrLockWait) && !errors.Is(err, errPoolBusy) {
		if _, stopped := s.StoppedWorkers(); stopped && outer.Err() == nil {
			// The verdict that matters most is known without the read
			// that failed, which often failed for the same cause.
			msg, _ := RedactText(err.Error())
			h = Health{Status: HealthOK, Reasons: []HealthReason{}, CheckedAt: s.now().UTC(), Payloads: s.PayloadPolicy(),
				Notes: []string{"the rest of the verdict could not be read: " + msg}}
			s.withStoppedWorkers(&h)
			return h, nil
		}
	}
	if err == nil || !errors.Is(err, ErrLockWait) && !errors.Is(err, errPoolBusy) && !errors.Is(err, errCheckSlow) {
		return h, err
	}
	msg, _ := RedactText("the health check could not read the tables in time: " + err.Error())
	again := "check again once that session ends: the verdict on the queues comes back once the tables can be read"
	switch {
	case errors.Is(err, ErrLockWait):
	case errors.Is(err, errPoolBusy):
		again = "check again once fewer calls hold the pool's connections: the verdict on the queues comes back once the check gets one"
	default:
		again = "check again in a moment: the verdict on the queues comes back once the database reads them within the check's bound"
	}
	h = Health{Status: HealthDegraded, CheckedAt: s.now().UTC(), Payloads: s.PayloadPolicy(),
		Reasons: []HealthReason{{Status: HealthDegraded, Code: "health_check_slow", Message: msg,
			Next: []Hint{hint(OpHealth, again)}}}}
	s.withStoppedWorkers(&h)
	return h, nil
}

// StalledFor returns the STALLED reasons of h about the queues named:
// what a process that works those queues is failing at, where the rest
// of h is about other processes. Reasons name a queue with priority
// levels as the queue, as workers are given it. The reason that the
// workers of the process stopped (workers_stopped without a queue), which
// only the process they ran in reports, is always among them; that of
// another process's workers (workers_stopped on a queue) only for the
// queues named.
func (h Health) StalledFor(queues []string) []HealthReason {
	var out []HealthReason
	for _, r := range h.Reasons {
		if r.Status == HealthStalled && r.Code == "workers_stopped" && r.Queue == "" {
			out = append(out, r)
			continue
		}
		if r.Status != HealthStalled || r.Queue == "" {
			continue
		}
		if slices.Contains(queues, r.Queue) {
			out = append(out, r)
		}
	}
	return out
}

// Overview is the health verdict and the stats of every queue, from one
// read of the queues, so that the two agree.
type Overview struct {
	Health Health
	// Queues are those that most need an operator first (byAttention).
	// Their Archived and TotalSent are 0: the archives, which hold the
	// queues' history, are not counted for what probes and pages ask for
	// every few seconds (QueueStats counts them), and the queues are read
	// as the gauges are, many tables to a statement.
	Queues []QueueStats
	// QueuesOmitted counts the queues left out past MaxQueues, the last
	// in that order; Health's totals count them.
	QueuesOmitted int
	// QueuesFiltered counts the queues whose names do not contain
	// QueueNameContains: in neither Queues nor QueuesOmitted.
	QueuesFiltered int
	// QueueSet identifies the names of every queue, listed or not (those
	// dropped with dead messages left included): it changes when a queue
	// is created or dropped, and only then, so that a page that lists some
	// can tell that the others changed although their number did not.
	QueueSet string
}

// OverviewRequest bounds the lists of an overview, so that a page of
// hundreds of queues stays short; a bound of 0 lists everything.
type OverviewRequest struct {
	// MaxReasons lists at most that many health reasons, STALLED ones
	// first; Health.Omitted counts the others.
	MaxReasons int
	// MaxQueues lists at most that many queues, those that most need an
	// operator first; QueuesOmitted counts the others.
	MaxQueues int
	// QueueNameContains lists only the queues whose names contain it, in
	// any case, for a person looking for one among hundreds; "" lists
	// every queue.
	// The health verdict stays that of every queue.
	QueueNameContains string
	// Alive are the ids of worker processes the caller knows run, its
	// own: the verdict counts them running whatever their heartbeats say,
	// which a database that was down held back.
	Alive []string
}

// Check refuses a negative bound, and text no queue name can hold.
func (r OverviewRequest) Check() error {
	if r.MaxReasons < 0 || r.MaxQueues < 0 {
		return invalidf("an overview's bounds are 0 (list everything) or more, not %d reasons and %d queues", r.MaxReasons, r.MaxQueues)
	}
	for _, id := range r.Alive {
		if err := checkText("alive", id); err != nil {
			return err
		}
	}
	return checkText("queue_name_contains", r.QueueNameContains)
}

// Overview returns the health verdict and every queue's stats, for a page
// that shows both: the queues are read once. Its lists are those the
// request bounds, the worst first: the verdict's STALLED reasons, the
// queues with dead messages or failures, then those with a backlog or a
// pause. Unlike the health check's, its database work has the call
// timeout: the pages read every queue's stats with it, which a large
// install on a loaded database may take longer than HealthCheckTimeout
// for; the probes that use it bound it themselves.
func (s *Service) Overview(ctx context.Context, req OverviewRequest) (_ Overview, err error) {
	ctx, end, err := s.enter(ctx, "Overview", reads)
	if err != nil {
		return Overview{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return Overview{}, err
	}
	o, err := retryVanished(func() (Overview, error) {
		stats, err := s.store.QueueStats(ctx, "", store.QueueStatsOptions{})
		if err != nil {
			return Overview{}, err
		}
		h, err := s.healthOf(ctx, stats, req.Alive)
		return Overview{Health: h, Queues: queueStatsList(stats)}, err
	})
	if err != nil {
		return o, err
	}
	o.QueueSet = queueSet(o.Queues)
	if req.QueueNameContains != "" {
		n := len(o.Queues)
		// Names are lower case: ORDERS finds orders.
		want := strings.ToLower(req.QueueNameContains)
		o.Queues = slices.DeleteFunc(o.Queues, func(q QueueStats) bool { return !strings.Contains(q.Queue, want) })
		o.QueuesFiltered = n - len(o.Queues)
	}
	slices.SortStableFunc(o.Queues, byAttention)
	if n := len(o.Queues) - req.MaxQueues; req.MaxQueues > 0 && n > 0 {
		o.Queues, o.QueuesOmitted = o.Queues[:req.MaxQueues], n
	}
	if n := len(o.Health.Reasons) - req.MaxReasons; req.MaxReasons > 0 && n > 0 {
		o.Health.Reasons, o.Health.Omitted = o.Health.Reasons[:req.MaxReasons], n
		o.Health.Notes = append(o.Health.Notes, fmt.Sprintf("%d of the %d reasons %s listed, STALLED ones first", req.MaxReasons, req.MaxReasons+n, plural.Of(req.MaxReasons, "is", "are")))
	}
	return o, nil
}

// queueSet is the Overview's QueueSet of queues: a digest of their
// names, in byte order.
func queueSet(queues []QueueStats) string {
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = q.Queue
	}
	slices.Sort(names)
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// healthOf is the verdict on stats, the stats of every queue, and on the
// workers, those of ids alive counted running: STALLED reasons first.
func (s *Service) healthOf(ctx context.Context, stats []store.QueueStats, alive []string) (Health, error) {
	h := Health{Status: HealthOK, Reasons: []HealthReason{}, CheckedAt: s.now().UTC(), Payloads: s.PayloadPolicy()}
	workers, err := s.allWorkers(ctx)
	if err != nil {
		return h, err
	}
	workers = countAlive(workers, alive)
	h.Workers = &workers.Running
	if n := staleThatMatter(workers); n > 0 {
		h.add(HealthDegraded, "stale_workers", "", fmt.Sprintf("%s stopped sending heartbeats without shutting down (crashed or hung); %s messages return after %s visibility timeout", plural.Count(n, "worker process", "worker processes"), plural.Of(n, "its", "their"), plural.Of(n, "its", "their")),
			hint(OpWorkers, "shows which processes and when they were last seen"))
	}
	checkStuckHandlers(&h, workers)
	// Whether a queue is served counts the Ruby gem's processes too,
	// which work the queues of its database: the counts above are
	// pgbus's own.
	serving := s.withRuby(ctx, workers)
	breakers, err := s.store.ListBreakers(ctx, "")
	if err != nil {
		return h, err
	}
	for _, b := range breakers {
		checkBreaker(&h, b, s.heldBy(ctx, b), s.now(), func(q string) bool { return coverage(serving, q).Served() })
	}
	managed, err := s.store.ManagedQueues(ctx)
	if err != nil {
		return h, err
	}
	var queues int
	var backlog, dead int64
	h.Queues, h.Backlog, h.DeadMessages = &queues, &backlog, &dead
	for _, q := range stats {
		dead += q.DLQDepth
		if q.Dropped {
			s.checkDropped(&h, q)
			continue
		}
		queues++
		backlog += q.Visible
		h.BacklogEstimated = h.BacklogEstimated || q.Estimated
		s.checkQueue(&h, q, coverage(serving, q.Queue), managed.Manages(q.Queue))
	}
	s.checkServedDropped(ctx, &h, stats, workers)
	if err := s.checkTablesGone(ctx, &h); err != nil {
		return h, err
	}
	s.checkStoppedElsewhere(ctx, &h, serving, stats)
	schema, err := s.recordedSchema(ctx)
	if err != nil {
		return h, err
	}
	if schema.Newer() {
		h.add(HealthNotice, "schema_newer", "", fmt.Sprintf("a newer pgbus migrated this database to schema version %d; this pgbus has versions up to %d and keeps working on it, "+
			"changing nothing of the schema, but without what the newer versions added: upgrade this pgbus", schema.Version, schema.Known))
	}
	standby, err := s.checkStandby(ctx, &h)
	if err != nil {
		return h, err
	}
	if !standby {
		s.checkOldTransactions(ctx, &h)
	}
	if n := h.count("dead_letters_growing"); n > 1 {
		h.Next = []Hint{s.summaryHint(fmt.Sprintf("groups the dead letters of every queue, the %d whose dead letters grow among them, by cause in one call", n), "")}
	}
	s.withStoppedWorkers(&h)
	slices.SortStableFunc(h.Reasons, func(a, b HealthReason) int { return cmp.Compare(reasonRank[a.Status], reasonRank[b.Status]) })
	return h, nil
}

// verdictRank orders the verdicts from best to worst; UNREACHABLE, which
// knows nothing of the queues, is worst.
var verdictRank = map[string]int{HealthOK: 0, HealthDegraded: 1, HealthStalled: 2, HealthUnreachable: 3}

// HealthAtLeast reports whether the verdict status is level or worse, in
// the order OK, DEGRADED, STALLED, UNREACHABLE: what a check that alerts
// from level on asks. A level that is no verdict is met by none.
func HealthAtLeast(status, level string) bool {
	want, ok := verdictRank[level]
	return ok && verdictRank[status] >= want
}

// reasonRank orders the reasons of a verdict: STALLED ones first, NOTICE
// ones last.
var reasonRank = map[string]int{HealthStalled: 0, HealthDegraded: 1, HealthNotice: 2}

// recordedSchema returns the schema version the database records, read
// again when the last read is schemaRecheck old (or from a clock set
// back): health reports a newer pgbus's migration at little cost, and the
// read is one row of a table of a few.
func (s *Service) recordedSchema(ctx context.Context) (store.MigrationStatus, error) {
	now := s.now()
	s.schemaMu.Lock()
	st, at := s.schema, s.schemaAt
	s.schemaMu.Unlock()
	if !at.IsZero() && !now.Before(at) && now.Sub(at) < schemaRecheck {
		return st, nil
	}
	st, err := s.store.RecordedSchema(ctx)
	if err != nil {
		return st, err
	}
	s.schemaMu.Lock()
	s.schema, s.schemaAt = st, now
	s.schemaMu.Unlock()
	return st, nil
}

// checkDropped notes the dead messages left in the DLQ of a queue that was
// dropped (outside pgbus): to retry them the queue must be made again, as
// it was; to be rid of them, discarded, then purged from the archive.
func (s *Service) checkDropped(h *Health, q store.QueueStats) {
	h.add(HealthDegraded, "dlq_of_dropped_queue", q.Queue, fmt.Sprintf("queue %q was dropped but its DLQ %s holds %d dead %s", q.Queue, q.DLQ, q.DLQDepth, plural.Of(q.DLQDepth, "message", "messages")),
		hint(OpDLQSummary, "groups them by cause", "queue", q.Queue),
		recreateHint(q),
		hint(OpDLQDiscard, "previews discarding them to the DLQ's archive, where a purge deletes them for good", "queue", q.Queue,
			"limit", int(min(q.DLQDepth, DefaultBulkLimit)), "dry_run", true))
}

// recreateHint is the step that creates a dropped queue again, with its
// priority levels, so that the dead messages its DLQ holds can be retried:
// health's for the queue and the view's of one of its messages alike.
func recreateHint(q store.QueueStats) Hint {
	if q.Priorities > 0 {
		return hint(OpQueueCreate, "creates the queue again with its priority levels, so that its dead messages can be retried", "queue", q.Queue, "priorities", q.Priorities)
	}
	return hint(OpQueueCreate, "creates the queue again, so that its dead messages can be retried", "queue", q.Queue)
}

// droppedStats returns the stats of queue when it was dropped while its
// DLQ holds dead messages, as health reports it; nil when the queue is
// there, or when that cannot be told. Its first table is looked up first,
// so that a queue that is there costs one look-up more.
func (s *Service) droppedStats(ctx context.Context, queue string) *store.QueueStats {
	physical, err := s.store.PhysicalQueues(ctx, queue)
	if err != nil || len(physical) == 0 {
		return nil
	}
	if there, err := s.store.QueueExists(ctx, physical[0]); err != nil || there {
		return nil
	}
	stats, err := s.store.QueueStats(ctx, queue, store.QueueStatsOptions{})
	if err != nil || len(stats) != 1 || !stats[0].Dropped {
		return nil
	}
	return &stats[0]
}

// checkServedDropped notes the queues that running worker processes serve
// but that do not exist: a worker starts only on a queue that exists, so
// each was dropped while they ran, and they wait for it to be created
// again, working nothing of it meanwhile. Made again it runs at once; left
// dropped, the workers still name it until restarted without it.
func (s *Service) checkServedDropped(ctx context.Context, h *Health, stats []store.QueueStats, ws Workers) {
	exists := existing(stats)
	serving := map[string]int{}
	for _, w := range ws.Workers {
		if w.Status != WorkerRunning || w.System != "" {
			continue
		}
		for _, q := range w.Queues {
			if !exists[q] {
				serving[q]++
			}
		}
	}
	for _, q := range slices.Sorted(maps.Keys(serving)) {
		h.add(HealthDegraded, "workers_of_dropped_queue", q, fmt.Sprintf("queue %q does not exist, but %d running worker %s it: it was dropped while they ran, and they wait for it to be created again",
			q, serving[q], plural.Of(serving[q], "process serves", "processes serve")),
			s.createAgainHint(ctx, q, "creates it again, and its waiting workers work it"),
			hint(OpWorkers, "shows the processes that serve it: to stop serving it, restart them without it"))
	}
}

// existing returns the queues of stats that exist: those dropped with
// dead messages left in their DLQ do not.
func existing(stats []store.QueueStats) map[string]bool {
	exists := make(map[string]bool, len(stats))
	for _, q := range stats {
		if !q.Dropped {
			exists[q.Queue] = true
		}
	}
	return exists
}

// about is "about " for counts that are estimates.
func about(estimated bool) string {
	if estimated {
		return "about "
	}
	return ""
}

// checkQueue adds the reasons of queue q, which the workers cov serve, and
// which pgbus manages or not (store.ManagedQueues): a queue another PGMQ
// client made, which no pgbus worker serves now or served lately, is that
// client's to work, so that neither its ready messages nor their age are
// pgbus's to page about.
func (s *Service) checkQueue(h *Health, q store.QueueStats, cov QueueWorkers, managed bool) {
	oldest := time.Duration(q.OldestVisibleAgeSeconds * float64(time.Second))
	switch {
	case q.Paused:
		h.add(HealthDegraded, "queue_paused", q.Queue, fmt.Sprintf("queue %q is paused with %s", q.Queue, pausedHolds(q)),
			hint(OpQueueResume, "once the cause is fixed", "queue", q.Queue))
	case !managed && !cov.Served():
		// Another PGMQ client's queue, which that client works.
	case q.Visible+q.WaitingRetry > 0 && !cov.Served():
		h.add(HealthStalled, "no_workers", q.Queue, fmt.Sprintf("queue %q: %s%s ready, %d waiting to retry; %s", q.Queue, about(q.Estimated), plural.Count(q.Visible, "message", "messages"), q.WaitingRetry, cov.Note),
			append(s.startHints(cov), hint(OpWorkers, "shows the processes seen lately"))...)
		h.Reasons[len(h.Reasons)-1].Workers = cov.Status
	case q.Visible > 0 && oldest > s.opts.StallAfter && q.ThroughputPerMinute == 0:
		h.add(HealthStalled, "backlog_not_draining", q.Queue, fmt.Sprintf("queue %q: the oldest ready message has waited %s%s and nothing settled in 5 minutes", q.Queue, oldest.Round(time.Second), atLevel(q)),
			hint(OpWorkers, "are the workers alive?"), hint(OpQueueMessages, "what the queue holds", "queue", q.Queue))
	case q.Visible > 0 && oldest > time.Minute:
		h.add(HealthDegraded, "backlog_growing_old", q.Queue, fmt.Sprintf("queue %q: the oldest ready message has waited %s%s; workers are behind", q.Queue, oldest.Round(time.Second), atLevel(q)),
			hint(OpQueueStats, "depth and throughput", "queue", q.Queue))
	}
	switch {
	case q.LastHour.DeadLettered > 0 && q.DLQDepth == 0:
		// Dealt with already: a verdict of DEGRADED would send whoever
		// looks to a DLQ with nothing in it.
		h.add(HealthNotice, "dead_letters_growing", q.Queue, fmt.Sprintf("queue %q: %s dead-lettered in the last hour, and its DLQ is empty now: retried or discarded since", q.Queue, plural.Count(q.LastHour.DeadLettered, "message", "messages")),
			hint(OpAudit, "who retried or discarded them", "since", "1h"))
	case q.LastHour.DeadLettered > 0 && q.DeadLetteredRecently == 0:
		// Stopped: a verdict of DEGRADED for the rest of the hour would
		// hide whether the fix worked, and the next burst.
		h.add(HealthNotice, "dead_letters_growing", q.Queue, fmt.Sprintf("queue %q: %s dead-lettered in the last hour, none in the last %d minutes (%d in its DLQ)", q.Queue, plural.Count(q.LastHour.DeadLettered, "message", "messages"), int(store.RecentWindow.Minutes()), q.DLQDepth),
			s.summaryHint("groups them by cause", q.Queue))
	case q.LastHour.DeadLettered > 0:
		h.add(HealthDegraded, "dead_letters_growing", q.Queue, fmt.Sprintf("queue %q: %s dead-lettered in the last hour (%d in its DLQ)", q.Queue, plural.Count(q.LastHour.DeadLettered, "message", "messages"), q.DLQDepth),
			s.summaryHint("groups them by cause", q.Queue))
	}
}

// pausedHolds says what a paused queue holds in the words of its stats:
// waiting means ready, as in every other view, and the messages that would
// not run at once on resume (running, retrying, scheduled) are named apart
// rather than counted as waiting.
func pausedHolds(q store.QueueStats) string {
	s := about(q.Estimated) + plural.Count(q.Visible, "message", "messages") + " waiting"
	var rest []string
	for _, c := range []struct {
		n    int64
		word string
	}{{q.InFlight, "running"}, {q.WaitingRetry, "retrying"}, {q.Scheduled, "scheduled"}} {
		if c.n > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", c.n, c.word))
		}
	}
	switch len(rest) {
	case 0:
		return s
	case 1:
		return s + " and " + rest[0]
	}
	return s + ", " + strings.Join(rest[:len(rest)-1], ", ") + " and " + rest[len(rest)-1]
}

// atLevel says where the message ready longest waits in a queue with
// priority levels, when below the first: workers read a level only with the
// slots the levels above leave free, so it starves while they stay busy.
func atLevel(q store.QueueStats) string {
	if q.Priorities == 0 || q.OldestVisibleLevel == 0 {
		return ""
	}
	return fmt.Sprintf(" at priority level %d, which workers read only with the slots levels 0 to %d leave free (it waits while they keep the workers busy: more concurrency, or less work sent to them, lets it run)",
		q.OldestVisibleLevel, q.OldestVisibleLevel-1)
}

// runningUser is how recently a running process has said it uses a
// breaker at most: it says so again within every BreakerUsersRefresh.
const runningUser = 2 * store.BreakerUsersRefresh

// runningUsers are the users of a breaker that a running process has
// said it has lately.
func runningUsers(users []store.BreakerUser, now time.Time) []store.BreakerUser {
	var out []store.BreakerUser
	for _, u := range users {
		if now.Sub(u.SeenAt) <= runningUser {
			out = append(out, u)
		}
	}
	return out
}

// servedUsers returns, sorted, the queues that use breaker b and that a
// running worker serves (served) while it says so.
func servedUsers(b store.BreakerState, now time.Time, served func(queue string) bool) []string {
	var queues []string
	for _, u := range runningUsers(b.Users, now) {
		if served(u.Queue) && !slices.Contains(queues, u.Queue) {
			queues = append(queues, u.Queue)
		}
	}
	slices.Sort(queues)
	return queues
}

// heldBy counts the jobs breaker b holds, only when it is not closed (the
// count reads the queues' waiting rows); -1 when it is closed or the count
// failed, which the health check does without.
func (s *Service) heldBy(ctx context.Context, b store.BreakerState) int64 {
	if b.State == store.BreakerClosed {
		return -1
	}
	held, err := s.store.HeldByBreaker(ctx, b.Name)
	if err != nil {
		return -1
	}
	return held[b.Name]
}

// checkBreaker notes a breaker that is not closed, when a running handler
// uses it: its jobs are held (held of them now, -1 when not counted),
// which explains a backlog that waits. One that no running process uses
// holds nothing up: a user counts while it was named lately and a running
// worker serves its queue (served), so a breaker whose processes stopped
// is not reported for the hours its users stay recorded.
func checkBreaker(h *Health, b store.BreakerState, held int64, now time.Time, served func(queue string) bool) {
	if b.State == store.BreakerClosed {
		return
	}
	queues := servedUsers(b, now, served)
	if len(queues) == 0 {
		return
	}
	state := "half-open (one probe call is going through)"
	switch {
	case b.State != store.BreakerOpen:
	case probeDue(b, now):
		state = "open, its cool-off over since " + b.OpenUntil.UTC().Format(time.RFC3339) + " (the next job that meets it makes the probe call)"
	case b.OpenUntil == nil:
		state = "open"
	default:
		state = "open until " + b.OpenUntil.UTC().Format(time.RFC3339)
	}
	why := ""
	if e, _ := RedactText(b.LastError); e != "" {
		why = fmt.Sprintf(" (last error: %s)", clip(strings.Join(strings.Fields(e), " "), 200))
	}
	queue := ""
	if len(queues) == 1 {
		queue = queues[0]
	}
	cause := ", opened by hand" // open without a failure counted: by hand before its opener was recorded
	until := "until a probe call succeeds"
	o := handOpeningOf(b, now)
	if o != nil {
		// A person's window: no probe is made before it ends.
		until = "until the opening by hand ends and a probe call then succeeds"
	}
	switch {
	case o != nil && o.Reason != "":
		cause = fmt.Sprintf(", opened by hand by %s (%q)", o.By, clip(strings.Join(strings.Fields(o.Reason), " "), 200))
	case o != nil:
		cause = ", opened by hand by " + o.By
	case b.ConsecutiveFailures > 0:
		cause = " after " + plural.Count(b.ConsecutiveFailures, "consecutive failure", "consecutive failures")
	}
	count := ""
	switch {
	case held == 0:
		count = " (none now)"
	case held > 0:
		count = fmt.Sprintf(" (%s now)", plural.Count(held, "job", "jobs"))
	}
	limited := rateLimitedOf(b)
	if o != nil {
		limited = nil // a person's window, not the downstream's refusal
	}
	slow := ""
	if limited != nil {
		slow = fmt.Sprintf("; the downstream limits its rate or concurrency (its last answer a %d asking to slow down): once the breaker closes, the jobs it held are released over its cool-off, but while more run at once than the downstream takes they open it again, so the jobs crawl through; bound the requests in flight with %s, in %s",
			limited.Status, limited.Setting, limited.Where)
	}
	h.add(HealthDegraded, "circuit_open", queue, fmt.Sprintf("circuit breaker %q is %s%s%s: the jobs of %s that use it are held%s, not failed, %s%s",
		b.Name, state, cause, why, quoteList(queues), count, until, slow),
		hint(OpCircuits, "shows the breaker, its users and its last error", "name", b.Name))
	h.Reasons[len(h.Reasons)-1].subject = b.Name
	h.Reasons[len(h.Reasons)-1].RateLimited = limited
}

// quoteList names queues for a message: "a", "a" and "b", or the first
// three and how many more.
func quoteList(names []string) string {
	q := make([]string, 0, 3)
	for _, n := range names[:min(len(names), 3)] {
		q = append(q, strconv.Quote(n))
	}
	switch {
	case len(names) > 3:
		return fmt.Sprintf("%s and %s", strings.Join(q, ", "), plural.Count(len(names)-3, "more queue", "more queues"))
	case len(names) > 1:
		return "queues " + strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
	}
	return "queue " + q[0]
}

func (r HealthReason) hintCount() int { return len(r.Next) }

// count counts the reasons of code that make the verdict (NOTICE ones
// are left to read when convenient).
func (h *Health) count(code string) int {
	n := 0
	for _, r := range h.Reasons {
		if r.Code == code && r.Status != HealthNotice {
			n++
		}
	}
	return n
}

// summaryHint is the next step to the summary of queue's dead letters
// ("" for every queue's), why being what it does: with safe fields, each
// group broken down by the first of them, its by_field argument, which
// each front end words (a front end without the breakdown leaves it out,
// so why does not promise it, and names the fields there are).
func (s *Service) summaryHint(why, queue string) Hint {
	if f := s.opts.SafeFields; len(f) > 0 {
		why += "; the payload fields safe to show, which groups can be broken down by: " + strings.Join(f, ", ")
		return hint(OpDLQSummary, why, "queue", queue, "by_field", f[0])
	}
	return hint(OpDLQSummary, why, "queue", queue)
}

func (h *Health) add(status, code, queue, msg string, next ...Hint) {
	h.Reasons = append(h.Reasons, HealthReason{Status: status, Code: code, Queue: queue, Message: msg, Next: next})
	if status == HealthStalled || (h.Status == HealthOK && status != HealthNotice) {
		h.Status = status
	}
}

// Worker states of WorkerStatus.
const (
	WorkerRunning = "running"
	WorkerStale   = "stale"
	WorkerStopped = "stopped"
)

// WorkerStatus is a worker process and what its heartbeat says of it.
type WorkerStatus struct {
	WorkerProcess
	Status string `json:"status" jsonschema:"enum=running,enum=stale,enum=stopped"`
	// HeartbeatAgeSeconds is how long ago the process last checked in.
	HeartbeatAgeSeconds float64 `json:"heartbeat_age_seconds" jsonschema_description:"Seconds since the process last sent its heartbeat."`
	// QueuesOmitted counts the queues left out of Queues for an agent.
	QueuesOmitted int `json:"queues_omitted,omitempty" jsonschema_description:"Queues the process serves but left out of queues, the last it registered: for an agent at most 20 are listed; notes says where to see them all."`
}

// maxWorkerQueues is how many queues of one worker process an agent is
// shown: a process may serve every queue of its configuration, hundreds.
const maxWorkerQueues = 20

// Workers are the worker processes seen in the last 24 hours.
type Workers struct {
	Workers []WorkerStatus `json:"workers" jsonschema_description:"Worker processes seen in the last 24 hours: running first, then those stopped on an error, then stale, then stopped cleanly; newest first within each."`
	Running int            `json:"running" jsonschema_description:"Processes heartbeating now."`
	Stale   int            `json:"stale" jsonschema_description:"Processes whose heartbeat stopped without a clean shutdown: crashed or hung."`
	Stopped int            `json:"stopped" jsonschema_description:"Processes that shut down: cleanly, or on the error their stop_error gives."`
	Omitted int            `json:"omitted,omitempty" jsonschema_description:"Processes left out of workers, the last of the order (stopped ones first): so that the response stays under 16,000 characters, or past the 1,000 processes listed at most. The counts include them."`
	Notes   []string       `json:"notes,omitempty" jsonschema_description:"What was left out."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// checkStuckHandlers names, for each running process, the handlers it
// gave up on for ignoring their context that still run: their messages
// stay hidden and their slots taken until they return, which may be
// never, and only that process's log said so, once. A process that
// stopped or went stale took its handlers with it.
func checkStuckHandlers(h *Health, ws Workers) {
	for _, w := range ws.Workers {
		if w.Status != WorkerRunning || w.StuckCount == 0 {
			continue
		}
		// The reason is on a queue when every handler is of that one.
		named := make([]string, len(w.StuckHandlers))
		queue := ""
		for i, sh := range w.StuckHandlers {
			named[i] = fmt.Sprintf("message %d of queue %q (kind %q) for %s", sh.MsgID, sh.Queue, sh.Kind, time.Duration(sh.StuckSeconds)*time.Second)
			if i == 0 {
				queue = sh.Queue
			} else if sh.Queue != queue {
				queue = ""
			}
		}
		list := strings.Join(named, "; ")
		if more := w.StuckCount - len(named); more > 0 {
			list += fmt.Sprintf("; and %d more", more)
			queue = ""
		}
		h.add(HealthDegraded, "handlers_stuck", queue, fmt.Sprintf("worker process %s (pid %d) has %s past the timeout and grace, ignoring the context: %s. %s until %s, which may be never: "+
			"make the handler honour its context, or restart the process (%s then after the visibility timeout)",
			w.Hostname, w.PID, plural.Count(w.StuckCount, "handler running", "handlers running"), list,
			plural.Of(w.StuckCount, "Its message stays hidden, and its slot of the queue's concurrency taken,", "Their messages stay hidden, and their slots of the queues' concurrency taken,"),
			plural.Of(w.StuckCount, "it returns", "they return"), plural.Of(w.StuckCount, "the message runs again", "the messages run again")),
			hint(OpWorkers, "lists each process's stuck handlers"))
		h.Reasons[len(h.Reasons)-1].subject = w.ID
	}
}

// staleReplaced is how long after its last heartbeat a crashed process
// whose every queue a running process serves again stops counting: its
// messages have long come back, and it is history, listed by pgbus
// workers, not a reason for health to stay DEGRADED for the day the list
// keeps it.
const staleReplaced = time.Hour

// staleThatMatter counts the stale processes worth a health reason: those
// that crashed lately, or whose queues no running process serves.
func staleThatMatter(ws Workers) int {
	n := ws.Stale
	for _, w := range ws.Workers {
		if w.Status != WorkerStale || time.Duration(w.HeartbeatAgeSeconds*float64(time.Second)) < staleReplaced {
			continue
		}
		replaced := true
		for _, q := range w.Queues {
			replaced = replaced && coverage(ws, q).Served()
		}
		if replaced {
			n--
		}
	}
	return n
}

// WorkerStopErrorMax is the most characters of the error a worker
// process stopped on that Workers lists: enough for the error and what to
// do about it, while a list of many stopped processes stays short. The
// health reason of its queues gives it cut the same way.
const WorkerStopErrorMax = 500

// shownStopError is the error a worker process stopped on as it is shown:
// stored redacted, redacted again as every error text shown, and cut to
// WorkerStopErrorMax characters.
func shownStopError(stored string) string {
	shown, _ := RedactText(stored)
	shown, _ = cutChars(shown, WorkerStopErrorMax)
	return shown
}

// workerRank orders processes: those an operator acts on first. A
// process stopped on an error comes before the stale ones, so that a
// list cut to its response bound, behind many crashed processes, still
// shows why workers stopped.
func workerRank(w WorkerStatus) int {
	switch {
	case w.Status == WorkerRunning:
		return 0
	case w.Status == WorkerStopped && w.StopError != "":
		return 1
	case w.Status == WorkerStale:
		return 2
	default:
		return 3
	}
}

// sortWorkers orders ws by workerRank, keeping the order within a rank.
func sortWorkers(ws []WorkerStatus) {
	slices.SortStableFunc(ws, func(a, b WorkerStatus) int { return cmp.Compare(workerRank(a), workerRank(b)) })
}

// WorkersRequest selects how worker processes are listed.
type WorkersRequest struct {
	// All lists every process even when the list passes the service's
	// response bound: for a table a person scrolls, not for an agent's
	// answer.
	All bool
}

// Workers lists worker processes seen in the last 24 hours: running, then
// stale, then stopped, newest first within each. A list over the response
// bound leaves out its last rows and says so, unless req.All.
func (s *Service) Workers(ctx context.Context, req WorkersRequest) (_ Workers, err error) {
	ctx, end, err := s.enter(ctx, "Workers", reads)
	if err != nil {
		return Workers{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return Workers{}, err
	}
	out, err := s.allWorkers(ctx)
	if err != nil {
		return Workers{}, err
	}
	// Processes of the Ruby gem pgbus on the same database are shown with
	// pgbus's own.
	ruby, err := s.store.ListRubyProcesses(ctx, 24*time.Hour)
	if err != nil {
		return Workers{}, err
	}
	out = s.addRuby(out, ruby)
	for i := range out.Workers {
		w := &out.Workers[i]
		w.StopError = shownStopError(w.StopError)
	}
	if !req.All && s.opts.Bounds.Response > 0 {
		cut := 0
		for i := range out.Workers {
			if w := &out.Workers[i]; len(w.Queues) > maxWorkerQueues {
				w.QueuesOmitted = len(w.Queues) - maxWorkerQueues
				w.Queues = w.Queues[:maxWorkerQueues:maxWorkerQueues]
				cut++
			}
		}
		if cut > 0 {
			// Only a bounded list says so, read as JSON (the CLI and
			// the dashboard list them all): it names the field.
			askOp(&out.Notes, &out.Asks, AskAll, OpWorkers, fmt.Sprintf("%d %s more than %d queues: the first %d of each are listed (queues_omitted counts the others)",
				cut, plural.Of(cut, "process serves", "processes serve"), maxWorkerQueues, maxWorkerQueues))
		}
	}
	if !req.All {
		if n := fitList(s.opts.Bounds, &out.Workers, Workers{Notes: append(slices.Clip(out.Notes), strings.Repeat("x", 300))}); n > 0 {
			out.Omitted += n
			askOp(&out.Notes, &out.Asks, AskMore, OpWorkers, fmt.Sprintf("%d of the %d processes %s listed (running ones, those stopped on an error and stale ones first) so that the response stays under %d characters", len(out.Workers), len(out.Workers)+out.Omitted, plural.Of(len(out.Workers), "is", "are"), ResponseBudget))
		}
	}
	return out, nil
}

// allWorkers is Workers without a response bound, for the checks that
// read every process.
// addRuby is ws with the processes of the Ruby gem pgbus, running ones
// first.
func (s *Service) addRuby(ws Workers, ruby []store.WorkerProcess) Workers {
	if len(ruby) == 0 {
		return ws
	}
	more := s.workerStatuses(ruby, max(s.opts.StaleAfter, RubyStaleAfter))
	ws.Workers = append(slices.Clone(ws.Workers), more.Workers...)
	ws.Running, ws.Stale, ws.Stopped = ws.Running+more.Running, ws.Stale+more.Stale, ws.Stopped+more.Stopped
	sortWorkers(ws.Workers)
	return ws
}

// withRuby is ws with the processes of the Ruby gem pgbus, for whether a
// queue is served: a queue only the gem works has workers. A database
// whose gem table cannot be read counts pgbus's workers alone, as the
// gem's processes are no part of pgbus's health.
func (s *Service) withRuby(ctx context.Context, ws Workers) Workers {
	ruby, err := s.store.ListRubyProcesses(ctx, 24*time.Hour)
	if err != nil {
		return ws
	}
	return s.addRuby(ws, ruby)
}

func (s *Service) allWorkers(ctx context.Context) (Workers, error) {
	ws, err := s.store.ListWorkers(ctx, 24*time.Hour)
	if err != nil {
		return Workers{}, err
	}
	out := s.workerStatuses(ws, s.opts.StaleAfter)
	if len(ws) < store.MaxListedWorkers {
		return out, nil
	}
	// The list is cut, at its oldest stopped processes: count them.
	stopped, err := s.store.CountStoppedWorkers(ctx, 24*time.Hour)
	if err != nil {
		return Workers{}, err
	}
	if n := stopped - out.Stopped; n > 0 {
		out.Stopped, out.Omitted = stopped, n
		out.Notes = []string{fmt.Sprintf("the %s of the %d processes that stopped cleanly in the last 24 hours %s counted, not listed: at most %d processes are listed", plural.Of(n, "oldest", fmt.Sprintf("%d oldest", n)), stopped, plural.Of(n, "is", "are"), store.MaxListedWorkers)}
	}
	return out, nil
}

// RubyStaleAfter is how old the heartbeat of a Ruby pgbus process may be
// before it counts as stale: the gem beats every minute and counts a
// process alive for five.
const RubyStaleAfter = 5 * time.Minute

// workerStatuses gives each process its status, stale when it has been
// silent longer than staleAfter, or than three of its own heartbeat
// intervals when it beats less often, on the database's clock (this
// process's may be set apart from it), and counts them, running first, then
// stopped on an error, then stale, then stopped. Silence counts only while the database was up
// (store.WorkerProcess.SilentAge): a process cannot beat while the server
// is down, so after a restart a running one has the threshold from the
// server's start to beat again before it counts as crashed.
func (s *Service) workerStatuses(ws []store.WorkerProcess, staleAfter time.Duration) Workers {
	out := Workers{Workers: make([]WorkerStatus, len(ws))}
	for i, w := range ws {
		age := w.HeartbeatAge
		status := WorkerRunning
		switch {
		case w.StoppedAt != nil:
			status = WorkerStopped
			out.Stopped++
		case w.SilentAge > max(staleAfter, 3*w.HeartbeatInterval):
			status = WorkerStale
			out.Stale++
		default:
			out.Running++
		}
		out.Workers[i] = WorkerStatus{WorkerProcess: workerProcess(w), Status: status, HeartbeatAgeSeconds: age.Seconds()}
	}
	sortWorkers(out.Workers)
	return out
}

// countAlive is ws with the stale processes of ids alive, which the
// caller knows run, counted running.
func countAlive(ws Workers, alive []string) Workers {
	if len(alive) == 0 || ws.Stale == 0 {
		return ws
	}
	ws.Workers = slices.Clone(ws.Workers)
	for i := range ws.Workers {
		if w := &ws.Workers[i]; w.Status == WorkerStale && slices.Contains(alive, w.ID) {
			w.Status = WorkerRunning
			ws.Stale--
			ws.Running++
		}
	}
	sortWorkers(ws.Workers)
	return ws
}

// Circuits are the circuit breakers shared by all workers.
type Circuits struct {
	Circuits []BreakerState `json:"circuits" jsonschema_description:"The circuit breakers: open and half-open ones first, then by name; last_error redacted."`
	Open     int            `json:"open" jsonschema_description:"Breakers open or half-open now: their jobs are being snoozed."`
	Omitted  int            `json:"omitted,omitempty" jsonschema_description:"Breakers left out of circuits so that the response stays under 16,000 characters: closed ones last in the order."`
	Notes    []string       `json:"notes,omitempty" jsonschema_description:"What was left out."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// CircuitsRequest selects the breakers to list.
type CircuitsRequest struct {
	// Name lists only the breaker of that name; empty lists them all.
	Name string
	// All lists every breaker with all its users even when the list
	// passes the service's response bound: for a table a person scrolls,
	// not for an agent's answer.
	All bool
}

// maxBreakerUsers is how many users of one breaker an agent is shown.
const maxBreakerUsers = 20

// Circuits lists the circuit breakers and their states, or the one named:
// open and half-open first, then by name. A list over the response bound leaves out its last
// breakers, and a breaker used by many queues and kinds lists the latest
// seen of them; both say so.
func (s *Service) Circuits(ctx context.Context, req CircuitsRequest) (_ Circuits, err error) {
	ctx, end, err := s.enter(ctx, "Circuits", reads)
	if err != nil {
		return Circuits{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return Circuits{}, err
	}
	all, err := s.store.ListBreakers(ctx, req.Name)
	if err != nil {
		return Circuits{}, err
	}
	if req.Name != "" && len(all) == 0 {
		return Circuits{}, notFoundf("no circuit breaker is named %q; breakers exist once a handler that uses one has run", clip(req.Name, 80)).
			with(hint(OpCircuits, "lists every breaker without a name"))
	}
	held, err := s.store.HeldByBreaker(ctx, req.Name)
	if err != nil {
		return Circuits{}, err
	}
	out := Circuits{Circuits: make([]BreakerState, len(all))}
	bounded := s.opts.Bounds.Response > 0 && !req.All
	now := s.now()
	for i, b := range all {
		out.Circuits[i] = breakerState(b, now)
		out.Circuits[i].Held = held[b.Name]
		if bounded {
			out.Circuits[i].trimUsers(maxBreakerUsers)
		}
		if b.State != store.BreakerClosed {
			out.Open++
		}
	}
	slices.SortStableFunc(out.Circuits, func(a, b BreakerState) int {
		return cmp.Compare(boolRank(a.State == store.BreakerClosed), boolRank(b.State == store.BreakerClosed))
	})
	if !bounded {
		return out, nil
	}
	if n := fitList(s.opts.Bounds, &out.Circuits, Circuits{Notes: []string{strings.Repeat("x", 300)}}); n > 0 {
		out.Omitted = n
		out.Notes, out.Asks = nil, nil
		askOp(&out.Notes, &out.Asks, AskAll, OpCircuits, fmt.Sprintf("%d of the %d breakers %s listed (open and half-open ones first) so that the response stays under %d characters", len(out.Circuits), len(out.Circuits)+n, plural.Of(len(out.Circuits), "is", "are"), ResponseBudget))
	}
	return out, nil
}

// keptOpeningByHand is the refusal of a reset that would end early the
// window someone opened the breaker for by hand.
func keptOpeningByHand(req CircuitResetRequest, was store.BreakerWas) error {
	o := handOpening(was.OpenedBy, was.OpenReason)
	who := o.By
	if o.Reason != "" {
		who += fmt.Sprintf(" (%q)", clip(strings.Join(strings.Fields(o.Reason), " "), 200))
	}
	until := "a while"
	if was.OpenUntil != nil {
		until = was.OpenUntil.UTC().Format(time.RFC3339)
	}
	end := req
	end.EndOpeningByHand = true
	return invalidf("circuit breaker %q was opened by hand by %s until %s, and is left open: a reset would end that window early and send the jobs it holds to its downstream; nothing was changed. Ask whoever opened it, then reset it ending the opening by hand",
		clip(req.Name, 80), who, until).with(
		// Who opened it and why first: the reset that ends the window is
		// for once they agreed, not a step to take on one's own.
		hint(OpCircuits, "shows the breaker, who opened it and why: ask them before ending it", "name", req.Name),
		end.Hint("only once whoever opened it agreed: ends the opening by hand early and runs the jobs the breaker holds"))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CircuitResetRequest names the breaker to close.
type CircuitResetRequest struct {
	Name string
	// EndOpeningByHand closes a breaker opened by hand (CircuitOpen)
	// before its window is over. Without it such a breaker is left open
	// and the reset refused: the window is a person's decision, which a
	// reset meant for a breaker its failures opened must not undo.
	EndOpeningByHand bool
}

// CircuitReset is a breaker after a reset.
type CircuitReset struct {
	Name  string `json:"name"`
	State string `json:"state" jsonschema_description:"The breaker's state now: closed."`
	// Was and FailuresBefore say what the reset changed: nothing when the
	// breaker was closed without failures (reset by another call, say).
	Was            string `json:"was" jsonschema_description:"The breaker's state before the reset: closed, open or half_open."`
	FailuresBefore int    `json:"failures_before" jsonschema_description:"The failures in a row it had counted before the reset."`
	// Released counts the jobs the breaker had snoozed while open that
	// the reset released, to run now rather than at the end of their
	// snooze: the first store.ReleaseAtOnce at once, the rest spread over
	// the breaker's cool-off (store.RunHeldNow).
	Released int64 `json:"released" jsonschema_description:"Jobs the breaker had snoozed while open, released now in the order they were held: the first 50 at once, the rest spread over its cool-off (or the wait the downstream's last Retry-After asked for), 5 minutes at most, so that a downstream limiting its rate or concurrency is not met with them all at once."`
	// WasOpenedByHand is the opening by hand the reset ended.
	WasOpenedByHand *HandOpening `json:"was_opened_by_hand,omitempty" jsonschema_description:"The opening by hand (a maintenance window) that the reset ended."`
	Changed         bool         `json:"changed" jsonschema_description:"False when the reset changed nothing: the breaker was closed with no failure counted and held no job."`
	Next            []Hint       `json:"next" jsonschema_description:"What to do next."`
}

// CircuitReset closes a circuit breaker by hand and clears its failure
// count, for when its downstream is known to be back, and releases the
// jobs it snoozed while open now (store.RunHeldNow: the first few at once,
// the rest spread over its cool-off): without that they would wait out
// their snooze, up to the breaker's whole cool-off, after the reset.
func (s *Service) CircuitReset(ctx context.Context, req CircuitResetRequest) (out CircuitReset, err error) {
	args := func() any {
		args := map[string]any{"name": req.Name}
		if req.EndOpeningByHand {
			args["end_opening_by_hand"] = true
		}
		return args
	}
	ctx, end, err := s.enter(ctx, "CircuitReset", writesInSteps)
	if err != nil {
		return out, s.refusedByGate(ctx, OpCircuitReset, false, req.Check, args, err)
	}
	defer end()
	defer func() { s.record(ctx, OpCircuitReset, args(), out, err) }()
	defer s.explainWrite(ctx, &err, writesInSteps, hint(OpCircuits, "shows the breaker's state now, which the call may have changed", "name", req.Name)) // runs before the audit entry
	if err := s.checkWrite(OpCircuitReset); err != nil {
		return CircuitReset{}, err
	}
	if err := req.Check(); err != nil {
		return CircuitReset{}, err
	}
	was, err := s.store.ResetBreaker(ctx, req.Name, req.EndOpeningByHand)
	if err != nil {
		return CircuitReset{}, explain(err, hint(OpCircuits, "lists the breakers"))
	}
	if was.Kept {
		return CircuitReset{}, keptOpeningByHand(req, was)
	}
	stepDone(ctx) // the breaker closed stays closed
	released, err := s.store.RunHeldNow(ctx, req.Name, was.HeldUntil)
	if err != nil {
		return CircuitReset{}, fmt.Errorf("circuit breaker %q is closed, but of the jobs it held while open only %d were released: the others run at the end of their snooze, or call again to release them now: %w",
			clip(req.Name, 80), released, err)
	}
	out = CircuitReset{Name: req.Name, State: store.BreakerClosed, Was: was.State, FailuresBefore: was.ConsecutiveFailures, Released: released,
		WasOpenedByHand: handOpening(was.OpenedBy, was.OpenReason),
		Changed:         was.State != store.BreakerClosed || was.ConsecutiveFailures > 0 || released > 0,
		Next:            []Hint{hint(OpCircuits, "if the downstream is still failing, the breaker opens again after its threshold")}}
	if released > 0 {
		out.Next = append(out.Next, hint(OpQueueStats, "shows the queues working the jobs the breaker held"))
	}
	return out, nil
}

// checkStandby notes on h that the server is a standby, whose data is as
// of the last commit it replayed: its workers' heartbeats are judged as of
// then (a replay that lags is no crash), and its counts are that old.
func (s *Service) checkStandby(ctx context.Context, h *Health) (standby bool, err error) {
	r, err := s.store.ReplicaState(ctx)
	if err != nil || !r.Standby {
		return false, err
	}
	msg := "this server is a standby (a read replica)"
	if !r.ReplayedAt.IsZero() {
		msg += ": what it shows is as of the last commit it replayed, at " + r.ReplayedAt.Format(time.DateTime) + " UTC"
	}
	switch {
	case r.Behind >= time.Second:
		msg += fmt.Sprintf(", %s behind the primary's work it has received; workers' heartbeats are judged as of then", r.Behind.Round(time.Second))
	default:
		msg += ", with all it received replayed"
	}
	h.add(HealthNotice, "standby", "", msg+"; repairs go to the primary")
	return true, nil
}

// oldTransactionDegrades is how long a transaction may hold back vacuum
// before the verdict is DEGRADED, not only noted: an hour of dead rows
// in a busy queue's table slows every read of it.
const oldTransactionDegrades = time.Hour

// checkOldTransactions notes on h the transactions open longer than
// OldTransactionAfter: while one lasts, the dead rows each finished
// message leaves in its queue's table stay, and reads of a busy queue
// slow down as they grow, with nothing else to tell why. The check is a
// help, not the verdict's basis: when it cannot be made, it is left out.
func (s *Service) checkOldTransactions(ctx context.Context, h *Health) {
	old, err := s.store.OldTransactions(ctx, s.opts.OldTransactionAfter)
	if err != nil {
		return
	}
	const effect = "keeps PostgreSQL from removing the dead rows finished messages leave in the queue tables, so reads of busy queues slow down as they grow"
	for _, t := range old {
		age := s.now().Sub(t.Since).Round(time.Second)
		level := HealthNotice
		if age >= oldTransactionDegrades {
			level = HealthDegraded
		}
		if t.State == "prepared" {
			h.add(level, "old_transaction", "", fmt.Sprintf("a prepared transaction, %s, prepared %s ago by role %s, %s: finish it (COMMIT PREPARED %s, or ROLLBACK PREPARED)",
				quoteLiteral(t.GID), age, clip(t.User, 80), effect, quoteLiteral(t.GID)))
			h.Reasons[len(h.Reasons)-1].subject = "prepared " + t.GID
			continue
		}
		who := "role " + clip(t.User, 80)
		if t.Application != "" {
			who += ", application " + clip(t.Application, 80)
		}
		h.add(level, "old_transaction", "", fmt.Sprintf("a transaction open for %s (pid %d, %s, %s) %s: end it if it is stuck (SELECT pg_terminate_backend(%d))",
			age, t.PID, who, cmp.Or(t.State, "state unknown"), effect, t.PID))
		// Told apart by its session and start: the alerts report another
		// one as new.
		h.Reasons[len(h.Reasons)-1].subject = fmt.Sprintf("pid %d since %s", t.PID, t.Since.Format(time.RFC3339Nano))
	}
}

// quoteLiteral is s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(clip(s, 200), "'", "''") + "'" }
