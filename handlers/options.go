package handlers

// Option decoding and the parts the http and exec handlers share: the
// circuit breaker block, the on_status/on_exit rules, and the text helpers
// that keep failure messages bounded.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/envref"
	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/yamlerr"
	"github.com/pgbus/pgbus/store"
)

// Defaults shared by the http and exec handlers.
const (
	// DefaultTimeout bounds one attempt when the handler block gives no
	// timeout.
	DefaultTimeout = 30 * time.Second
	// MaxTimeout is the longest timeout a handler block may give.
	MaxTimeout = 24 * time.Hour
	// DefaultBreakerThreshold consecutive retryable failures open a
	// handler's circuit breaker.
	DefaultBreakerThreshold = 5
	// DefaultBreakerCoolOff is how long an opened breaker stays open before
	// one probe may go through; failed probes double it up to
	// DefaultBreakerMaxCoolOff.
	DefaultBreakerCoolOff    = 10 * time.Second
	DefaultBreakerMaxCoolOff = 5 * time.Minute
)

// The actions of an on_status or on_exit rule, as a file spells them.
const (
	ruleRetry          = "retry"
	ruleRetryAfterHint = "retry_after_hint"
	ruleDiscard        = "discard"
	ruleDeadLetter     = "dead_letter"
)

var ruleActions = map[string]engine.Action{
	ruleRetry:          engine.ActionRetry,
	ruleRetryAfterHint: engine.ActionRetryAfterHint,
	ruleDiscard:        engine.ActionDiscard,
	ruleDeadLetter:     engine.ActionDeadLetter,
}

// BreakerOptions configure the circuit breaker of an http or exec handler
// (the breaker key). The breaker is shared by every worker process through
// PostgreSQL: FailureThreshold consecutive retryable failures open it, jobs
// that meet it open are snoozed without using an attempt, and after the
// cool-off one probe decides whether it closes again.
//
// The help tag of each field is its documentation, shown by pgbus help
// config.
type BreakerOptions struct {
	Enabled          *bool     `yaml:"enabled" help:"false turns the breaker off (default true)"`
	Name             string    `yaml:"name" help:"the breaker's name instead of http:<host:port> or exec:<argv0>[#<hash of the arguments>]; handlers that share a name share a breaker (at most 200 characters)"`
	FailureThreshold *int      `yaml:"failure_threshold" help:"how many consecutive retryable failures open it (1..10000, default 5)"`
	CoolOff          *Duration `yaml:"cool_off" help:"how long it stays open before one probe may go through (10ms..24h, default 10s)"`
	MaxCoolOff       *Duration `yaml:"max_cool_off" help:"caps the cool-off, which each failed probe doubles (at most 168h, default 5m)"`
}

// UnmarshalYAML decodes the block key by key, rejecting unknown keys.
func (b *BreakerOptions) UnmarshalYAML(n *yaml.Node) error {
	type plain BreakerOptions
	return decodeNode(n, (*plain)(b))
}

