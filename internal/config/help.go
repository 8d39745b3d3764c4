package config

import (
	"strings"

	"github.com/pgbus/pgbus/handlers"
)

// Help documents the configuration file for pgbus help config: the order
// of settings, every key of the file, and the keys of each handler type,
// made from the option structs of package handlers so that it lists every
// key there is.
func Help() string {
	return help + "\n\n" + handlerHelp()
}

// help documents the configuration file and the order of settings.
const help = `pgbus reads an optional configuration file, given with --config FILE or the
environment variable PGBUS_CONFIG. It is YAML, decoded strictly: an unknown
key, a value of the wrong type, a negative number or an unknown handler type
stops pgbus at start with the file, line, key and reason (exit code 2),
even when a flag or an environment variable gives that setting for the
command, as the file is checked whole, for every command that reads it:
the refusal then names the flag or variable that overrides it. An empty
string (key: "") is refused for every setting, as an environment variable
set but empty is: leave the key out, or write nothing after it (key:), for
its default; only the values a handler or the alerts pass on as they are
(an exec command's env, headers) may be empty. A
top-level key starting with x- (x-defaults: &defaults {...}) is read as
nothing but the YAML anchors it holds, for the file's aliases and merges
(<<: *defaults) to reuse, as in compose files. The
reason quotes no secret: a URL's password, query and fragment, header and env
values, and the values a command gives to options such as --token are hidden.

Every setting is taken from the first of:
  1. a command-line flag           --database-url, --log-level, --poll-interval, ...
  2. an environment variable       DATABASE_URL, PGBUS_DATA_DIR,
                                   PGBUS_NO_EMBEDDED, PGBUS_LOG_FORMAT,
                                   PGBUS_LOG_LEVEL, PGBUS_QUEUES, PGBUS_HANDLER,
                                   PGBUS_CONCURRENCY, PGBUS_POLL_INTERVAL,
                                   PGBUS_DRAIN_TIMEOUT, PGBUS_NO_LISTEN,
                                   PGBUS_DATABASE_CALL_TIMEOUT,
                                   PGBUS_SAFE_FIELDS; and for settings the file
                                   does not hold: PGBUS_MCP_TOKEN,
                                   PGBUS_MCP_MAX_SESSIONS, PGBUS_TRUSTED_PROXIES,
                                   PGBUS_BASE_PATH, PGBUS_METRICS_ADDR.
                                   DATABASE_URL_FILE and PGBUS_MCP_TOKEN_FILE
                                   name a file holding the secret instead
                                   (a mounted secret; its final newline is
                                   left out); DATABASE_URL_FILE is read
                                   again for each new connection, so a
                                   rotated password needs no restart
  3. the configuration file
  4. the built-in default
A variable set but empty stops pgbus (exit code 2) rather than read as
unset: unset it to leave the setting to the file or the default.

Example (every key but the handler types' own, which follow it):

  database_url: postgres://app@db.internal:5432/app   # default: embedded PostgreSQL
                                    # ${NAME}: the environment variable NAME, as in
                                    # postgres://app:${DB_PASSWORD}@db/app
  data_dir: /var/lib/pgbus          # embedded PostgreSQL's directory (${NAME} too)
  no_embedded: false                # true: never start it; no database URL is an error
  log_format: auto                  # auto, text or json
  log_level: info                   # debug, info, warn or error
  safe_fields: [tenant, file.type]  # payload fields shown even when payloads are hidden
  audit_retention: 90d              # keep audit log entries this long (1m..87600h; days or hours), or off
  stats_retention: 7d               # keep per-minute counters of outcomes this long (24h..87600h), or off
  worker:
    poll_interval: 1s               # check idle queues this often (10ms..1h)
    drain_timeout: 30s              # on SIGTERM, let running jobs finish this long
    no_listen: false                # true: poll only, no LISTEN (PgBouncer in transaction mode)
    database_call_timeout: 30s      # give up a call the database leaves unanswered this long (1s..1h)
  queues:
    orders:                         # ^[a-z][a-z0-9_]*$, at most 43 characters
      concurrency: 10               # jobs at once per process (default 10)
      handler:
        type: demo                  # built-in handlers: demo, http, exec
        timeout: 10s                # one attempt's limit (see Handler blocks below)
        latency: 10ms               # the demo type's own key
      max_retries: 5                # runs before dead-lettering, 1..1000
      visibility_timeout: 30s       # 1s..24h
      strategy: exponential         # or polynomial: attempt^4+2 seconds, no backoff
      backoff: 5s                   # first retry delay (exponential), doubling...
      backoff_max: 5m               # ...up to this
      jitter: 0.15                  # ±15% (polynomial: + up to attempt*0.15s)
      delete_on_success: false      # true: delete finished jobs instead of archiving
      archive_retention: 7d         # keep archived (finished) messages this long (1m..87600h; days or hours)
      dead_retention: 30d           # keep discarded dead messages this long (1m..87600h; days or hours)
  alerts:                           # webhook alerts (see Alerts below)
    url: https://hooks.example.com/pgbus   # required to turn them on
    headers:
      Authorization: Bearer ${PAGER_TOKEN} # ${NAME}: the environment variable NAME
    format: json                    # json (the alert as JSON) or slack ({"text": ...})
    check_interval: 30s             # check health and dead-letter groups this often (1s..1h)
    growth_threshold: 100           # report a group that grows by this many...
    growth_window: 10m              # ...within this long (10s..168h)
    timeout: 10s                    # one post's limit (1s..5m)
    enabled: true                   # false: keep the block, send nothing

Durations take a unit: 500ms, 30s, 5m, 1h, or a whole number of days: 1d.

Database call timeout: every call the workers of pgbus work, pgbus serve and
pgbus demo make to the database (a read, a visibility extension, a write of
outcomes, a heartbeat, each statement of retention, a vacuum) gives up after
worker.database_call_timeout (default 30s): a connection that stops answering
without being closed, as after a failover behind a proxy, is then closed and
the call tried again on a new one. A read given up so may have claimed its
messages: they come back after their visibility timeout. The same timeout
bounds the MCP tools and resources of pgbus serve, the pages of the
dashboard (pgbus dashboard takes --database-call-timeout too) and every
other command (from PGBUS_DATABASE_CALL_TIMEOUT or the file): a read gives
up once it passes, a write once one of its statements goes unanswered that
long (what it did before stays done, and its error says how much); the call
fails saying the database did not answer, and the next one connects afresh.

Audit retention: the audit log records every write operation of the CLI,
the MCP tools and the dashboard. The processes that run workers (pgbus work,
pgbus serve with workers, pgbus demo) delete its entries older than
audit_retention in their retention pass (as they start, then every 10
minutes; one process at a time), a few thousand per statement. Default 2160h
(90 days); off keeps every entry. The process that runs the pass prunes with
its own setting, so give every process on a database the same.
stats_retention is the same for the per-minute counters of outcomes (one
row per queue, job kind and minute that settled a job, about 420 bytes),
which the last hour's figures and the dashboard's charts read, the last
24 hours at most: default 168h (7 days), at least 24h; off keeps every
counter.

Alerts: with an alerts block, pgbus work and pgbus serve with workers post
a JSON webhook when the health verdict changes or gives a new reason (a
second queue STALLED), when a new dead-letter group appears (queue, kind,
error class and error pattern), or when a group grows by growth_threshold
within growth_window; each check's changes are one post,
and a group is reported at most once per window, so a burst is one alert
(what it gains meanwhile is reported when the window ends).
One process at a time sends them: the first to start with alerts on, then
another when it stops. A failed post is retried with backoff from a
goroutine of its own, so workers never wait on it. ${NAME} in url and
headers is replaced by the environment variable NAME at start ($${NAME} is
a literal ${NAME}), as in the http handler's url and headers and the exec
handler's env; an unset one stops pgbus with the key that uses it, and so
does a value that would change the url's structure where it stands (a #, a
? before more of the url, a & within a query parameter), as in the http
handler's url: write them %23, %3F and %26 in the variable.

Job kinds: a queue's handler block runs every message of its queue,
whatever its kind (the pgbus_kind header; an exec handler's command gets it
in PGBUS_KIND), under the queue's retry settings and the block's rules,
which go by status or exit code (on_status, on_exit), not by kind. The file
has no per-kind policy: a Go program that embeds the engine gives a kind a
handler and a policy of its own with engine.Client.Handle(kind, fn,
engine.HandlerOptions{Retry: &policy, Policies: ..., Timeout: ...,
Breaker: ...}), which takes that kind's messages on every queue the client
works, ahead of the queue's handler (handlers.Build turns a handler block
into fn and its options).

pgbus work works the file's queues (unless --queue or PGBUS_QUEUES names
others), creating those that are missing and storing their retry settings in
the database, where every worker process shares them. pgbus queue create NAME
uses the file's settings for NAME under its own flags.`

// handlerHelp documents the keys of handler blocks, made from the option
// structs of package handlers so that it lists every key there is.
func handlerHelp() string {
	var b strings.Builder
	b.WriteString("Handler blocks (queues.NAME.handler) take these keys:\n\n")
	writeOptions(&b, handlers.CommonOptions(), 2)
	b.WriteString("\nand the keys of their type:\n")
	for _, t := range handlers.Docs() {
		b.WriteString("\n  type: " + t.Type + "\n")
		writeWrapped(&b, t.Summary, 6)
		writeOptions(&b, t.Options, 4)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func writeOptions(b *strings.Builder, opts []handlers.Option, indent int) {
	for _, o := range opts {
		b.WriteString(strings.Repeat(" ", indent) + o.Key + ": " + o.Value + "\n")
		writeWrapped(b, o.Doc, indent+4)
		writeOptions(b, o.Options, indent+4)
	}
}

// writeWrapped writes text in lines of at most 80 columns, indented.
func writeWrapped(b *strings.Builder, text string, indent int) {
	const width = 80
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && indent+len(line)+1+len(word) > width {
			b.WriteString(strings.Repeat(" ", indent) + line + "\n")
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		b.WriteString(strings.Repeat(" ", indent) + line + "\n")
	}
}
