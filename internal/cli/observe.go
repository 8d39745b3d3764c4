package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/ops"
)

// noArgs adapts an operation that takes no request to run.
func noArgs[Res any](op func(*ops.Service, context.Context) (Res, error)) func(*ops.Service, context.Context, struct{}) (Res, error) {
	return func(s *ops.Service, ctx context.Context, _ struct{}) (Res, error) { return op(s, ctx) }
}

func (a *app) healthCommand() *cobra.Command {
	var failOn string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "One-look health: OK, DEGRADED or STALLED, with the reasons and what to look at next",
		Long: `Check queues and workers: STALLED when ready work is not being done (no
running worker, a backlog that does not drain), DEGRADED when something needs
a look (stale workers, new dead letters, a paused queue, an aging backlog, an
open circuit breaker a running handler uses; queue_tables_missing, a queue
pgbus keeps settings of whose PGMQ tables are gone, as a restore of a dump
that left them out leaves it: pgbus queue create makes it again with its
settings, pgbus queue drop --yes forgets it; or whose DLQ's table alone was
dropped by hand: pgbus queue create makes the DLQ again), OK otherwise. A
NOTICE reason leaves the verdict as it is: schema_newer, a newer pgbus
migrated the database (upgrade this one); dead_letters_growing once every
dead letter of the last hour was retried or discarded, or when none came in
the last 15 minutes. Each reason says where to look next. --json
prints the same result as the MCP tool pgbus_health.

Exit code 0 whatever the verdict, unless --fail-on names one: then 1 when
the verdict is that one or worse (OK, DEGRADED, STALLED), after the report,
so that a cron job or a runbook's check alerts on it; a database that does
not answer is exit 1 either way, its connection and its check each given
up after ` + ops.HealthCheckTimeout.String() + `, or the database call timeout when that is shorter (a paused
PgBouncer takes the connection and answers nothing). Another session's
lock that keeps the check from reading the tables within the database call
timeout is the verdict DEGRADED, its reason health_check_slow naming that
session.`,
		Example: `  pgbus health
  pgbus health --json
  pgbus health --fail-on stalled || page-the-on-call`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := strings.ToUpper(failOn)
			if failOn != "" && level != ops.HealthDegraded && level != ops.HealthStalled {
				return usageError{fmt.Errorf("--fail-on %q is no verdict: give degraded or stalled, the verdict from which on the command fails", clip(failOn, 40))}
			}
			a.connectBound = ops.HealthCheckTimeout
			return run(a, cmd, noArgs((*ops.Service).HealthOrSlow), struct{}{}, a.printHealth, func(h ops.Health) error {
				if failOn != "" && ops.HealthAtLeast(h.Status, level) {
					return fmt.Errorf("health is %s, at or past --fail-on %s", h.Status, strings.ToLower(level))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&failOn, "fail-on", "", "exit 1 when the verdict is this or worse: degraded or stalled")
	return jsonFlag(cmd, ops.OpHealth)
}

// printHealth prints a health verdict: its line, each reason with its next
// steps, then the verdict's own.
func (a *app) printHealth(h ops.Health) error {
	if h.Queues == nil || h.Backlog == nil || h.DeadMessages == nil || h.Workers == nil {
		// The check could not read them: unknown, not 0.
		fmt.Fprintf(a.stdout, "%s: counts unknown: the check could not read them\n", h.Status)
	} else {
		fmt.Fprintf(a.stdout, "%s: %s, %s ready, %d dead, %s running\n", h.Status, plural.Count(*h.Queues, "queue", "queues"), estimate(*h.Backlog, h.BacklogEstimated), *h.DeadMessages, plural.Count(*h.Workers, "worker", "workers"))
	}
	for _, r := range h.Reasons {
		fmt.Fprintf(a.stdout, "%s %s: %s\n", r.Status, r.Code, r.Message)
		for _, n := range r.Next {
			fmt.Fprintf(a.stdout, "  next: %s\n", a.command(n))
		}
	}
	a.printNext(a.stdout, h.Next)
	return nil
}

func (a *app) workersCommand() *cobra.Command {
	return jsonFlag(&cobra.Command{
		Use:   "workers",
		Short: "Worker processes of the last 24 hours: running, stale (crashed or hung) or stopped",
		Long: `List the worker processes (pgbus work, pgbus serve with workers, Go programs
embedding the engine) seen in the last 24 hours: host, pid, queues,
concurrency, start, last heartbeat and status. A stale worker stopped
heartbeating without shutting down: its running messages come back after their
visibility timeout. STOP ERROR begins the error a stopped worker stopped on
(--json has more of it). Below the table, "stuck on" lines name the handlers a
running process gave up on for ignoring their context that still run: their
messages stay hidden until they return. --json prints the same result as the
MCP tool pgbus_workers.`,
		Example: `  pgbus workers`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(a, cmd, (*ops.Service).Workers, ops.WorkersRequest{}, func(ws ops.Workers) error {
				if len(ws.Workers) == 0 {
					_, err := fmt.Fprintln(a.stdout, "no worker processes in the last 24 hours; start one with "+a.carried("pgbus work"))
					return err
				}
				t := newTable(a.stdout, "STATUS", "HOST", "PID", "QUEUES", "CONCURRENCY", "STARTED", "HEARTBEAT", "VERSION", "STOP ERROR")
				for _, w := range ws.Workers {
					t.row(w.Status, w.Hostname, w.PID, queueList(w.Queues, w.QueuesOmitted), w.Concurrency, a.ago(w.StartedAt), a.ago(w.HeartbeatAt),
						dash(strings.TrimPrefix(w.Version, "pgbus ")), clip(dash(w.StopError), 100))
				}
				if err := t.flush(); err != nil {
					return err
				}
				_, err := fmt.Fprintf(a.stdout, "%d running, %d stale, %d stopped\n", ws.Running, ws.Stale, ws.Stopped)
				for _, w := range ws.Workers {
					if w.StuckCount > 0 {
						fmt.Fprintf(a.stdout, "stuck on %s pid %d: %s\n", w.Hostname, w.PID, stuckList(w.WorkerProcess))
					}
				}
				for _, n := range ws.Notes {
					fmt.Fprintln(a.stdout, "note: "+n)
				}
				return err
			})
		},
	}, ops.OpWorkers)
}

func (a *app) circuitsCommand() *cobra.Command {
	return jsonFlag(&cobra.Command{
		Use:   "circuits [NAME]",
		Short: "Circuit breakers shared by all workers, and their state",
		Long: `List the circuit breakers (one per downstream: an HTTP host, a command, or a
name a handler chose) with their state. A breaker opens after its threshold
of consecutive failures; jobs meeting it open are snoozed without using an
attempt until the cool-off ends, then one probe goes through (STATE says
"open, probe due" from then until a job makes that call). This is why a job
can wait longer than its backoff. HELD counts the jobs a breaker holds so,
which pgbus circuit reset releases now. A breaker opened by hand (pgbus
circuit open) says "by hand", and a line under the table says who opened it
and why. --json prints the same result as the MCP tool pgbus_circuits. NAME
shows only that breaker.`,
		Example: `  pgbus circuits
  pgbus circuits http:api.example.com:443
  pgbus circuit reset http:api.example.com:443`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := optionalName(args, "circuit breaker", "every breaker")
			if err != nil {
				return err
			}
			req := ops.CircuitsRequest{Name: name}
			return run(a, cmd, (*ops.Service).Circuits, req, func(cs ops.Circuits) error {
				if len(cs.Circuits) == 0 {
					_, err := fmt.Fprintln(a.stdout, "no circuit breakers")
					return err
				}
				t := newTable(a.stdout, "NAME", "STATE", "FAILURES", "OPEN UNTIL", "HELD", "LAST SUCCESS", "LAST FAILURE", "USED BY", "LAST ERROR")
				var byHand, limited []string
				for _, b := range cs.Circuits {
					if l := b.RateLimited; l != nil {
						limited = append(limited, fmt.Sprintf("%s: the downstream limits its rate or concurrency (its last answer a %d); bound the requests in flight with %s, in %s", b.Name, l.Status, l.Setting, l.Where))
					}
					until, state := "-", b.State
					if b.OpenUntil != nil && b.State != ops.BreakerClosed {
						until = a.ago(*b.OpenUntil)
					}
					if b.OpenedByHand != nil {
						state += ", by hand"
						byHand = append(byHand, b.Name+" was opened by hand "+handOpening(*b.OpenedByHand))
					}
					if b.ProbeDue {
						state += ", probe due"
					}
					t.row(b.Name, state, fmt.Sprintf("%d/%d", b.ConsecutiveFailures, b.FailureThreshold), until, b.Held,
						a.agoPtr(b.LastSuccessAt), a.agoPtr(b.LastFailureAt), usedBy(b.Users), clip(dash(b.LastError), 60))
				}
				if err := t.flush(); err != nil {
					return err
				}
				for _, line := range append(byHand, limited...) {
					fmt.Fprintln(a.stdout, line)
				}
				return nil
			})
		},
	}, ops.OpCircuits)
}

