// Package config reads pgbus's optional configuration file: YAML, decoded
// strictly (an unknown key is an error, not a silent no-op), with every
// problem reported as file:line: key: reason.
//
// A file looks like this:
//
//	database_url: postgres://app@db.internal/app   # or leave it to DATABASE_URL
//	log_level: info
//	worker:
//	  poll_interval: 1s
//	  drain_timeout: 30s
//	  database_call_timeout: 30s
//	queues:
//	  orders:
//	    concurrency: 10
//	    handler: {type: demo}
//	    max_retries: 5
//	    backoff: 5s
//	    backoff_max: 5m
//
// Values given as command-line flags win over environment variables, which
// win over the file, which wins over the built-in defaults. Package config
// only reads and checks the file; the command line applies that order.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/envref"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/yamlerr"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// MaxFileBytes bounds the size of a configuration file.
const MaxFileBytes = 1 << 20

// File is a parsed and checked configuration file. Its zero value is an
// empty configuration, valid everywhere.
type File struct {
	// DatabaseURL is the PostgreSQL URL; empty starts the embedded server.
	DatabaseURL string `yaml:"database_url,omitempty"`
	// DataDir is the embedded server's data directory.
	DataDir string `yaml:"data_dir,omitempty"`
	// NoEmbedded, when true, forbids the embedded server: without a
	// database URL pgbus stops rather than start one.
	NoEmbedded *bool `yaml:"no_embedded"`
	// LogFormat is auto, text or json; LogLevel debug, info, warn or error.
	LogFormat string `yaml:"log_format,omitempty"`
	LogLevel  string `yaml:"log_level,omitempty"`
	// Worker tunes pgbus work (and the workers of pgbus serve).
	Worker Worker `yaml:"worker"`
	// Queues are the queues this installation works, by name.
	Queues map[string]Queue `yaml:"queues"`
	// SafeFields are payload fields (keys joined by dots: tenant,
	// file.type) whose values pgbus shows even when payloads are hidden.
	SafeFields []string `yaml:"safe_fields"`
	// Alerts configures the webhook alerts of the worker processes; nil
	// when the file has no alerts block.
	Alerts *Alerts `yaml:"alerts,omitempty"`
	// AuditRetention is how long the audit log keeps an entry, pruned by
	// the retention of the worker processes; nil when the file does not
	// say (engine.DefaultAuditRetention, 90 days).
	AuditRetention *Retention `yaml:"audit_retention"`
	// StatsRetention is how long the per-minute counters of outcomes are
	// kept, pruned by the retention of the worker processes; nil when the
	// file does not say (engine.DefaultStatsRetention, 7 days).
	StatsRetention *Retention `yaml:"stats_retention"`
	// Extensions are the file's top-level keys that start with x- (as
	// x-defaults: &defaults {...}), which pgbus reads nothing of: blocks
	// that hold YAML anchors for the rest of the file to reuse, as compose
	// files write them. Any other key pgbus does not know is refused.
	Extensions map[string]any `yaml:",inline"`

	path   string
	lines  map[string]int    // key path -> line of the key
	tags   map[string]string // key path -> YAML tag of its value
	values map[string]string // key path -> its value, when a scalar
}

// Worker holds settings of the worker processes.
type Worker struct {
	// PollInterval is how often idle queues are checked for messages
	// without a notification.
	PollInterval *Duration `yaml:"poll_interval"`
	// DrainTimeout is how long running jobs get to finish on shutdown.
	DrainTimeout *Duration `yaml:"drain_timeout"`
	// NoListen, when true, wakes idle queues by polling only, without
	// LISTEN/NOTIFY (behind PgBouncer in transaction mode).
	NoListen *bool `yaml:"no_listen"`
	// DatabaseCallTimeout bounds each database call of the workers' loops
	// (engine.Config.DatabaseCallTimeout).
	DatabaseCallTimeout *Duration `yaml:"database_call_timeout"`
}

// MaxDatabaseCallTimeout is the longest worker.database_call_timeout: a
// connection that stops answering holds the workers' calls that long
// before it is closed.
const MaxDatabaseCallTimeout = time.Hour

// DatabaseCallTimeoutRange is the range of worker.database_call_timeout,
// from engine.MinDatabaseCallTimeout, as errors name it; DatabaseCallTimeoutWhy
// says in them what the setting is for, since a short one fails calls a
// busy but healthy database answers.
const (
	DatabaseCallTimeoutRange = "1s..1h"
	DatabaseCallTimeoutWhy   = "it is how long a database call of the workers, tools, pages or commands may go unanswered before it is given up and its connection closed, and a busy but healthy database may take seconds; give for example 30s"
)

