package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
)

func (a *app) queuesCommand() *cobra.Command {
	return jsonFlag(&cobra.Command{
		Use:   "queues [QUEUE]",
		Short: "Show queue statistics: depth, retries, dead letters, throughput",
		Long: `Show every work queue (or one) with what is in it and how it is doing:

  DEPTH       messages in the queue: READY + RUNNING + RETRYING + SCHEDULED
  DLQ         dead messages waiting in its dead-letter queue (pgbus dlq summary)
  ARCHIVED    finished messages kept in its archive
  SENT        messages sent to it since it was created (a queue dropped and
              created again counts from then)
  OK/FAILED/DEAD/1H  outcomes over the last hour
  MAX RUNS    max_retries: runs per message before it is dead-lettered
  BACKOFF     the range of the waits between runs

A queue whose table holds more than 1,000,000 messages or 32 MB is not counted
at each read: its DEPTH and READY come from the database's statistics, marked
~ (counts_estimated in --json), which follow sends and deletes within seconds
and may be several percent off, while RUNNING, RETRYING, SCHEDULED and OLDEST
READY stay exact. ARCHIVED is estimated likewise, marked ~
(archived_estimated), for an archive of more than 100,000 messages.

--json prints the same result as the MCP tool pgbus_queue_stats.`,
		Example: `  pgbus queues
  pgbus queues orders --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := optionalName(args, "queue", "every queue")
			if err != nil {
				return err
			}
			req := ops.QueueStatsRequest{Queue: name}
			return run(a, cmd, (*ops.Service).QueueStats, req,
				func(res ops.QueueStatsResult) error {
					if err := a.writeQueueStats(a.stdout, res.Queues); err != nil {
						return err
					}
					printNotes(a.stdout, res.Notes, res.Asks)
					return nil
				})
		},
	}, ops.OpQueueStats)
}

func (a *app) queueCommand() *cobra.Command {
	cmd := a.groupCommand(&cobra.Command{
		Use:   "queue",
		Short: "Create, drop, pause, resume or purge a queue, list its live messages, or run its retries now",
		Long: `Manage queues. A queue X is the PGMQ tables pgmq.q_X and pgmq.a_X (its
archive) plus its dead-letter queue X_dlq; names match ^[a-z][a-z0-9_]*$ and
are at most 43 characters, so that X_dlq fits PGMQ's 47. Retry settings are
kept in the database and shared by every worker process.`,
		Example: `  pgbus queue create orders --max-retries 8 --backoff 10s --backoff-max 10m
  pgbus queue create alerts --priorities 3
  pgbus queue messages orders --state retrying
  pgbus queue run-now orders
  pgbus queue pause orders
  pgbus queue resume orders
  pgbus queue purge orders --yes
  pgbus queue drop orders --yes`,
	})
	cmd.AddCommand(a.queueCreateCommand(), a.queueDropCommand(), a.queuePauseCommand(true), a.queuePauseCommand(false),
		a.queuePurgeCommand(), a.queueMessagesCommand(), a.queueRunNowCommand())
	return cmd
}

func (a *app) queueRunNowCommand() *cobra.Command {
	var req ops.QueueRunNowRequest
	var yes bool
	cmd := &cobra.Command{
		Use:   "run-now QUEUE",
		Short: "Run now the messages of a queue that wait out a retry's backoff",
		Long: `Make the messages of QUEUE that failed and wait for their next attempt
(state retrying in pgbus queue messages) visible now, so that workers run
them at once instead of after their backoff: once what failed them is
fixed, nobody waits minutes (or hours, with the polynomial strategy or a
long Retry-After) for the next try. Attempts already made still count.
Messages in flight, waiting or scheduled (sent with a delay, snoozed, paced
retries, given back by a stopped worker) keep their times. A queue with
priority levels has every level's retrying messages run now; name one
level (QUEUE_p1) for that level alone. --kind takes only the messages of
one job kind, as when the fix was to one kind's downstream; the others
keep waiting. --dry-run counts them and changes nothing. --json prints
the same result as the MCP tool pgbus_queue_run_now.

--in-flight takes the messages in flight instead (read by a worker and not
settled, state in_flight): after a restore or a failover the workers that
read them are gone, and without it they wait out their visibility timeout
(up to 24 hours) before they run again. Their attempt under way counts as
made, as after a crash. WARNING: a job a worker still runs elsewhere is in
flight too, is made visible with the others, and runs twice: use it only
once every worker that read them has stopped (pgbus workers shows none
running but those started since), and count them first with --dry-run.
So it needs --yes; without it, pgbus says how many it would take and
changes nothing.`,
		Example: `  pgbus queue run-now orders --dry-run
  pgbus queue run-now orders
  pgbus queue run-now orders --kind send_receipt
  pgbus queue run-now orders --in-flight --dry-run
  pgbus queue run-now orders --in-flight --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Queue = args[0]
			if req.InFlight && !req.DryRun && !yes {
				return a.refuseInFlight(cmd, req)
			}
			if !req.DryRun {
				bar := a.newProgress(-1, "running now")
				defer bar.finish()
				req.Progress = bar.callback()
			}
			return run(a, cmd, (*ops.Service).QueueRunNow, req, func(res ops.QueueRunNow) error {
				verb, kind, state := "made visible now", "", "waiting to retry"
				if res.DryRun {
					verb = "would be made visible now"
				}
				if res.Kind != "" {
					kind = " of kind " + res.Kind
				}
				if res.InFlight {
					state = "in flight"
				}
				fmt.Fprintf(a.stdout, "%s%s of queue %s %s %s\n", plural.Count(res.Visible, "message", "messages"), kind, res.Queue, state, verb)
				if res.Workers != nil && !res.Workers.Served() {
					fmt.Fprintln(a.stdout, "note: "+res.Workers.Note)
				}
				a.printNext(a.stdout, res.Next)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&req.Kind, "kind", "", "only the messages of this job kind")
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "count the messages; change nothing")
	cmd.Flags().BoolVar(&req.InFlight, "in-flight", false, "take the messages in flight instead, after a restore or failover: a job a worker still runs runs twice (with --yes or --dry-run)")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm taking the messages in flight (with --in-flight)")
	return jsonFlag(cmd, ops.OpQueueRunNow)
}

// refuseInFlight refuses pgbus queue run-now --in-flight without --yes, as
// the other commands that may do harm refuse without it: saying how many
// messages it would take, counted as its dry run counts them, with that
// dry run and the workers to check as its next steps. Nothing changes.
func (a *app) refuseInFlight(cmd *cobra.Command, req ops.QueueRunNowRequest) error {
	ctx, s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	dry := req
	dry.DryRun = true
	p, err := s.ops.PreviewRunNow(ctx, dry)
	if err != nil {
		return err
	}
	which := plural.Count(p.Visible, "message", "messages") + " in flight"
	if req.Kind != "" {
		which += " of kind " + req.Kind
	}
	return usageError{&ops.Error{Msg: fmt.Sprintf("refusing to make %s of queue %s visible without --yes: a job a worker still runs would run twice; once every worker that read them has stopped, pass --yes",
		which, p.Queue), Hints: []ops.Hint{dry.Hint("counts them and changes nothing"), {Op: ops.OpWorkers, Why: "shows whether a worker that may still run them is running"}}}}
}

// groupCommand makes a command that only holds subcommands: alone it
// prints its help; with an unknown subcommand it is a usage error (exit 2).
func (a *app) groupCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		if args[0] == "help" {
			// pgbus dlq help retry, as pgbus help dlq retry.
			return helpOn(cmd.Root(), append(strings.Fields(cmd.CommandPath())[1:], args[1:]...))
		}
		return a.unknownSubcommand(cmd, args[0])
	}
	return cmd
}