// config returns the breaker the options describe, or nil when it is off.
// defaultName is used when the block gives no name. The values a block
// gives are checked when it turns the breaker off too: a wrong one is a
// mistake, which would surface once the breaker is turned on again.
func (b BreakerOptions) config(defaultName string) (*store.BreakerConfig, error) {
	off := b.Enabled != nil && !*b.Enabled
	if off {
		defaultName = "off" // not used: only what the block gives is checked
	}
	c := store.BreakerConfig{
		Name:             defaultName,
		FailureThreshold: DefaultBreakerThreshold,
		CoolOff:          DefaultBreakerCoolOff,
		MaxCoolOff:       DefaultBreakerMaxCoolOff,
	}
	if b.Name != "" {
		c.Name = b.Name
	}
	if len(c.Name) > 200 {
		return nil, optionErrorf("breaker.name", "%d characters is longer than 200", len(c.Name))
	}
	if t := b.FailureThreshold; t != nil {
		if *t < 1 || *t > 10000 {
			return nil, optionErrorf("breaker.failure_threshold", "%d is out of range 1..10000 (to turn the breaker off, set enabled: false)", *t)
		}
		c.FailureThreshold = *t
	}
	if d := b.CoolOff; d != nil {
		if d.D() < 10*time.Millisecond || d.D() > 24*time.Hour {
			return nil, optionErrorf("breaker.cool_off", "%s is out of range 10ms..24h", d)
		}
		c.CoolOff = d.D()
		if b.MaxCoolOff == nil && c.MaxCoolOff < c.CoolOff {
			c.MaxCoolOff = c.CoolOff
		}
	}
	if d := b.MaxCoolOff; d != nil {
		if d.D() > 7*24*time.Hour {
			return nil, optionErrorf("breaker.max_cool_off", "%s is more than 168h", d)
		}
		if d.D() < c.CoolOff {
			return nil, optionErrorf("breaker.max_cool_off", "%s is less than the cool-off %s; it caps the cool-off, so make it at least that", d, c.CoolOff)
		}
		c.MaxCoolOff = d.D()
	}
	if err := c.Validate(); err != nil {
		return nil, optionErrorf("breaker", "%v", err)
	}
	if off {
		return nil, nil
	}
	return &c, nil
}

// Rule is one entry of on_status (http) or on_exit (exec): what to do with
// a response status or an exit code. In a file it is either an action,
//
//	on_status: {409: discard}
//
// or a mapping with the action and, for retry and retry_after_hint, the
// retry policy of these failures, whose unset fields take pgbus's
// defaults (max_retries 5, backoff 5s, backoff_max 5m, jitter 0.15,
// strategy exponential):
//
//	on_status:
//	  503: {action: retry_after_hint, max_retries: 10, backoff: 1s}
//
// The help tag of each field is its documentation.
type Rule struct {
	Action     string    `yaml:"action" help:"retry (with the backoff, whatever Retry-After says), retry_after_hint (retry after the response's Retry-After; http only), discard (archive with the failure recorded) or dead_letter"`
	MaxRetries *int      `yaml:"max_retries" help:"retry and retry_after_hint only, like the rest of these keys: how often these failures are retried (1..1000); alone, it keeps the queue's backoff, else the keys not given take their defaults"`
	Backoff    *Duration `yaml:"backoff" help:"the first retry's delay (at most 24h, default 5s)"`
	BackoffMax *Duration `yaml:"backoff_max" help:"caps every backoff delay (at most 168h, default 5m); a retry after a response's Retry-After (retry_after_hint, and a 429 or 503 by default) waits what it asks instead, up to 1h"`
	Jitter     *float64  `yaml:"jitter" help:"spreads delays by up to this share either way (0..1, default 0.15)"`
	Strategy   string    `yaml:"strategy" help:"exponential (the default) or polynomial"`
}

// UnmarshalYAML reads an action or a mapping.
func (r *Rule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		r.Action = n.Value
		return nil
	}
	type plain Rule
	return decodeNode(n, (*plain)(r))
}

// hasRetry reports whether the rule gives any retry setting.
func (r Rule) hasRetry() bool {
	return r.MaxRetries != nil || r.Backoff != nil || r.BackoffMax != nil || r.Jitter != nil || r.Strategy != ""
}