// Queue configures one queue: how many of its jobs run at once, the handler
// that runs them, and its retry settings.
type Queue struct {
	// Concurrency is how many of its messages run at once in one process;
	// 0 means the default (10).
	Concurrency int `yaml:"concurrency,omitempty"`
	// Handler runs the queue's jobs; nil when the file gives none (then
	// pgbus work needs --handler for this queue).
	Handler *handlers.Spec `yaml:"handler"`
	// Settings are stored in the database (shared by every worker process)
	// when pgbus work or pgbus queue create applies them.
	Settings `yaml:",inline"`
}

// Settings are the retry and delivery settings of a queue. Nil fields (and
// an empty Strategy) are not set and keep the stored or default value.
type Settings struct {
	MaxRetries        *int      `yaml:"max_retries" json:"max_retries,omitempty"`
	VisibilityTimeout *Duration `yaml:"visibility_timeout" json:"visibility_timeout,omitempty"`
	Backoff           *Duration `yaml:"backoff" json:"backoff,omitempty"`
	BackoffMax        *Duration `yaml:"backoff_max" json:"backoff_max,omitempty"`
	Jitter            *float64  `yaml:"jitter" json:"jitter,omitempty"`
	Strategy          string    `yaml:"strategy,omitempty" json:"strategy,omitempty"`
	DeleteOnSuccess   *bool     `yaml:"delete_on_success" json:"delete_on_success,omitempty"`
	ArchiveRetention  *Duration `yaml:"archive_retention" json:"archive_retention,omitempty"`
	DeadRetention     *Duration `yaml:"dead_retention" json:"dead_retention,omitempty"`
}

// IsZero reports whether no setting is given.
func (s Settings) IsZero() bool { return s == Settings{} }

// Over returns s laid over base: every field s gives replaces base's, the
// others stay. Nil fields of s keep base's.
func (s Settings) Over(base Settings) Settings {
	if s.MaxRetries != nil {
		base.MaxRetries = s.MaxRetries
	}
	if s.VisibilityTimeout != nil {
		base.VisibilityTimeout = s.VisibilityTimeout
	}
	if s.Backoff != nil {
		base.Backoff = s.Backoff
	}
	if s.BackoffMax != nil {
		base.BackoffMax = s.BackoffMax
	}
	if s.Jitter != nil {
		base.Jitter = s.Jitter
	}
	if s.Strategy != "" {
		base.Strategy = s.Strategy
	}
	if s.DeleteOnSuccess != nil {
		base.DeleteOnSuccess = s.DeleteOnSuccess
	}
	if s.ArchiveRetention != nil {
		base.ArchiveRetention = s.ArchiveRetention
	}
	if s.DeadRetention != nil {
		base.DeadRetention = s.DeadRetention
	}
	return base
}

// Apply returns q with the settings s gives. A backoff_max below a new
// backoff is raised to it, so that giving only a long backoff is valid.
func (s Settings) Apply(q store.QueueSettings) store.QueueSettings {
	if s.MaxRetries != nil {
		q.MaxRetries = *s.MaxRetries
	}
	if s.VisibilityTimeout != nil {
		q.VisibilityTimeout = s.VisibilityTimeout.D()
	}
	if s.Backoff != nil {
		q.RetryBackoff = s.Backoff.D()
		if s.BackoffMax == nil && q.RetryBackoffMax < q.RetryBackoff {
			q.RetryBackoffMax = q.RetryBackoff
		}
	}
	if s.BackoffMax != nil {
		q.RetryBackoffMax = s.BackoffMax.D()
	}
	if s.Jitter != nil {
		q.RetryBackoffJitter = *s.Jitter
	}
	if s.Strategy != "" {
		q.BackoffStrategy = s.Strategy
	}
	if s.DeleteOnSuccess != nil {
		q.DeleteOnSuccess = *s.DeleteOnSuccess
	}
	if s.ArchiveRetention != nil {
		q.ArchiveRetention = s.ArchiveRetention.D()
	}
	if s.DeadRetention != nil {
		q.DeadRetention = s.DeadRetention.D()
	}
	return q
}

