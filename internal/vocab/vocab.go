// Package vocab names the operations layer's next-step hints in the words
// of each front end: a pgbus command line for people, an MCP tool call for
// agents.
package vocab

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pgbus/pgbus/ops"
)

// tools are the operations an MCP tool does.
var tools = map[string]bool{
	ops.OpHealth: true, ops.OpQueueStats: true, ops.OpQueueMessages: true, ops.OpQueuePause: true,
	ops.OpQueueResume: true, ops.OpDLQSummary: true, ops.OpDLQList: true, ops.OpDLQShow: true,
	ops.OpDLQRetry: true, ops.OpDLQDiscard: true, ops.OpDLQPurge: true, ops.OpWorkers: true,
	ops.OpCircuits: true, ops.OpCircuitReset: true, ops.OpAudit: true, ops.OpDLQDiscarded: true,
	ops.OpDLQRestore: true, ops.OpQueueRunNow: true, ops.OpCircuitOpen: true,
}

// Tool returns the MCP tool of an operation, and false when no tool does
// it (migrate, work, queue create, drop and purge, send).
func Tool(op string) (string, bool) {
	if tools[op] {
		return "pgbus_" + op, true
	}
	return "", false
}

// writes are the operations whose tools a read-only server leaves out.
var writes = map[string]bool{
	ops.OpQueuePause: true, ops.OpQueueResume: true, ops.OpDLQRetry: true, ops.OpDLQDiscard: true,
	ops.OpDLQPurge: true, ops.OpCircuitReset: true, ops.OpDLQRestore: true, ops.OpQueueRunNow: true,
	ops.OpCircuitOpen: true,
}

// ToolOn is Tool on a server that may be read-only: there no tool does a
// write.
func ToolOn(op string, readOnly bool) (string, bool) {
	if readOnly && writes[op] {
		return "", false
	}
	return Tool(op)
}

// ToolCall renders a hint for an agent: the tool with its arguments as
// JSON, or the command to ask a person to run when no tool does it.
func ToolCall(h ops.Hint) string { return ToolCallOn(h, false) }

// ToolCallOn is ToolCall on a server that may be read-only, where the
// write operations are for a person to run.
func ToolCallOn(h ops.Hint, readOnly bool) string {
	name, ok := ToolOn(h.Op, readOnly)
	if !ok {
		return "the CLI: " + Command(h)
	}
	if len(h.Args) == 0 {
		return name
	}
	args, _ := json.Marshal(h.Args)
	return name + " " + string(args)
}

// commands are the command lines of the operations: positional arguments
// come from the hint's args named in positional, the rest become flags.
var commands = map[string]struct {
	line       string
	positional []string
}{
	ops.OpHealth:        {"pgbus health", nil},
	ops.OpQueueStats:    {"pgbus queues", []string{"queue"}},
	ops.OpQueueMessages: {"pgbus queue messages", []string{"queue"}},
	ops.OpQueueCreate:   {"pgbus queue create", []string{"queue"}},
	ops.OpQueueDrop:     {"pgbus queue drop", []string{"queue"}},
	ops.OpQueuePurge:    {"pgbus queue purge", []string{"queue"}},
	ops.OpQueuePause:    {"pgbus queue pause", []string{"queue"}},
	ops.OpQueueResume:   {"pgbus queue resume", []string{"queue"}},
	ops.OpQueueRunNow:   {"pgbus queue run-now", []string{"queue"}},
	ops.OpSend:          {"pgbus send", []string{"queue", "payload"}},
	ops.OpDLQSummary:    {"pgbus dlq summary", nil},
	ops.OpDLQList:       {"pgbus dlq list", nil},
	ops.OpDLQShow:       {"pgbus dlq show", []string{"msg_id"}},
	ops.OpDLQRetry:      {"pgbus dlq retry", []string{"ids"}},
	ops.OpDLQDiscard:    {"pgbus dlq discard", []string{"ids"}},
	ops.OpDLQPurge:      {"pgbus dlq purge", nil},
	ops.OpDLQDiscarded:  {"pgbus dlq discarded", nil},
	ops.OpDLQRestore:    {"pgbus dlq restore", []string{"ids"}},
	ops.OpWorkers:       {"pgbus workers", nil},
	ops.OpCircuits:      {"pgbus circuits", []string{"name"}},
	ops.OpCircuitReset:  {"pgbus circuit reset", []string{"name"}},
	ops.OpCircuitOpen:   {"pgbus circuit open", []string{"name"}},
	ops.OpAudit:         {"pgbus audit", nil},
	ops.OpMigrate:       {"pgbus migrate", nil},
	ops.OpWork:          {"pgbus work", nil},
}

// CommandName returns the command of an operation without its arguments
// (pgbus dlq retry), for when the arguments of a call cannot be rendered.
func CommandName(op string) string {
	if c, ok := commands[op]; ok {
		return c.line
	}
	return "pgbus " + strings.ReplaceAll(op, "_", " ")
}