// unknownSubcommand is the error of a group command given name, which is
// none of its subcommands, with the ones it may be a mistyping of. The
// command it names for a name that lives elsewhere keeps the global flags
// this command was given.
func (a *app) unknownSubcommand(cmd *cobra.Command, name string) error {
	names := commandNames(cmd)
	if other, ok := elsewhere[cmd.CommandPath()+" "+name]; ok {
		return usageError{fmt.Errorf("unknown command %q for %q: that is %s; %s takes one of: %s", name, cmd.CommandPath(), a.carried(other), cmd.CommandPath(), strings.Join(names, ", "))}
	}
	useOneOf := "use one of: "
	guess := didYouMean(closest(name, names), "")
	if guess != "" {
		useOneOf = "Use one of: "
	}
	pointer := ""
	if !cmd.HasParent() {
		pointer = " (pgbus --help says what each does)"
	}
	return usageError{fmt.Errorf("unknown command %q for %q; %s%s%s%s", name, cmd.CommandPath(), guess, useOneOf, strings.Join(names, ", "), pointer)}
}

// elsewhere names the command that does what a subcommand someone might
// guess from an MCP tool's name (pgbus_queue_stats) or from habit (ls)
// would do, when it lives under another name.
var elsewhere = map[string]string{
	"pgbus queue stats":   "pgbus queues [NAME]",
	"pgbus queue list":    "pgbus queues",
	"pgbus queue ls":      "pgbus queues",
	"pgbus queue show":    "pgbus queues NAME",
	"pgbus dlq stats":     "pgbus dlq summary",
	"pgbus dlq ls":        "pgbus dlq list",
	"pgbus circuit list":  "pgbus circuits",
	"pgbus circuit ls":    "pgbus circuits",
	"pgbus circuit show":  "pgbus circuits",
	"pgbus queue workers": "pgbus workers",
}