// policy checks the rule and returns the engine policy it stands for,
// without its matcher. key names the rule in errors.
func (r Rule) policy(key string) (engine.ErrorPolicy, error) {
	action, ok := ruleActions[r.Action]
	if !ok {
		if r.Action == "" {
			return engine.ErrorPolicy{}, optionErrorf(key+".action", "missing; use one of %s", actionList())
		}
		return engine.ErrorPolicy{}, optionErrorf(key, "unknown action %q; use one of %s", r.Action, actionList())
	}
	p := engine.ErrorPolicy{Action: action}
	if !r.hasRetry() {
		return p, nil
	}
	if action != engine.ActionRetry && action != engine.ActionRetryAfterHint {
		return engine.ErrorPolicy{}, optionErrorf(key, "retry settings (max_retries, backoff, ...) go only with action retry or retry_after_hint, not %s", r.Action)
	}
	if r.MaxRetries != nil && r.Backoff == nil && r.BackoffMax == nil && r.Jitter == nil && r.Strategy == "" {
		// Only the attempts: the backoff stays the queue's.
		if v := *r.MaxRetries; v < 1 || v > 1000 {
			return engine.ErrorPolicy{}, optionErrorf(key+".max_retries", "%d is out of range 1..1000", v)
		}
		p.MaxRetries = *r.MaxRetries
		return p, nil
	}
	rp := engine.DefaultRetryPolicy()
	if v := r.MaxRetries; v != nil {
		if *v < 1 || *v > 1000 {
			return engine.ErrorPolicy{}, optionErrorf(key+".max_retries", "%d is out of range 1..1000", *v)
		}
		rp.MaxRetries = *v
	}
	if v := r.Backoff; v != nil {
		if v.D() > 24*time.Hour {
			return engine.ErrorPolicy{}, optionErrorf(key+".backoff", "%s is more than 24h", v)
		}
		rp.Backoff = v.D()
		if r.BackoffMax == nil && rp.BackoffMax < rp.Backoff {
			rp.BackoffMax = rp.Backoff
		}
	}
	if v := r.BackoffMax; v != nil {
		if v.D() > 7*24*time.Hour {
			return engine.ErrorPolicy{}, optionErrorf(key+".backoff_max", "%s is more than 168h", v)
		}
		if v.D() < rp.Backoff {
			return engine.ErrorPolicy{}, optionErrorf(key+".backoff_max", "%s is less than the backoff %s; it caps every delay, so make it at least the backoff", v, rp.Backoff)
		}
		rp.BackoffMax = v.D()
	}
	if v := r.Jitter; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return engine.ErrorPolicy{}, optionErrorf(key+".jitter", "%v is out of range 0..1", *v)
		}
		rp.Jitter = *v
	}
	switch r.Strategy {
	case "":
	case store.BackoffExponential, store.BackoffPolynomial:
		rp.Strategy = r.Strategy
	default:
		return engine.ErrorPolicy{}, optionErrorf(key+".strategy", "%q is not a backoff strategy; use %s or %s", r.Strategy, store.BackoffExponential, store.BackoffPolynomial)
	}
	p.Retry = &rp
	return p, nil
}

func actionList() string {
	return strings.Join([]string{ruleRetry, ruleRetryAfterHint, ruleDiscard, ruleDeadLetter}, ", ")
}

// Rules are on_status or on_exit: rules by status code or exit code.
type Rules map[string]Rule

// UnmarshalYAML decodes the mapping, naming the entry in errors.
func (rs *Rules) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return optionErrorf("", "expected a mapping of codes to actions, got a %s", yamlerr.Kind(n))
	}
	out := Rules{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		var r Rule
		if err := v.Decode(&r); err != nil {
			return prefixError(k, err)
		}
		out[k] = r
	}
	*rs = out
	return nil
}

// optionError is a problem with one option of a handler block; Key is its
// dotted path, such as breaker.cool_off. at, when set, is the path of the
// entry below it the problem is at (headers.Authorization), which Key
// leaves out and the reason names: after "Authorization: ", the reason
// would read as the header's value, and its first word be redacted.
type optionError struct {
	Key    string
	Reason string
	at     string
}

func (e *optionError) Error() string {
	if e.Key == "" {
		return e.Reason
	}
	return e.Key + ": " + e.Reason
}