// handOpening says who opened a breaker by hand and why: `by cli:
// "bank maintenance"`, the reason on one line.
func handOpening(o ops.HandOpening) string {
	if o.Reason == "" {
		return "by " + o.By
	}
	return fmt.Sprintf("by %s: %q", o.By, clip(strings.Join(strings.Fields(o.Reason), " "), 200))
}

func (a *app) agoPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return a.ago(*t)
}

// usedBy names a breaker's users as queue/kind, queue alone for a queue's
// default handler.
func usedBy(users []ops.BreakerUser) string {
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.Queue
		if u.Kind != "" {
			names[i] += "/" + u.Kind
		}
	}
	return clip(dash(strings.Join(names, ",")), 40)
}

func (a *app) circuitCommand() *cobra.Command {
	var req ops.CircuitResetRequest
	reset := &cobra.Command{
		Use:   "reset NAME",
		Short: "Close a circuit breaker by hand, when its downstream is known to be back",
		Long: `Close a circuit breaker and clear its failure count, and release now the
jobs it snoozed while open (state scheduled, held by the breaker, in pgbus
queue messages) instead of at the end of their snooze: the first 50 at
once, the rest spread over its cool-off (or the wait the downstream's last
Retry-After asked for, 5 minutes at most), in the order they were held. If
the downstream still fails, the breaker opens again after its threshold. A
breaker opened by hand (pgbus circuit open) is left open until its time is
up unless --end-opening-by-hand is given: that window is someone's
decision, which pgbus circuits shows with who and why. --json prints the
same result as the MCP tool pgbus_circuit_reset.`,
		Example: `  pgbus circuit reset http:api.example.com:443
  pgbus circuit reset http:api.example.com:443 --end-opening-by-hand`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			return run(a, cmd, (*ops.Service).CircuitReset, req, func(res ops.CircuitReset) error {
				line := fmt.Sprintf("circuit breaker %s was %s with %s in a row; it is %s now", res.Name, res.Was, plural.Count(res.FailuresBefore, "failure", "failures"), res.State)
				if res.Was == res.State && res.FailuresBefore == 0 {
					line = fmt.Sprintf("circuit breaker %s was already %s with no failure counted", res.Name, res.State)
				}
				switch {
				case res.Released > ops.ReleaseAtOnce:
					line += fmt.Sprintf("; %s it held released now, in the order held: the first %d at once, the rest spread over its cool-off (%s at most)",
						plural.Count(res.Released, "job", "jobs"), ops.ReleaseAtOnce, ops.FormatAge(ops.MaxReleaseWindow))
				case res.Released > 0:
					line += fmt.Sprintf("; %s it held made visible now", plural.Count(res.Released, "job", "jobs"))
				case !res.Changed:
					line += "; nothing changed"
				}
				fmt.Fprintln(a.stdout, line)
				if res.WasOpenedByHand != nil {
					fmt.Fprintln(a.stdout, "it ends the opening by hand "+handOpening(*res.WasOpenedByHand))
				}
				a.printNext(a.stdout, res.Next)
				return nil
			})
		},
	}
	reset.Flags().BoolVar(&req.EndOpeningByHand, "end-opening-by-hand", false, "close a breaker opened by hand before its time is up")
	jsonFlag(reset, ops.OpCircuitReset)
	cmd := a.groupCommand(&cobra.Command{
		Use:   "circuit",
		Short: "Act on one circuit breaker",
		Long: `Act on one circuit breaker, named as pgbus circuits lists it: open it by
hand for a while, before a downstream's maintenance or once it is known to
be down, so that the jobs that use it wait instead of failing toward their
DLQ; reset it to close it once the downstream is back, and release the jobs
it held. Each is one entry in the audit log.`,
		Example: `  pgbus circuits
  pgbus circuit open http:api.example.com:443 --for 30m --reason "bank maintenance, OPS-7"
  pgbus circuit reset http:api.example.com:443 --end-opening-by-hand`,
	})
	cmd.AddCommand(reset, a.circuitOpenCommand())
	return cmd
}