// Check validates the settings one key at a time, so that the error can
// name the key (as it is spelled in the file and, with dashes, as a flag).
// It returns the key and the reason of the first problem, or "" and nil.
// A reason that names another key is an *ops.Error with that key in its
// Names, for the command line to name as its flag (ops.NameFields).
func (s Settings) Check() (key string, err error) {
	switch {
	case s.MaxRetries != nil && (*s.MaxRetries < 1 || *s.MaxRetries > 1000):
		return "max_retries", fmt.Errorf("%d is out of range 1..1000 (the runs a message gets; 1 runs it once, without retries)", *s.MaxRetries)
	case s.VisibilityTimeout != nil && (s.VisibilityTimeout.D() < time.Second || s.VisibilityTimeout.D() > 24*time.Hour):
		return "visibility_timeout", fmt.Errorf("%s is out of range 1s..24h", ops.FormatAge(s.VisibilityTimeout.D()))
	case s.Backoff != nil && (s.Backoff.D() < 0 || s.Backoff.D() > 24*time.Hour):
		return "backoff", fmt.Errorf("%s is out of range 0s..24h", ops.FormatAge(s.Backoff.D()))
	case s.BackoffMax != nil && (s.BackoffMax.D() < 0 || s.BackoffMax.D() > 7*24*time.Hour):
		return "backoff_max", fmt.Errorf("%s is out of range 0s..168h", ops.FormatAge(s.BackoffMax.D()))
	case s.Backoff != nil && s.BackoffMax != nil && s.BackoffMax.D() < s.Backoff.D() && s.Strategy != store.BackoffPolynomial:
		return "backoff_max", &ops.Error{Msg: fmt.Sprintf("%s is less than backoff %s; it caps every delay, so make it at least the backoff", ops.FormatAge(s.BackoffMax.D()), ops.FormatAge(s.Backoff.D())),
			Err: ops.ErrInvalid, Names: []string{"backoff"}}
	case s.Jitter != nil && !(*s.Jitter >= 0 && *s.Jitter <= 1):
		return "jitter", fmt.Errorf("%v is out of range 0..1 (0.15 spreads delays by ±15%%)", *s.Jitter)
	case s.Strategy != "" && s.Strategy != store.BackoffExponential && s.Strategy != store.BackoffPolynomial:
		return "strategy", fmt.Errorf("%q is not a backoff strategy; use %s or %s", s.Strategy, store.BackoffExponential, store.BackoffPolynomial)
	case s.ArchiveRetention != nil && !retentionInRange(s.ArchiveRetention.D()):
		return "archive_retention", fmt.Errorf("%s is out of range 1m..87600h (ten years); 168h keeps a week", ops.FormatAge(s.ArchiveRetention.D()))
	case s.DeadRetention != nil && !retentionInRange(s.DeadRetention.D()):
		return "dead_retention", fmt.Errorf("%s is out of range 1m..87600h (ten years); 720h keeps 30 days", ops.FormatAge(s.DeadRetention.D()))
	}
	return "", nil
}

// retentionInRange reports whether d is a retention a queue may keep.
func retentionInRange(d time.Duration) bool { return d >= time.Minute && d <= 3650*24*time.Hour }

// Retention is how long something is kept: a duration with a unit
// (2160h), or off to keep it for ever.
type Retention time.Duration

// RetentionOff is the Retention written off: kept for ever.
const RetentionOff Retention = -1

// Off reports whether r keeps for ever.
func (r Retention) Off() bool { return r < 0 }

// D returns the retention as a time.Duration: negative for off.
func (r Retention) D() time.Duration { return time.Duration(r) }

// String formats the retention as the file writes it.
func (r Retention) String() string {
	if r.Off() {
		return "off"
	}
	return time.Duration(r).String()
}

// UnmarshalYAML reads a duration with a unit, or off. Errors carry the
// line, as the decoder's own do.
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	fail := func(format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
	}
	if n.Kind != yaml.ScalarNode {
		return fail("expected a duration such as 2160h, or off, got a %s", yamlerr.Kind(n))
	}
	v := strings.TrimSpace(n.Value)
	if strings.EqualFold(v, "off") {
		*r = RetentionOff
		return nil
	}
	if strings.HasPrefix(v, "-") {
		return fail("%q is negative: write a duration such as 90d or 2160h, or off to keep every entry", v)
	}
	d, err := ParseDuration(v)
	if err != nil {
		return fail("%q is not a duration or off: write days or hours, such as 90d or 2160h, or off to keep every entry", v)
	}
	*r = Retention(d.D())
	return nil
}

// EngineAuditRetention returns audit_retention as
// engine.Config.AuditRetention takes it: 0 (the engine's default, 90
// days) when the file does not give it, negative for off.
func (f *File) EngineAuditRetention() time.Duration {
	if f == nil || f.AuditRetention == nil {
		return 0
	}
	return f.AuditRetention.D()
}

// EngineStatsRetention returns stats_retention as
// engine.Config.StatsRetention takes it: 0 (the engine's default, 7 days)
// when the file does not give it, negative for off.
func (f *File) EngineStatsRetention() time.Duration {
	if f == nil || f.StatsRetention == nil {
		return 0
	}
	return f.StatsRetention.D()
}