func optionErrorf(key, format string, args ...any) error {
	return &optionError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// prefixError puts key in front of the path of err.
func prefixError(key string, err error) error {
	var oe *optionError
	if errors.As(err, &oe) {
		at := oe.at
		if at != "" {
			at = key + "." + at
		}
		if oe.Key == "" {
			return &optionError{Key: key, Reason: oe.Reason, at: at}
		}
		return &optionError{Key: key + "." + oe.Key, Reason: oe.Reason, at: at}
	}
	return &optionError{Key: key, Reason: yamlerr.Reason(err)}
}

// entryAt marks err, a problem with an entry of a mapping that its
// reason names (a header, a variable of env), as being at the entry's
// key path, such as headers.Authorization.
func entryAt(err error, at string) error {
	var oe *optionError
	if errors.As(err, &oe) && oe.at == "" {
		return &optionError{Key: oe.Key, Reason: oe.Reason, at: at}
	}
	return err
}

// OptionProblem says where in a handler block the problem err, an error
// of Build or Check, is: key is the option's dotted path in the block
// (timeout, breaker.cool_off, on_exit.3.backoff, command[0]), and at the
// path of the key the problem is at, key itself or an entry below it
// that the reason names (headers.Authorization, env.API_TOKEN: in
// "headers.Authorization: ...", the reason would read as the header's
// value). reason is the problem without the handler type and key. ok is
// false for an error about no one option, such as an unknown type.
func OptionProblem(err error) (key, at, reason string, ok bool) {
	var oe *optionError
	if !errors.As(err, &oe) || oe.Key == "" {
		return "", "", "", false
	}
	at = oe.at
	if at == "" {
		at = oe.Key
	}
	return oe.Key, at, oe.Reason, true
}

// typeError wraps a problem with a handler block in the form the command
// line shows: "handler type http: url: missing; ...".
func typeError(typ string, err error) error {
	return fmt.Errorf("handler type %s: %w", typ, err)
}

// decodeKeyed checks and decodes a handler block's own keys into out (a
// pointer to a struct with yaml tags) one key at a time, so that every
// problem, nested ones included, names its key.
func decodeKeyed(spec Spec, out any) error {
	if len(spec.Options) == 0 {
		return nil
	}
	raw, err := yaml.Marshal(spec.Options)
	if err != nil {
		return fmt.Errorf("options: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("options: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return errors.New("options: expected a mapping")
	}
	return decodeNode(doc.Content[0], out)
}

// besides names the keys every handler block has, next to its type's own
// options, when out is a type's options: a typo of timeout is among them.
func besides(out any) string {
	switch out.(type) {
	case *HTTPOptions, *ExecOptions, *DemoOptions:
		return " (and type and timeout, which every handler takes)"
	}
	return ""
}

// decodeNode decodes a mapping node into the struct out points to, key by
// key: an unknown key is an error listing the known ones, and a value that
// does not decode is an error naming its key.
func decodeNode(n *yaml.Node, out any) error {
	if n.Kind != yaml.MappingNode {
		return optionErrorf("", "expected a mapping (key: value lines), got a %s", yamlerr.Kind(n))
	}
	v := reflect.ValueOf(out).Elem()
	fields := map[string]reflect.Value{}
	var known []string
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = v.Field(i)
		known = append(known, name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i].Value, n.Content[i+1]
		f, ok := fields[k]
		if !ok {
			slices.Sort(known)
			return optionErrorf(k, "unknown option; the options here are %s%s", strings.Join(known, ", "), besides(out))
		}
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			continue // "key:" with no value keeps the default
		}
		if err := wholeNumbers(val, f.Type()); err != nil {
			return prefixError(k, err)
		}
		val = yamlerr.QuotedBool(val, f.Type())
		if err := val.Decode(f.Addr().Interface()); err != nil {
			if noun, ok := entryNouns[k]; ok {
				if err := entryError(val, f.Type(), noun); err != nil {
					return prefixError(k, err)
				}
			}
			return prefixError(k, err)
		}
	}
	return nil
}