// settingsFlags are the retry-setting flags of queue create.
type settingsFlags struct {
	maxRetries        int
	visibilityTimeout time.Duration
	backoff           time.Duration
	backoffMax        time.Duration
	jitter            float64
	strategy          string
	deleteOnSuccess   bool
	archiveRetention  time.Duration
	deadRetention     time.Duration
}

func (s *settingsFlags) add(f *pflag.FlagSet) {
	f.IntVar(&s.maxRetries, "max-retries", 0, "runs per message before it is dead-lettered, 1..1000 (default 5)")
	durationVar(f, &s.visibilityTimeout, "visibility-timeout", 0, "how long a running message stays hidden, 1s..24h; also the default job timeout (default 30s)")
	durationVar(f, &s.backoff, "backoff", 0, "first retry delay, doubled on each failure (default 5s; exponential only: polynomial waits attempt^4+2 seconds)")
	durationVar(f, &s.backoffMax, "backoff-max", 0, "longest retry delay (default 5m)")
	f.Float64Var(&s.jitter, "jitter", 0, "spread of delays, 0..1: 0.15 is ±15% (polynomial: adds up to attempt×0.15 seconds) (default 0.15)")
	f.StringVar(&s.strategy, "strategy", "", "backoff strategy: exponential (--backoff doubling) or polynomial (attempt^4+2 seconds, --backoff unused) (default exponential)")
	f.BoolVar(&s.deleteOnSuccess, "delete-on-success", false, "delete finished messages instead of archiving them")
	durationVar(f, &s.archiveRetention, "archive-retention", 0, "keep archived (finished) messages this long, 1m..87600h (default 168h)")
	durationVar(f, &s.deadRetention, "dead-retention", 0, "keep discarded dead messages this long, 1m..87600h (default 720h)")
}

// given returns the settings the command line gives; nil fields were not
// given.
func (s *settingsFlags) given(f *pflag.FlagSet) config.Settings {
	var out config.Settings
	if f.Changed("max-retries") {
		out.MaxRetries = &s.maxRetries
	}
	dur := func(name string, v time.Duration) *config.Duration {
		if !f.Changed(name) {
			return nil
		}
		d := config.Duration(v)
		return &d
	}
	out.VisibilityTimeout = dur("visibility-timeout", s.visibilityTimeout)
	out.Backoff = dur("backoff", s.backoff)
	out.BackoffMax = dur("backoff-max", s.backoffMax)
	out.ArchiveRetention = dur("archive-retention", s.archiveRetention)
	out.DeadRetention = dur("dead-retention", s.deadRetention)
	if f.Changed("jitter") {
		out.Jitter = &s.jitter
	}
	if f.Changed("strategy") {
		out.Strategy = s.strategy
		if s.strategy == "" {
			out.Strategy = "(empty)"
		}
	}
	if f.Changed("delete-on-success") {
		out.DeleteOnSuccess = &s.deleteOnSuccess
	}
	return out
}