// Command renders a hint as a pgbus command line a person can run.
func Command(h ops.Hint) string { return command(h, false) }

// WithFlags is line, a command line, with flags (" --config pgbus.yaml")
// after it when it runs pgbus: the global flags of the program that named
// the step, without which it would run against another database or
// without its handlers.
func WithFlags(line, flags string) string {
	if flags == "" || !strings.HasPrefix(line, "pgbus ") {
		return line
	}
	// After --, a flag would be read as an argument.
	if i := endOfOptions(line); i >= 0 {
		return line[:i] + flags + line[i:]
	}
	return line + flags
}

// endOfOptions is the index of the " -- " that ends the options of line,
// a command line as Command writes it, or -1: one inside a value
// ShellQuote quoted is none.
func endOfOptions(line string) int {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\'':
			quoted = !quoted
		case line[i] == '\\' && !quoted:
			i++
		case !quoted && strings.HasPrefix(line[i:], " -- "):
			return i
		}
	}
	return -1
}

// CallCommand renders a hint that repeats a call as it was made, as a
// read-only server relays a write call it cannot make, as the command a
// person can run instead. It passes --yes only for a call that went
// ahead as made (calledConfirmed): one that did not is the command
// without it, which says what it would touch and changes nothing, so
// that the person checks before they confirm.
func CallCommand(h ops.Hint) string { return command(h, true) }

// command renders h; asCalled confirms only what h's own confirm does.
func command(h ops.Hint, asCalled bool) string {
	c, ok := commands[h.Op]
	if !ok {
		return CommandName(h.Op)
	}
	line := c.line
	if h.Op == ops.OpDLQRetry && h.Args["ids"] == nil {
		line = "pgbus dlq retry-all"
	}
	parts := []string{line}
	used := map[string]bool{}
	var positional []string
	for _, p := range c.positional {
		if v, ok := h.Args[p]; ok {
			positional = append(positional, words(v)...)
			used[p] = true
		}
	}
	// A name that starts with a dash (a breaker's, say) would be read as a
	// flag: after the flags and a "--", it is read as the name it is.
	dashed := slices.ContainsFunc(positional, func(w string) bool { return strings.HasPrefix(strings.TrimPrefix(w, "'"), "-") })
	if !dashed {
		parts = append(parts, positional...)
	}
	names := make([]string, 0, len(h.Args))
	for k := range h.Args {
		// The CLI shows payloads unless --no-payload says not to.
		if !used[k] && k != "include_payload" {
			names = append(names, k)
		}
	}
	if shown, ok := h.Args["include_payload"].(bool); ok && !shown {
		names = append(names, "no_payload")
	}
	sort.Strings(names)
	if h.Op == ops.OpWork {
		// pgbus work --queue Q --handler H, as its help writes it.
		sort.SliceStable(names, func(i, j int) bool { return names[i] == "queue" && names[j] != "queue" })
	}
	for _, k := range names {
		flag := "--" + strings.ReplaceAll(k, "_", "-")
		if k == ops.WorkNeedsHandler && h.Op == ops.OpWork {
			// A template: the handler type is the person's to choose,
			// and the hint's why says among what.
			parts = append(parts, "--handler", "TYPE")
			continue
		}
		if k == "no_payload" {
			parts = append(parts, flag)
			continue
		}
		if on, ok := h.Args[k].(bool); ok {
			// A switch (dry_run) is a bare flag; confirm is the CLI's --yes.
			if on && k != "confirm" {
				parts = append(parts, flag)
			}
			continue
		}
		for _, w := range words(h.Args[k]) {
			if strings.HasPrefix(strings.TrimPrefix(w, "'"), "-") {
				// A value that starts with a dash (--text --yes) reads
				// as a flag of its own to a person, though the flag
				// takes it: joined to its flag, it is seen for a value.
				parts = append(parts, flag+"="+w)
				continue
			}
			parts = append(parts, flag, w)
		}
	}
	yes := needsYes(line, h)
	if asCalled {
		yes = calledConfirmed(h)
	}
	if yes {
		parts = append(parts, "--yes")
	}
	if dashed {
		parts = append(append(parts, "--"), positional...)
	}
	return strings.Join(parts, " ")
}