// Duration is a time.Duration written with a unit ("500ms", "30s", "5m"),
// the same type as in handler blocks.
type Duration = handlers.Duration

// ParseDuration parses a duration with a unit, or a bare 0; negative
// values are rejected.
func ParseDuration(s string) (Duration, error) { return handlers.ParseDuration(s) }

// Error is a problem with a configuration file: where, which key, and why.
type Error struct {
	File string
	Line int // 0 when unknown
	// Column, from 1, is known for some problems only (0 otherwise): those
	// within a line that is not otherwise easy to see, such as a tab.
	Column int
	Key    string
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config ")
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Reason)
	return b.String()
}

// Path returns the file's path as given to Load; "" for none.
func (f *File) Path() string {
	if f == nil {
		return ""
	}
	return f.path
}

// Errorf returns an *Error about key (a dotted path such as
// queues.orders.handler), with the line of that key when the file has it.
func (f *File) Errorf(key, format string, args ...any) error {
	return f.errorAt(key, key, fmt.Sprintf(format, args...))
}

// errorAt returns an *Error about key with the line of the key at, a
// path at or below key (an entry the reason names).
func (f *File) errorAt(key, at, reason string) *Error {
	return &Error{File: f.Path(), Key: key, Reason: reason, Line: f.lineOf(at)}
}

// lineOf returns the line of key, or of the nearest key above it the file
// has; 0 when it has none.
func (f *File) lineOf(key string) int {
	if f == nil {
		return 0
	}
	for k := key; k != ""; k = parentKey(k) {
		if line, ok := f.lines[k]; ok {
			return line
		}
	}
	return 0
}

// parentKey returns the path k is under: a.b of a.b.c, and of a.b[2],
// an item of a list, which has no line of its own.
func parentKey(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i > 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// placeValue returns the file's value of key, database_url or data_dir,
// as written.
func (f *File) placeValue(key string) string {
	switch key {
	case "database_url":
		return f.DatabaseURL
	case "data_dir":
		return f.DataDir
	}
	return ""
}

// Expanded returns the file's value of key, database_url or data_dir,
// with each ${NAME} in it replaced by the environment variable NAME
// ($${NAME} for a literal ${NAME}), as in a handler's url: "" when the
// file does not give it. A variable that is not set, or empty, is an
// *Error naming it, the key and its line, and so is a value that would
// change the structure of a database URL where it stands (a #, a ? before
// more of the URL, a & within a query parameter). It is asked for only
// when no flag or environment variable gives the setting first, so that
// the file's variables are needed only then.
func (f *File) Expanded(key string) (string, error) {
	written := f.placeValue(key)
	v, vars, err := envref.Expand(written)
	if err != nil {
		return "", f.Errorf(key, "%v", err)
	}
	if key == "database_url" && isURLForm(written) {
		if err := envref.CheckURLValues(written, vars); err != nil {
			return "", f.Errorf(key, "%v", err)
		}
	}
	return v, nil
}

// isURLForm reports whether a database URL is written as a URL,
// postgres://..., rather than as keyword=value pairs.
func isURLForm(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// QueueNames returns the configured queues, sorted.
func (f *File) QueueNames() []string {
	if f == nil {
		return nil
	}
	names := make([]string, 0, len(f.Queues))
	for n := range f.Queues {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Queue returns the configuration of a queue and whether the file has it.
func (f *File) Queue(name string) (Queue, bool) {
	if f == nil {
		return Queue{}, false
	}
	q, ok := f.Queues[name]
	return q, ok
}

// Load reads, decodes and checks the file at path. Every error is an
// *Error naming the file, and where it can, the line and key.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		reason := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return nil, &Error{File: path, Reason: "cannot read it: " + reason + " (check --config or PGBUS_CONFIG)"}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &Error{File: path, Reason: "is a directory: give the path of the configuration file itself (check --config or PGBUS_CONFIG)"}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Reason: "cannot read it: " + err.Error()}
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Reason: fmt.Sprintf("is larger than %d bytes; a configuration file is small", MaxFileBytes)}
	}
	return Parse(path, data)
}

// Parse decodes and checks a configuration held in memory; name is used
// in errors.
func Parse(name string, data []byte) (*File, error) {
	cfg := &File{path: name, lines: map[string]int{}, tags: map[string]string{}, values: map[string]string{}}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, cfg.yamlError(data, err)
	}
	indexLines(&root, "", cfg.lines, cfg.tags, cfg.values)
	if err := cfg.checkEmpty(); err != nil {
		return nil, err
	}
	quoted := unquoteBools(&root)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && err != io.EOF {
		if err = quoted.others(err); err != nil {
			return nil, cfg.yamlError(data, err)
		}
		// Only quoted booleans were refused: decode again the tree that
		// holds them as booleans, whose keys the decode above checked.
		*cfg = File{path: cfg.path, lines: cfg.lines, tags: cfg.tags, values: cfg.values}
		if err := root.Decode(cfg); err != nil {
			return nil, cfg.yamlError(data, err)
		}
	}
	// Documents after the first that hold nothing (a file that ends with
	// ---, as files put together from templates often do) are no second
	// configuration.
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if err == io.EOF {
			break
		}
		if err != nil || !emptyDocument(&extra) {
			return nil, &Error{File: name, Line: extra.Line, Reason: "holds more than one YAML document; put everything in one"}
		}
	}
	if err := cfg.checkExtensions(); err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkEmpty refuses the first key of the file (by line) whose value is