func (a *app) queueCreateCommand() *cobra.Command {
	var (
		sf         settingsFlags
		priorities int
	)
	cmd := &cobra.Command{
		Use:   "create QUEUE",
		Short: "Create a queue and its dead-letter queue, with retry settings",
		Long: `Create queue QUEUE and its dead-letter queue QUEUE_dlq (PGMQ tables), and
store its retry settings. Creating a queue that exists is not an error: the
settings given are applied to it and the others are kept.

--priorities N (2 to 10) makes a queue with N priority levels: sub-queues
QUEUE_p0 .. QUEUE_p<N-1>, read p0 first, sharing one DLQ; send to a level with
pgbus send --priority P. Levels are fixed when the queue is created.

Settings come from the flags, then from the configuration file's entry for
the queue (queues.QUEUE), then the defaults: 5 runs, backoff 5s doubling to
5m with ±15% jitter, visibility timeout 30s, archive on success, archived
messages kept 168h (7 days) and discarded dead messages 720h (30 days).`,
		Example: `  pgbus queue create orders
  pgbus queue create emails --max-retries 3 --backoff 30s --backoff-max 1h --jitter 0.2
  pgbus queue create alerts --priorities 3
  pgbus queue create webhooks --strategy polynomial --visibility-timeout 2m --delete-on-success`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			given := sf.given(cmd.Flags())
			if key, err := given.Check(); err != nil {
				err = ops.NameFields(err, func(field string) (string, bool) { return "--" + flagName(field), true })
				return usageError{fmt.Errorf("--%s %v", flagName(key), err)}
			}
			if cmd.Flags().Changed("priorities") && priorities == 0 {
				return usageError{fmt.Errorf("--priorities 0: give 2 to %d levels, or leave it out for a plain queue", ops.MaxPriorities)}
			}
			fileQ, _ := a.cfg.Queue(name)
			req := ops.QueueCreateRequest{Queue: name, Priorities: priorities, Settings: runner.SettingsChange(given.Over(fileQ.Settings))}
			if err := check(cmd, req); err != nil {
				return err
			}
			ctx, s, err := a.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := s.ops.QueueCreate(ctx, req)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printResult(a, res)
			}
			verb := "created queue %s and its dead-letter queue %s"
			switch {
			case !res.Created && res.Changed:
				verb = "queue %s (dead-letter queue %s) exists; settings updated"
			case !res.Created:
				verb = "queue %s (dead-letter queue %s) exists; settings unchanged"
			}
			if res.Priorities > 0 {
				verb += fmt.Sprintf(", %d priority levels", res.Priorities)
			}
			fmt.Fprintf(a.stdout, verb+": %s\n", res.Queue, res.DLQ, describeSettings(res.Settings))
			if len(res.Kept) > 0 {
				fmt.Fprintf(a.stdout, "kept as set before (give them to change them): %s\n", strings.Join(res.Kept, "; "))
			}
			return nil
		},
	}
	sf.add(cmd.Flags())
	cmd.Flags().IntVar(&priorities, "priorities", 0, fmt.Sprintf("priority levels, 2 to %d (default: none)", ops.MaxPriorities))
	cmd.Flags().Bool("json", false, "print the result as JSON")
	return cmd
}

func describeSettings(s ops.RetrySettings) string {
	backoff := fmt.Sprintf("exponential backoff %s ±%g%%", backoffRange(s), s.RetryBackoffJitter*100)
	if s.BackoffStrategy == "polynomial" {
		backoff = fmt.Sprintf("polynomial backoff (attempt⁴ + 2s, up to %s)", seconds(s.RetryBackoffMaxSeconds))
	}
	return fmt.Sprintf("max_retries %d, %s, visibility timeout %s, on success %s", s.MaxRetries, backoff, seconds(s.VisibilityTimeoutSeconds), s.OnSuccess)
}