// calledConfirmed reports whether the call h repeats went ahead on a
// server that could make it, so that its command takes --yes: one that
// confirmed; a retry guarded by a dry run's expect, which that dry run
// checked; a discard of the ids named, each chosen. Never a dry run; not
// a purge, a discard by filter or a retry by filter unguarded that did
// not confirm: a server that can make them asks first, or moves what a
// filter selects unseen. A run-now of the messages in flight, which a
// tool call makes as it is and the command asks --yes for, does.
func calledConfirmed(h ops.Hint) bool {
	if h.Args["dry_run"] == true {
		return false
	}
	ids, _ := h.Args["ids"].([]int64)
	severalIDs := len(slices.Compact(slices.Sorted(slices.Values(ids)))) > 1 // one id needs no --yes
	return h.Args["confirm"] == true || h.Op == ops.OpDLQRetry && h.Args["expect"] != nil || h.Op == ops.OpDLQDiscard && severalIDs ||
		h.Op == ops.OpQueueRunNow && h.Args["in_flight"] == true
}

// needsYes reports whether the command of h asks for --yes: bulk and
// destructive commands (a discard by filter or of more than one id, a
// run-now of the messages in flight), and whatever a hint confirms; never
// a dry run, which changes nothing. The
// hints of such commands are the steps after a call that was checked or
// confirmed (the rest of a discard stopped at its limit, say): a call
// relayed as it was made is CallCommand's.
func needsYes(line string, h ops.Hint) bool {
	if h.Args["dry_run"] == true {
		return false
	}
	ids, byIDs := h.Args["ids"].([]int64)
	bulkDiscard := h.Op == ops.OpDLQDiscard && (!byIDs || len(slices.Compact(slices.Sorted(slices.Values(ids)))) > 1)
	return strings.HasSuffix(line, "retry-all") || bulkDiscard || h.Args["confirm"] == true ||
		h.Op == ops.OpDLQPurge || h.Op == ops.OpQueueDrop || h.Op == ops.OpQueuePurge || h.Op == ops.OpQueueRunNow && h.Args["in_flight"] == true
}

// words renders an argument's value as shell words.
func words(v any) []string {
	switch x := v.(type) {
	case []int64:
		out := make([]string, len(x))
		for i, id := range x {
			out[i] = fmt.Sprint(id)
		}
		return out
	case string:
		return []string{ShellQuote(x)}
	case []string:
		// A flag given once a value (--header a=1 --header b=2).
		out := make([]string, len(x))
		for i, w := range x {
			out[i] = ShellQuote(w)
		}
		return out
	case json.RawMessage:
		return []string{ShellQuote(string(x))}
	}
	return []string{ShellQuote(fmt.Sprint(v))}
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+,=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ToolNote words a note of a result whose ask a (ops.WordAsks) says how to
// see what it left out, as an agent asks: by a tool's argument.
func ToolNote(a ops.Ask, note string) string {
	switch a.Kind {
	case ops.AskPayload:
		return "payload hidden: ask for it with include_payload (secrets stay redacted)"
	case ops.AskSends:
		return note + ": pass tool send (or all) to see them"
	case ops.AskNextPage:
		if a.Limit == 0 {
			return note + "; pass next_cursor as cursor with the same filters for the next page"
		}
		return note + fmt.Sprintf("; pass next_cursor as cursor with the same filters for the next page, with limit %d or less", a.Limit)
	case ops.AskFullHistory:
		return note + "; full_history lists each"
	case ops.AskOneQueue:
		return note + "; pass queue for one of the others, or name_contains for those whose names contain a part (a tenant's prefix); pgbus queues on the command line lists them all"
	case ops.AskSmallerPage:
		return note + "; a smaller limit shows more of each"
	case ops.AskWhole:
		// No tool shows past the response bound: a person can.
		return note + "; " + CommandName(a.Op) + " on the command line shows a message whole"
	case ops.AskAll:
		return note + "; " + CommandName(a.Op) + " on the command line lists them all"
	case ops.AskMore:
		return note + "; " + CommandName(a.Op) + " on the command line lists more"
	case ops.AskSameDryRun:
		return note + "; the same dry run on the command line (pgbus dlq retry-all --dry-run, with the same filters, or --all for none) lists those no running worker serves"
	}
	return note
}

// CommandNote words a note of a result whose ask a (ops.WordAsks) says how
// to see what it left out, as a person asks: by a command's flag.
func CommandNote(a ops.Ask, note string) string {
	switch a.Kind {
	case ops.AskPayload:
		return note + ": leave out --no-payload to see it (secrets stay redacted)"
	case ops.AskSends:
		return note + ": --tool send (or all) lists them"
	case ops.AskNextPage:
		if a.Limit == 0 {
			return note + "; the next page is asked with --cursor"
		}
		return note + fmt.Sprintf("; the next page is asked with --cursor and --limit %d or less", a.Limit)
	case ops.AskFullHistory:
		return note + "; --full-history lists each"
	case ops.AskOneQueue:
		return note + "; pgbus queues QUEUE shows one of the others"
	case ops.AskSmallerPage:
		return note + "; a smaller --limit shows more of each"
	case ops.AskWhole, ops.AskAll, ops.AskMore, ops.AskSameDryRun:
		// The CLI asks without the response bound: it already shows
		// what there is.
		return note
	}
	return note
}