// an empty string (key: ""), whatever the key: read as the default, as
// some keys read it while others refused it in words of their type, a
// template whose variable came through empty would run otherwise than it
// was told, as an environment variable set but empty is refused too. A
// key with nothing after it (key:, YAML's null) is a key left out. The
// values a handler passes on as they are, its command's environment
// (env) and the headers of the http handler and of the alerts, may be
// empty; so may anything in an x- block, of which pgbus reads nothing.
// database_url's own check says more of it.
func (f *File) checkEmpty() error {
	var first string
	for key, v := range f.values {
		if v != "" || f.tags[key] != "!!str" || key == "database_url" || strings.HasPrefix(key, ExtensionPrefix) || passedOn(key) {
			continue
		}
		if first == "" || f.lines[key] < f.lines[first] || f.lines[key] == f.lines[first] && key < first {
			first = key
		}
	}
	if first == "" {
		return nil
	}
	return f.Errorf(first, `is empty (""): give a value, or leave the key out (or write nothing after it) for its default`)
}

// passedOn reports whether key is one whose value a handler or the
// alerts pass on as it is, which may be empty: an exec handler's env, the
// headers of the http handler and of the alerts.
func passedOn(key string) bool {
	parts := strings.Split(key, ".")
	for i, p := range parts[:len(parts)-1] {
		if p == "headers" || p == "env" && i > 0 && parts[i-1] == "handler" {
			return true
		}
	}
	return false
}

// ExtensionPrefix starts the top-level keys of a file that pgbus reads
// nothing of (File.Extensions).
const ExtensionPrefix = "x-"

// checkExtensions refuses the top-level keys the decoder kept aside that
// do not start with ExtensionPrefix, as the decoder refuses unknown keys
// elsewhere: the first of them in the file.
func (f *File) checkExtensions() error {
	var unknown string
	n := 0
	for key := range f.Extensions {
		if strings.HasPrefix(key, ExtensionPrefix) {
			continue
		}
		n++
		if unknown == "" || f.lines[key] < f.lines[unknown] {
			unknown = key
		}
	}
	if unknown == "" {
		return nil
	}
	reason := fmt.Sprintf("unknown key %q; known keys here: %s, and keys starting with %s, which pgbus ignores (for YAML anchors to reuse)", unknown, strings.Join(knownKeys["config.File"], ", "), ExtensionPrefix)
	if n > 1 {
		reason += " (and " + plural.Count(n-1, "more problem", "more problems") + ")"
	}
	return &Error{File: f.path, Line: f.lines[unknown], Key: unknown, Reason: reason}
}

// emptyDocument reports whether n is a document with nothing written in
// it but comments.
func emptyDocument(n *yaml.Node) bool {
	if n.Kind != yaml.DocumentNode || len(n.Content) != 1 {
		return false
	}
	c := n.Content[0]
	return c.Kind == yaml.ScalarNode && c.ShortTag() == "!!null" && c.Value == "" && c.Anchor == "" && c.Style&yaml.TaggedStyle == 0
}

// quotedBools holds the refusals the decoder makes of the quoted true
// and false that unquoteBools rewrote: a boolean key in the file reads
// them as a handler's options do (yamlerr.QuotedBool).
type quotedBools map[string]bool

// unquoteBools rewrites in root, decoded into a File, every quoted true
// or false of a boolean key as the boolean it says, and returns the
// decoder's refusals of them as written.
func unquoteBools(root *yaml.Node) quotedBools {
	q := quotedBools{}
	w := boolWalk{quoted: q, budget: maxIndexedNodes, open: map[*yaml.Node]bool{}}
	w.node(root, reflect.TypeFor[File]())
	return q
}