func (a *app) queueDropCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "drop QUEUE --yes",
		Short: "Drop a queue with its messages, archive and dead-letter queue",
		Long: `Drop queue QUEUE and everything in it: live messages, its archive, and its
dead-letter queue QUEUE_dlq with its dead messages. This cannot be undone, so
it needs --yes; without it, pgbus says what would be lost and changes nothing.
A queue created again under the name goes on from the highest message id it
had, its levels' and DLQ's too, so that no new job takes an old job's id, nor
its default idempotency key (QUEUE:ID).`,
		Example: `  pgbus queue drop old_reports --yes`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return confirmFlag(run(a, cmd, (*ops.Service).QueueDrop, ops.QueueDropRequest{Queue: name, Confirm: yes}, func(res ops.QueueDropped) error {
				_, err := fmt.Fprintf(a.stdout, "dropped queue %s and its dead-letter queue %s\n", name, res.DLQ)
				return err
			}), yes)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: drop the queue and everything in it")
	return jsonFlag(cmd, ops.OpQueueDrop)
}

// confirmFlag words a refusal for want of confirmation as the CLI asks for
// it: with --yes.
func confirmFlag(err error, yes bool) error {
	if !yes && errors.Is(err, ops.ErrInvalid) && strings.Contains(err.Error(), "confirm") {
		return usageError{fmt.Errorf("refusing without --yes: %s", strings.Replace(err.Error(), ": confirm to", "; pass --yes to", 1))}
	}
	return err
}

func (a *app) queuePauseCommand(pause bool) *cobra.Command {
	verb, op := "resume", ops.OpQueueResume
	short := "Resume a paused queue: workers read it again"
	long := `Let workers read a paused queue again. Resuming a queue that runs is not
an error.`
	if pause {
		verb, op = "pause", ops.OpQueuePause
		short = "Pause a queue: workers stop reading it; messages stay"
		long = `Stop workers from reading the queue. Messages already running finish;
the rest wait, and senders can still send. Every worker process sees the
pause within its settings refresh (2s). Pausing a paused queue is not an error.`
	}
	return jsonFlag(&cobra.Command{
		Use:     verb + " QUEUE",
		Short:   short,
		Long:    long,
		Example: "  pgbus queue " + verb + " orders",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			op := (*ops.Service).QueueResume
			if pause {
				op = (*ops.Service).QueuePause
			}
			return run(a, cmd, op, ops.QueueRequest{Queue: name}, func(res ops.QueuePaused) error {
				state := map[bool]string{true: "paused", false: "running"}[pause]
				if !res.Changed {
					state = "already " + state
				} else {
					state += " now"
				}
				fmt.Fprintf(a.stdout, "queue %s is %s\n", name, state)
				if res.Workers != nil && !res.Workers.Served() {
					fmt.Fprintln(a.stdout, "note: "+res.Workers.Note)
					a.printNext(a.stdout, res.Next)
				}
				return nil
			})
		},
	}, op)
}

func (a *app) queuePurgeCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "purge QUEUE --yes",
		Short: "Delete every live message of a queue (not its archive or DLQ)",
		Long: `Delete every message waiting, running or retrying in QUEUE. Its archive
and its dead-letter queue are kept (see pgbus dlq discard and pgbus dlq purge
for those). This cannot be undone, so it needs --yes.`,
		Example: `  pgbus queue purge orders --yes`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return confirmFlag(run(a, cmd, (*ops.Service).QueuePurge, ops.QueuePurgeRequest{Queue: name, Confirm: yes}, func(res ops.QueuePurged) error {
				_, err := fmt.Fprintf(a.stdout, "deleted %s from queue %s\n", plural.Count(res.Deleted, "message", "messages"), name)
				return err
			}), yes)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: delete the messages for good")
	return jsonFlag(cmd, ops.OpQueuePurge)
}