// entryNouns name the entries of the mappings of text a handler block
// has, by their option, in errors: their names are not put in front of a
// reason (see optionError). The rules of on_status and on_exit name
// their entries themselves.
var entryNouns = map[string]string{"headers": "header", "env": "variable"}

// entryError finds, in n, a mapping that did not decode into a map of
// type t, the first entry that does not, and returns its problem, the
// entry named in the reason as a noun ("in header X-Two, ...") and marked
// as being at its key. It returns nil when n is no such mapping.
func entryError(n *yaml.Node, t reflect.Type, noun string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Map || t.Key().Kind() != reflect.String {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return nil
		}
		if err := n.Content[i+1].Decode(reflect.New(t.Elem()).Interface()); err != nil {
			return &optionError{Reason: "in " + noun + " " + k.Value + ", " + yamlerr.Reason(err), at: k.Value}
		}
	}
	return nil
}

// wholeNumbers refuses a number with a fraction (1.5) where n decodes
// into a whole number of type t, directly or as an item of a list or
// mapping: the decoder would cut it to 1 without a word. Structs decode
// through decodeNode, which checks their keys.
func wholeNumbers(n *yaml.Node, t reflect.Type) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
			return optionErrorf("", "%q is not a whole number", n.Value)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, item := range n.Content {
				if err := wholeNumbers(item, t.Elem()); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				if err := wholeNumbers(n.Content[i], t.Elem()); err != nil {
					return prefixError(n.Content[i-1].Value, err)
				}
			}
		}
	}
	return nil
}

// expandOption replaces the ${NAME}s of an option's value by the
// environment's variables (see envref), returning the variables it used:
// their values are secrets the handler sends. what names the value in
// errors after its parent key ("header Authorization"): after its own
// dotted key and a colon, the reason's first word would read as a
// credential and be redacted; "" for a value that is its key's own (url).
// With resolve false (Check), a variable that
// is not set here is no error, as the machine reading the file need not
// have the workers' secrets: ok false then says the value is unknown, and
// whatever checks it is skipped.
func expandOption(key, what, value string, resolve bool) (out string, vars []envref.Var, ok bool, err error) {
	reason := func(err error, in bool) error {
		switch {
		case what == "":
			return optionErrorf(key, "%v", err)
		case in:
			return optionErrorf(key, "in %s, %v", what, err)
		}
		return optionErrorf(key, "%s %v", what, err)
	}
	out, vars, err = envref.Expand(value)
	switch {
	case envref.IsUnset(err) && !resolve:
		if err := envref.Check(value); err != nil {
			return "", nil, false, reason(err, true)
		}
		return "", nil, false, nil
	case envref.IsUnset(err):
		return "", nil, false, reason(err, false)
	case err != nil:
		return "", nil, false, reason(err, true)
	}
	return out, vars, true, nil
}

// timeoutOf checks the block's timeout and returns the timeout of one
// attempt.
func timeoutOf(spec Spec) (time.Duration, error) {
	d := spec.Timeout.D()
	switch {
	case d < 0:
		return 0, optionErrorf("timeout", "%s is negative; give a duration such as 30s", d)
	case d == 0:
		return DefaultTimeout, nil
	case d < time.Millisecond || d > MaxTimeout:
		return 0, optionErrorf("timeout", "%s is out of range 1ms..%s", d, MaxTimeout)
	}
	return d, nil
}

// Text bounds of failure messages.
const (
	// MaxCapture is how much of a response body, and of a command's stdout
	// and of its stderr, is kept; the rest is read and thrown away.
	MaxCapture = 64 << 10
	// MaxSnippet bounds the part of a response body that goes into a
	// failure message.
	MaxSnippet = 1 << 10
)