// others returns err without the refusals of q: nil when err held no
// other problem.
func (q quotedBools) others(err error) error {
	var te *yaml.TypeError
	if len(q) == 0 || !errors.As(err, &te) {
		return err
	}
	var rest []string
	for _, m := range te.Errors {
		if !q[m] {
			rest = append(rest, m)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return &yaml.TypeError{Errors: rest}
}

// boolWalk is the state of unquoteBools; open and budget bound it as the
// indexer's bound indexLines.
type boolWalk struct {
	quoted quotedBools
	budget int
	open   map[*yaml.Node]bool
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// node walks n, decoded into a value of type t.
func (w *boolWalk) node(n *yaml.Node, t reflect.Type) {
	n = resolveAlias(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.budget--; w.budget < 0 || w.open[n] || reflect.PointerTo(t).Implements(unmarshalerType) {
		return // a type that decodes itself (a handler block) reads its own booleans
	}
	w.open[n] = true
	defer delete(w.open, n)
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			w.node(c, t)
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i := range n.Content {
				w.value(n, i, t.Elem())
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			switch {
			case k.ShortTag() == "!!merge":
				w.merged(n.Content[i+1], t)
			case t.Kind() == reflect.Map:
				w.value(n, i+1, t.Elem())
			case t.Kind() == reflect.Struct:
				if ft, ok := fieldType(t, k.Value); ok {
					w.value(n, i+1, ft)
				}
			}
		}
	}
}

// merged walks what a merge key (<<) brings into a mapping of type t: a
// mapping, or a list of them.
func (w *boolWalk) merged(m *yaml.Node, t reflect.Type) {
	m = resolveAlias(m)
	if m.Kind == yaml.SequenceNode {
		for _, c := range m.Content {
			w.node(c, t)
		}
		return
	}
	w.node(m, t)
}

// value rewrites parent.Content[i], decoded into a value of type t, when
// it is a quoted true or false of a boolean, and walks it otherwise.
func (w *boolWalk) value(parent *yaml.Node, i int, t reflect.Type) {
	v := resolveAlias(parent.Content[i])
	if b := yamlerr.QuotedBool(v, t); b != v {
		w.quoted[fmt.Sprintf("line %d: cannot unmarshal !!str `%s` into bool", v.Line, v.Value)] = true
		parent.Content[i] = b
		return
	}
	w.node(v, t)
}

// fieldType returns the type of the field of struct t that key decodes
// into, fields inlined included.
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		fld := t.Field(i)
		if !fld.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(fld.Tag.Get("yaml"), ",")
		if opts == "inline" && fld.Type.Kind() == reflect.Struct {
			if ft, ok := fieldType(fld.Type, key); ok {
				return ft, true
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(fld.Name)
		}
		if name == key {
			return fld.Type, true
		}
	}
	return nil, false
}

// indexLines records the line of every mapping key, and the tag of its
// value, by the key's dotted path. Aliases are followed and merge keys
// (<<: *defaults) are read as YAML reads them: keys of the mapping itself
// first, then the merged ones it lacks, so that the checks on tags see the
// values the decoder uses.
func indexLines(n *yaml.Node, prefix string, out map[string]int, tags, values map[string]string) {
	ix := indexer{lines: out, tags: tags, values: values, budget: maxIndexedNodes, open: map[*yaml.Node]bool{}}
	ix.node(n, prefix)
}

// maxIndexedNodes bounds the nodes indexLines visits, aliases followed: a
// small file of aliases of aliases names millions (the decoder refuses
// such a file afterwards).
const maxIndexedNodes = 100_000

// indexer is the state of indexLines: open holds the mappings being
// indexed, so that an alias of one inside itself (a: &a {x: *a}), which
// the decoder refuses, is not followed for ever.
type indexer struct {
	lines  map[string]int
	tags   map[string]string
	values map[string]string
	budget int
	open   map[*yaml.Node]bool
}

func (ix *indexer) node(n *yaml.Node, prefix string) {
	n = resolveAlias(n)
	if ix.budget--; ix.budget < 0 || ix.open[n] {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			ix.node(c, prefix)
		}
	case yaml.MappingNode:
		ix.open[n] = true
		defer delete(ix.open, n)
		var merged []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolveAlias(n.Content[i+1])
			if k.ShortTag() == "!!merge" {
				merged = append(merged, v)
				continue
			}
			ix.key(k, v, prefix)
		}
		for _, m := range merged {
			ix.merged(m, prefix)
		}
	}
}