func (a *app) circuitOpenCommand() *cobra.Command {
	var (
		req     ops.CircuitOpenRequest
		forText string
	)
	cmd := &cobra.Command{
		Use:   "open NAME --for DURATION",
		Short: "Open a circuit breaker by hand, for a downstream known to be down or under maintenance",
		Long: `Open a circuit breaker for a while, as before a downstream's maintenance
window or once it is known to be down: every job whose handler uses the
breaker, in whatever queue, is held (state scheduled, no attempt used)
instead of failing toward its DLQ, while the queues' other jobs run.
When --for is up, the next job probes the downstream: success closes the
breaker, failure keeps it open for its cool-off. pgbus circuit reset NAME
--end-opening-by-hand ends it early and releases the held jobs. --for
takes 1s to 7d (168h), such as 30m, 2h or 1d.
--reason says why, for whoever finds the breaker open meanwhile (pgbus
circuits, the MCP tool pgbus_circuits, the dashboard, the health check show
it with who opened it): an agent is told not to reset it unless asked.`,
		Example: `  pgbus circuit open http:api.example.com:443 --for 30m --reason "bank maintenance, OPS-7"
  pgbus circuit reset http:api.example.com:443 --end-opening-by-hand`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("for") {
				return usageError{errors.New("--for is required: how long to hold the breaker's jobs, such as --for 30m (1s to 7d)")}
			}
			var err error
			if req.For, err = ops.ParseAge(forText); err != nil {
				return usageError{fmt.Errorf("--for %q is not a duration from 1s to 7d: give one such as 30m, 2h or 1d", forText)}
			}
			if err := checkDuration("for", req.For, time.Second, ops.MaxOpenByHand, "a breaker is opened for a second or more"); err != nil {
				return err
			}
			req.Name = args[0]
			return run(a, cmd, (*ops.Service).CircuitOpen, req, func(res ops.CircuitOpen) error {
				fmt.Fprintf(a.stdout, "circuit breaker %s was %s; it is open until %s (%s): its jobs wait, no attempt used, then the next one probes it\n",
					res.Name, res.Was, stamp(res.OpenUntil), a.ago(res.OpenUntil))
				if res.Replaced != nil {
					fmt.Fprintln(a.stdout, "it replaces the opening by hand "+handOpening(*res.Replaced))
				}
				a.printNext(a.stdout, res.Next)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&forText, "for", "", "how long the breaker stays open, 1s to 7d, such as 30m, 2h or 1d")
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why, shown with the breaker until it closes (at most 500 bytes)")
	return jsonFlag(cmd, ops.OpCircuitOpen)
}

func (a *app) queueMessagesCommand() *cobra.Command {
	var (
		req       ops.QueueMessagesRequest
		noPayload bool
	)
	cmd := &cobra.Command{
		Use:   "messages QUEUE",
		Short: "List the live messages of a queue: waiting, running, retrying or scheduled",
		Long: `List the messages still in QUEUE (not dead), oldest first: state (waiting,
in_flight, retrying, scheduled), attempts so far, when each is next visible,
and its latest failures (identical failures in a row as one entry with
their count; --full-history lists each). Use it to see what is failing
before it reaches the DLQ (--state retrying) or what a stalled queue holds.
Scheduled messages are not due yet: sent with a delay, snoozed while a
circuit breaker was open, or given back by a worker that stopped (a
deploy's drain ran out) while their handler ignored the stop, which runs
them again after the visibility timeout. A message whose handler returned
on the stop is visible again at once (waiting). Neither counts as an
attempt.
A queue with priority levels lists every level in the order workers read
them, level 0 first, each message with its LEVEL (priority in --json);
name one level (QUEUE_p1) to list that level alone. --state and the pages
of --limit and --cursor run across the levels.
Secrets are shown as [REDACTED]; notes under the table say what was
redacted or shortened. The table shows no payloads: --json prints them, in
the same result as the MCP tool pgbus_queue_messages.`,
		Example: `  pgbus queue messages orders
  pgbus queue messages orders --state retrying --json
  pgbus queue messages orders_p1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Empty, --state would list messages in every state.
			if err := checkLimit(ops.OpQueueMessages, req.Limit); err != nil {
				return err
			}
			// The table shows no payloads: only --json asks for them.
			asJSON, _ := cmd.Flags().GetBool("json")
			req.Queue, req.IncludePayload = args[0], asJSON && !noPayload
			return run(a, cmd, (*ops.Service).QueueMessages, req, func(page ops.LiveMessages) error {
				if len(page.Items) == 0 {
					_, err := fmt.Fprintln(a.stdout, noLiveMessages(req))
					return err
				}
				// A queue with priority levels numbers its messages per
				// level: the level tells apart two of the same id.
				levels := slices.ContainsFunc(page.Items, func(m ops.LiveMessage) bool { return m.Priority != nil })
				header := []string{"ID", "STATE", "KIND", "ATTEMPTS", "ENQUEUED", "VISIBLE", "LAST ERROR"}
				if levels {
					header = append([]string{"LEVEL"}, header...)
				}
				t := newTable(a.stdout, header...)
				for _, m := range page.Items {
					last := "-"
					if n := len(m.History); n > 0 {
						last = m.History[n-1].ErrorClass + ": " + m.History[n-1].ErrorMessage
					}
					state := m.State
					if m.HeldBy != "" {
						state += " (breaker " + clip(m.HeldBy, 30) + ")"
					}
					attempts := fmt.Sprint(m.ReadCount)
					if m.Unrecorded != "" {
						attempts += " (" + m.Unrecorded + ")"
					}
					cells := []any{m.MsgID, state, dash(m.Kind), attempts, a.ago(m.EnqueuedAt), a.ago(m.VisibleAt), clip(last, 70)}
					if levels {
						level := "-"
						if m.Priority != nil {
							level = fmt.Sprint(*m.Priority)
						}
						cells = append([]any{level}, cells...)
					}
					t.row(cells...)
				}
				if err := t.flush(); err != nil {
					return err
				}
				// Payloads it did not ask for are no news in a table
				// without them.
				printNotes(a.stdout, page.Notes, page.Asks, ops.AskPayload)
				// The next page is the more: line, last, as dlq list has it.
				a.printNext(a.stdout, slices.DeleteFunc(slices.Clone(page.Next), func(h ops.Hint) bool { return h.Op == ops.OpQueueMessages }))
				if page.NextCursor != "" {
					// The cursor is for this state's list only.
					state := ""
					if req.State != "" {
						state = " --state " + req.State
					}
					fmt.Fprintf(a.stdout, "more: %s\n", a.carried(fmt.Sprintf("pgbus queue messages %s%s --limit %d --cursor %s", req.Queue, state, req.Limit, page.NextCursor)))
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.State, "state", "", "only messages in this state: "+strings.Join(ops.LiveStates, ", "))
	pageFlags(f, &req.Cursor, &req.Limit)
	f.BoolVar(&noPayload, "no-payload", false, "leave payloads out of --json")
	f.BoolVar(&req.FullHistory, "full-history", false, "list each failure, identical ones in a row too")
	return jsonFlag(cmd, ops.OpQueueMessages)
}

// noLiveMessages is what an empty page of req says: a state's list says
// that state, not that the queue is empty, and a later page that there is
// no more.
func noLiveMessages(req ops.QueueMessagesRequest) string {
	what := "live messages"
	if req.State != "" {
		what = req.State + " messages"
	}
	if req.Cursor != "" {
		return "no more " + what
	}
	return "no " + what
}

// queueList words the queues of a worker process for a table cell: as
// many as fit, then how many more (omitted of them left out already)
// and where they are listed.
// stuckList says which handlers w gave up on still run.
func stuckList(w ops.WorkerProcess) string {
	parts := make([]string, len(w.StuckHandlers))
	for i, h := range w.StuckHandlers {
		parts[i] = fmt.Sprintf("message %d of queue %s (kind %s) for %s", h.MsgID, h.Queue, strconv.Quote(h.Kind), time.Duration(h.StuckSeconds)*time.Second)
	}
	if more := w.StuckCount - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return plural.Count(w.StuckCount, "handler", "handlers") + " still running past the timeout and grace, ignoring the context (each one's message hidden until it returns): " + strings.Join(parts, "; ")
}

func queueList(queues []string, omitted int) string {
	var b strings.Builder
	for i, q := range queues {
		if b.Len()+len(q) > maxCell-40 {
			omitted += len(queues) - i
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(q)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, " +%d more (--json lists them)", omitted)
	}
	return b.String()
}