// shownText is b as printable text with its secrets hidden, before any
// cut: a cut could take a secret's key (password=) and leave its value,
// which redaction would not recognise any more. The values in sent go
// first, found in the bytes as they came, as they were sent: redaction
// then sees a word in their place, the marker only once it is done.
// clipped says b is only the end of a longer output: what the clip left
// of its first line is dropped too (redact.Clipped) and marked with "…".
// Trailing blanks go: most outputs end with a newline, which would end
// the failure message with an empty line.
func shownText(b []byte, clipped bool, sent sentSecrets) string {
	s := strings.TrimRight(printable(sent.mark(b)), "\n\t ")
	if !clipped {
		s, _ = redact.Text(s)
		return unmark(s)
	}
	if s, _ = redact.Clipped(s); s == "" {
		return clippedLine
	}
	return "…" + unmark(s)
}

// clippedLine stands for what was kept of an output that ends in one line
// longer than what is kept of it (a JSON log line, a dumped payload):
// without the line's start, its end is not shown (redact.Clipped), and
// the failure would otherwise say nothing at all about why.
const clippedLine = "…[the end of a line too long to keep whole, not shown: its start was cut off, and a secret's name with it perhaps; a command that writes its error on a line of its own has it shown here]"

// snippet returns the start of text (from shownText) of at most limit
// bytes, cut at a rune boundary and ending in "…" when it was cut.
func snippet(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := limit - len("…")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

// output bounds what a downstream said for the failure history: at most
// engine.MaxOutputChars characters of text (from shownText), its start, or
// its end when fromEnd (a command's last words are its error). more says
// text is already only part of the output; a cut is marked with "…".
func output(source, text string, more, fromEnd bool) engine.Output {
	if text == "" {
		return engine.Output{}
	}
	r := []rune(text)
	if keep := engine.MaxOutputChars - 1; len(r) > keep+1 {
		if fromEnd {
			text = "…" + string(r[len(r)-keep:])
		} else {
			text = string(r[:keep]) + "…"
		}
		more = true
	}
	return engine.Output{Source: source, Text: text, Truncated: more}
}

// lastLines returns the last lines of text (from shownText): at most
// maxLines lines and limit bytes, starting with "…" when lines were left
// out (whole lines, but for one too long for the limit alone). A
// line longer than half the limit keeps its start only: one long line (a
// dumped payload, a minified trace) would otherwise take the whole limit
// and push out the lines before it, often the one that says why.
func lastLines(text string, maxLines, limit int) string {
	lines := strings.Split(text, "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	for i, l := range lines {
		lines[i] = snippet(l, limit/2)
	}
	// Whole lines are left out, as many as the limit asks, counted with
	// each run of digits as one byte and a tenth of the limit left for
	// the digits: a cut whose place moved with the lengths of what comes
	// after it (an id's digits) would start the text elsewhere for each
	// job, and failures that differ only in ids would not be grouped as
	// one.
	from, size, budget := len(lines), 0, limit-len("…")-limit/10
	for from > 0 && size+digitless(lines[from-1])+1 <= budget {
		from--
		size += digitless(lines[from]) + 1
	}
	from = min(from, len(lines)-1)
	s := strings.Join(lines[from:], "\n")
	for len(s)+len("…") > limit && from < len(lines)-1 { // digits made the kept lines longer
		from++
		s = strings.Join(lines[from:], "\n")
	}
	if len(s) > limit {
		cut := len(s) - limit + len("…")
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		return "…" + s[cut:]
	}
	if from > 0 {
		return "…" + s
	}
	return s
}

// digitless is the length of line with each run of digits counted as one
// byte.
func digitless(line string) int {
	n := 0
	for i := range len(line) {
		if line[i] < '0' || line[i] > '9' || i == 0 || line[i-1] < '0' || line[i-1] > '9' {
			n++
		}
	}
	return n
}

// printable writes invalid UTF-8 and control characters other than newline
// and tab as \x escapes (ESC as \x1b), so that a failure message stays
// readable, on a terminal too, and says which bytes the program wrote.
func printable(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20 && r != '\n' && r != '\t' && r != '\r', r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, b[0])
		case r != '\r':
			sb.WriteRune(r)
		}
		b = b[size:]
	}
	return sb.String()
}