// merged indexes the keys a merge brings in that the mapping does not set
// itself; a merge is shallow, so a key set in both is the mapping's with
// all below it.
func (ix *indexer) merged(m *yaml.Node, prefix string) {
	if ix.budget--; ix.budget < 0 || ix.open[m] {
		return
	}
	switch m.Kind {
	case yaml.SequenceNode: // <<: [*a, *b]: the first one that has a key gives it
		for _, c := range m.Content {
			ix.merged(resolveAlias(c), prefix)
		}
	case yaml.MappingNode:
		ix.open[m] = true
		defer delete(ix.open, m)
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], resolveAlias(m.Content[i+1])
			if k.ShortTag() == "!!merge" {
				ix.merged(v, prefix)
				continue
			}
			ix.key(k, v, prefix)
		}
	}
}

// key records key k with value v under prefix, unless the path has been
// recorded already, and indexes what is below it.
func (ix *indexer) key(k, v *yaml.Node, prefix string) {
	path := k.Value
	if prefix != "" {
		path = prefix + "." + k.Value
	}
	if _, seen := ix.lines[path]; seen {
		return
	}
	ix.lines[path] = k.Line
	ix.tags[path] = v.ShortTag()
	if v.Kind == yaml.ScalarNode {
		ix.values[path] = v.Value
	}
	ix.node(v, path)
}

// resolveAlias returns the node an alias stands for.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

var unknownField = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)

// yamlError turns the decoder's messages about data into an *Error with
// the line, the key and a reason in plain words.
func (f *File) yamlError(data []byte, err error) error {
	if line, col, reason, ok := yamlerr.TabsIndent(data, err); ok {
		return &Error{File: f.path, Line: line, Column: col, Reason: reason}
	}
	line, msg, more := yamlerr.First(err)
	if line == 0 {
		return &Error{File: f.path, Reason: msg}
	}
	e := &Error{File: f.path, Line: line}
	if u := unknownField.FindStringSubmatch(msg); u != nil {
		e.Key = f.keyAt(line, u[1], "")
		e.Reason = fmt.Sprintf("unknown key %q", u[1])
		if known := knownKeys[u[2]]; len(known) > 0 {
			e.Reason += "; known keys here: " + strings.Join(known, ", ")
		}
	} else {
		e.Key = f.keyAt(line, "", msg)
		if m := duplicateKey.FindStringSubmatch(msg); m != nil {
			if at, err := strconv.Atoi(m[2]); err == nil {
				e.Key = f.keyAt(at, m[1], "")
			}
		}
		e.Reason = yamlerr.Words(msg)
		if name, ok := strings.CutPrefix(e.Key, "alerts.headers."); ok {
			// After "...X-Api-Key: ", the reason would read as the
			// header's value, and its first word be redacted (see
			// checkAlerts).
			e.Key, e.Reason = "alerts.headers", "in header "+name+", "+e.Reason
		}
	}
	if more > 0 {
		e.Reason += " (and " + plural.Count(more, "more problem", "more problems") + ")"
	}
	return e
}

// keyAt finds the key path on a line, preferring one ending in name, and
// of keys on one line (a flow mapping, {a: 1s, b: -5s}) the one whose value
// msg quotes; when no key is on that line (a list item, a value on the
// next line), the nearest key above it.
func (f *File) keyAt(line int, name, msg string) string {
	best, bestLine, quoted := "", 0, false
	for k, l := range f.lines {
		if l > line {
			continue
		}
		last := k[strings.LastIndexByte(k, '.')+1:]
		if l == line && name != "" && last != name {
			continue
		}
		v, scalar := f.values[k]
		q := l == line && msg != "" && scalar && v != "" && strings.Contains(msg, strconv.Quote(v))
		switch {
		case l > bestLine, l == bestLine && q && !quoted, l == bestLine && q == quoted && len(k) > len(best):
			best, bestLine, quoted = k, l, q
		}
	}
	return best
}

// duplicateKey is the decoder's message for a key given twice in a
// mapping, with the key and the line of its first use.
var duplicateKey = regexp.MustCompile(`mapping key "([^"]*)" already defined at line (\d+)`)

// knownKeys lists, by Go type name as the decoder prints it, the keys a
// mapping of that type accepts.
var knownKeys = map[string][]string{}

func init() {
	for _, v := range []any{File{}, Worker{}, Queue{}, Alerts{}} {
		t := reflect.TypeOf(v)
		knownKeys[t.String()] = yamlKeys(t)
	}
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		fld := t.Field(i)
		if !fld.IsExported() {
			continue
		}
		tag := fld.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" && fld.Type.Kind() == reflect.Struct {
			keys = append(keys, yamlKeys(fld.Type)...)
			continue
		}
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// given reports whether the file writes a value for key (a dotted path),
// not just the key with nothing after it.
func (f *File) given(key string) bool {
	tag, ok := f.tags[key]
	return ok && tag != "!!null"
}

// check validates values that decoded but make no sense.
func (f *File) check() error {
	if _, given := f.lines["database_url"]; given && strings.TrimSpace(f.DatabaseURL) == "" {
		// Read as no URL, it would start the embedded PostgreSQL: a
		// template whose variable was left empty would send jobs there.
		return f.Errorf("database_url", "is empty: give the database's URL, or leave the key out to use DATABASE_URL or the embedded PostgreSQL")
	}
	for _, key := range []string{"database_url", "data_dir"} {
		if err := envref.Check(f.placeValue(key)); err != nil {
			return f.Errorf(key, "%v", err)
		}
	}
	for _, field := range f.SafeFields {
		if strings.TrimSpace(field) == "" {
			return f.Errorf("safe_fields", `holds an empty field (""): name a payload field in each entry, or leave the key out for none`)
		}
	}
	switch f.LogFormat {
	case "", "auto", "text", "json":
	default:
		return f.Errorf("log_format", "%q: use auto, text or json", f.LogFormat)
	}
	// As --log-level and PGBUS_LOG_LEVEL read it: in any case.
	var level slog.Level
	if f.LogLevel != "" && level.UnmarshalText([]byte(f.LogLevel)) != nil {
		return f.Errorf("log_level", "%q: use debug, info, warn or error", f.LogLevel)
	}
	if d := f.Worker.PollInterval; d != nil && (d.D() < 10*time.Millisecond || d.D() > time.Hour) {
		return f.Errorf("worker.poll_interval", "%s is out of range 10ms..1h", ops.FormatAge(d.D()))
	}
	if d := f.Worker.DrainTimeout; d != nil && (d.D() < time.Millisecond || d.D() > 24*time.Hour) {
		return f.Errorf("worker.drain_timeout", "%s is out of range 1ms..24h: it is how long running jobs get to finish on SIGTERM; give for example 30s", ops.FormatAge(d.D()))
	}
	if d := f.Worker.DatabaseCallTimeout; d != nil && (d.D() < engine.MinDatabaseCallTimeout || d.D() > MaxDatabaseCallTimeout) {
		return f.Errorf("worker.database_call_timeout", "%s is out of range %s: %s", ops.FormatAge(d.D()), DatabaseCallTimeoutRange, DatabaseCallTimeoutWhy)
	}
	if r := f.AuditRetention; r != nil && !r.Off() && !retentionInRange(r.D()) {
		return f.Errorf("audit_retention", "%s is out of range 1m..87600h (ten years): 2160h keeps 90 days, off keeps every entry", ops.FormatAge(r.D()))
	}
	if r := f.StatsRetention; r != nil && !r.Off() && (r.D() < engine.MinStatsRetention || r.D() > 3650*24*time.Hour) {
		return f.Errorf("stats_retention", "%s is out of range 24h..87600h (ten years): the dashboard's charts read the last 24 hours; 168h keeps 7 days, off keeps every counter", ops.FormatAge(r.D()))
	}
	if err := f.checkAlerts(); err != nil {
		return err
	}
	for _, name := range f.QueueNames() {
		q := f.Queues[name]
		key := "queues." + name
		// The decoder truncates 1.5 to 1 for an int; a count must be written
		// as one.
		for _, k := range []string{"concurrency", "max_retries"} {
			if tag, ok := f.tags[key+"."+k]; ok && tag != "!!int" && tag != "!!null" {
				return f.Errorf(key+"."+k, "%q is not a whole number", f.values[key+"."+k])
			}
		}
		if err := store.ValidateQueueName(name); err != nil {
			return f.Errorf(key, "%v", err)
		}
		// A concurrency written as 0 is no default: --concurrency 0 and
		// NAME:0 are refused too.
		if q.Concurrency < 0 || q.Concurrency > 10_000 || q.Concurrency == 0 && f.given(key+".concurrency") {
			return f.Errorf(key+".concurrency", "%d is out of range 1..10000 (or leave it out for the default, 10)", q.Concurrency)
		}
		if h := q.Handler; h != nil && h.Timeout == 0 && f.given(key+".handler.timeout") {
			return f.Errorf(key+".handler.timeout", "0 is no limit a handler takes: give a duration such as 30s, or leave it out for the handler's default")
		}
		if k, err := q.Settings.Check(); err != nil {
			return f.Errorf(key+"."+k, "%v", err)
		}
		if err := q.Settings.Apply(store.DefaultQueueSettings(name)).Validate(); err != nil {
			return f.Errorf(key, "%v", err)
		}
		if q.Handler != nil && q.Handler.Type == "" {
			return f.Errorf(key+".handler.type", "missing; name the handler, for example type: demo")
		}
	}
	return nil
}
