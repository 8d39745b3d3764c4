package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

func (a *app) sendCommand() *cobra.Command {
	var (
		file, kind, deadline, idemKey, ndjson string
		delay                                 time.Duration
		priority, fromLine                    int
		headers                               []string
	)
	cmd := &cobra.Command{
		Use:   "send QUEUE [PAYLOAD | @FILE | - | --ndjson FILE]",
		Short: "Send a message (a job), or many from newline-delimited JSON, to a queue and print their ids",
		Long: `Send one message to QUEUE. The payload is JSON: given inline, read from a file
(@FILE or --file FILE), or from stdin (-). The new message's id is printed on
stdout (with --json, {"queue": ..., "msg_id": ...}).

--kind sets pgbus_kind, which chooses the handler. --deadline is when the
message stops being worth running: past it, it is dead-lettered with reason
deadline_exceeded; give an RFC 3339 time, a date (midnight UTC) or a
duration from now (30m, 2h, 7d). With
--idempotency-key, sending the same key to the same queue again returns the
first message's id instead of a duplicate, and says on stderr that nothing
new was sent (--json: "already_sent": true). --priority picks the level of a
queue created with --priorities (0, the default, is read first).

--ndjson FILE sends many messages: one JSON payload a line, read from FILE,
or from stdin with --ndjson -, each sent with the same --kind, --delay,
--deadline, --priority and --header (not --idempotency-key, which would
send only the first). Blank lines are skipped. Every line is read and
checked before anything is sent: a line that is not JSON, or is larger
than a message may carry (8 MiB), refuses the whole input, naming its
line. At most 100,000 lines and 256 MiB of payloads go in one command.
The input is then read again to send it, one transaction's lines at a
time, which is what the command holds in memory: stdin, or a pipe, is
copied as it is checked to a temporary file (in TMPDIR), removed at the
end; a file that changes before it is sent stops the command at the
first changed line, the lines before it sent.
They are sent in order, in transactions of 1,000 lines, and their ids are
printed one a line as each transaction commits (with --json, {"queue": ...,
"msg_ids": [...]} at the end); after each but the last, stderr says which
line to go on from. If a
transaction fails, the lines before it stay sent, and the error says
which line to go on from: run the same command with --from-line N to
send the rest, not the whole input again. If the connection broke as a
transaction committed, its lines may or may not have been sent: the error
names them, to look for with pgbus queue messages, and the line to go on
from either way. The command is one entry in the audit log; one of more
than 1,000 lines is recorded when it starts and, with each transaction,
how far it went: killed partway, pgbus audit --tool send shows it
unfinished, with the same command from the line to go on from as its next
step.`,
		Example: `  pgbus send orders '{"order_id": 42, "amount_cents": 1999}' --kind charge_card
  pgbus send orders @order.json --idempotency-key order-42
  echo '{"to": "ada@example.com"}' | pgbus send emails - --kind welcome --delay 10m
  pgbus send reports --file big.json --deadline 24h --header tenant=acme
  pgbus send alerts '{"page": true}' --priority 0
  id=$(pgbus send orders '{}' --deadline 30m)
  pgbus send orders --ndjson exported.ndjson --kind charge_card
  pgbus send orders --ndjson exported.ndjson --from-line 2001
  jq -c '.[]' jobs.json | pgbus send orders --ndjson -`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			// Before the payload is read, so that a bad name does not wait
			// for stdin; the request's check covers the rest.
			if err := ops.CheckQueueName(queue); err != nil {
				return err
			}
			arg, hasArg := "", len(args) == 2
			if hasArg {
				arg = args[1]
			}
			// An empty --idempotency-key would turn de-duplication off,
			// an empty --deadline the deadline, an empty --kind the
			// handler's choice: refused, as an unset variable gives them.
			if ndjson != "" || cmd.Flags().Changed("from-line") {
				return a.sendNDJSON(cmd, queue, args[1:], ndjson, fromLine, file, idemKey, ops.SendManyRequest{
					Queue: queue, Kind: kind, Delay: delay, Priority: priority,
				}, deadline, headers)
			}
			payload, err := readPayload(arg, hasArg, file, a.stdin)
			if err != nil {
				return err
			}
			req := ops.SendRequest{Queue: queue, Payload: payload, Kind: kind, Delay: delay, IdempotencyKey: idemKey, Priority: priority}
			if deadline != "" {
				if req.Deadline, req.DeadlineIn, err = ops.ParseDeadline(deadline); err != nil {
					return flagWords(err, "deadline")
				}
			}
			if req.Headers, err = parseHeaders(headers); err != nil {
				return err
			}
			return run(a, cmd, (*ops.Service).Send, req, func(res ops.Sent) error {
				// The id on stdout either way, as a script reads it; that
				// nothing new was sent on stderr.
				if res.AlreadySent {
					to := res.Queue
					if res.Priority != 0 {
						to += fmt.Sprintf(" at priority %d", res.Priority)
					}
					fmt.Fprintf(a.stderr, "pgbus: idempotency key %q matched message %d, already sent to %s: nothing new was sent\n", idemKey, res.MsgID, to)
				}
				_, err := fmt.Fprintln(a.stdout, res.MsgID)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "read the payload from this file")
	f.StringVar(&kind, "kind", "", "job kind (pgbus_kind header): chooses the handler")
	durationVar(f, &delay, "delay", 0, "deliver no sooner than this from now, e.g. 30s, 2h or 7d")
	f.StringVar(&deadline, "deadline", "", "do not run after this time: RFC 3339, a date (midnight UTC), or a duration from now such as 1h or 7d")
	f.StringVar(&idemKey, "idempotency-key", "", "send at most once per key and queue; also handed to the handler")
	f.IntVar(&priority, "priority", 0, "priority level of a queue created with --priorities: 0 (default, read first) to levels-1")
	f.StringArrayVar(&headers, "header", nil, "extra header key=value (repeatable); keys starting with pgbus_ are reserved")
	f.StringVar(&ndjson, "ndjson", "", "send one message per line of this newline-delimited JSON file (- for stdin)")
	f.IntVar(&fromLine, "from-line", 1, "with --ndjson: start at this line (from 1), to send the rest after a failure")
	return jsonFlag(cmd, ops.OpSend)
}

// sendGCPercent is the garbage collector's target of send --ndjson when
// GOGC is not set: Go's default.
const sendGCPercent = 100

// sendNDJSON is send --ndjson: every line read and checked, then read
// again and sent in order through the operations layer, the ids printed
// as they were given.
func (a *app) sendNDJSON(cmd *cobra.Command, queue string, payloadArgs []string, ndjson string, fromLine int, file, idemKey string,
	req ops.SendManyRequest, deadline string, headers []string) error {
	switch {
	case ndjson == "":
		return usageError{errors.New("--from-line goes with --ndjson FILE: give the file to read")}
	case len(payloadArgs) > 0 || file != "":
		return usageError{errors.New("--ndjson reads the payloads, one a line: give no PAYLOAD argument or --file with it")}
	case idemKey != "":
		return usageError{errors.New("--idempotency-key goes with one message: with --ndjson every line would share the key, and only the first be sent; send keyed messages one at a time")}
	case fromLine < 1:
		return usageError{fmt.Errorf("--from-line %d: give a line number from 1", fromLine)}
	}
	var err error
	if deadline != "" {
		if req.Deadline, req.DeadlineIn, err = ops.ParseDeadline(deadline); err != nil {
			return flagWords(err, "deadline")
		}
	}
	if req.Headers, err = parseHeaders(headers); err != nil {
		return err
	}
	in, err := openNDJSON(ndjson, a.stdin, fromLine)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, set := os.LookupEnv("GOGC"); !set {
		// The binary's collector target suits a worker's small heap; a
		// send of large lines holds a batch of up to 16 MiB several times
		// over as it sends it, and at that target the heap would grow to
		// five times that before a collection.
		defer debug.SetGCPercent(debug.SetGCPercent(sendGCPercent))
	}
	req.Source, req.Input = in, ndjson
	if ndjson != "-" {
		// The audit log names the file to go on from wherever it is read.
		if abs, aerr := filepath.Abs(ndjson); aerr == nil {
			req.Input = abs
		}
	}
	// Every line checked before the database is opened: nothing is sent
	// of an input with a bad line.
	if err := check(cmd, req); err != nil {
		return in.checkError(err)
	}
	ctx, s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	asJSON, _ := cmd.Flags().GetBool("json")
	var werr error
	if !asJSON {
		// Each transaction's ids as it commits, in one write, and on
		// stderr the line to go on from: a process killed partway has
		// told what it sent.
		req.Progress = func(ids []int64, sent int) {
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(strconv.FormatInt(id, 10))
				b.WriteByte('\n')
			}
			if werr == nil {
				werr = a.printOn(b.String())
			}
			if sent < len(in.lines) {
				fmt.Fprintf(a.stderr, "pgbus: lines %d to %d of %s sent (%d of %d messages); if this stops, run the same command with --from-line %d to send the rest\n",
					in.lines[0], in.lines[sent-1], in.from, sent, len(in.lines), in.lines[sent])
			}
		}
	}
	res, err := s.ops.SendMany(ctx, req)
	// The ids of what was sent are printed even when the rest failed:
	// those messages stay sent.
	if asJSON && len(res.MsgIDs) > 0 {
		werr = printResult(a, res)
	}
	if err != nil {
		// What was sent and the line to go on from count more than
		// the output that could not be written, which the end says.
		return in.lineError(err, queue, a.carried)
	}
	return werr
}

// checkError words an error of the check of every line, before anything
// was sent: the line it is about, or the input read to its end without a
// payload; an error of the options, checked before any line is read, is
// as it was.
func (in *ndjsonInput) checkError(err error) error {
	switch {
	case !in.started:
		return err
	case in.read && len(in.lines) == 0:
		at := ""
		if in.fromLine > 1 {
			at = fmt.Sprintf(" from line %d on", in.fromLine)
		}
		return usageError{fmt.Errorf("%s holds no payloads%s (%d lines read, none with JSON): nothing was sent; give one JSON value a line", in.from, at, in.count)}
	}
	if ops.PayloadIndex(err) >= 0 {
		return in.lineError(err, "", nil)
	}
	return reworded{fmt.Sprintf("%v; nothing was sent", err), err}
}

// printOn prints text on stdout for a write that goes on whether or not
// anybody reads it (stdoutWriter.writeOn).
func (a *app) printOn(text string) error {
	if out, ok := a.stdout.(*stdoutWriter); ok {
		return out.writeOn([]byte(text))
	}
	_, err := io.WriteString(a.stdout, text)
	return err
}

// lineError words an error of SendMany by the input's lines: the line a
// refused payload came from, or, when the sending stopped midway, the
// lines sent and the one to go on from. carried adds the global flags the
// command was given to a command line it names.
func (in *ndjsonInput) lineError(err error, queue string, carried func(string) string) error {
	var ps *ops.PartlySent
	if errors.As(err, &ps) {
		var parts []string
		if ps.Sent > 0 {
			parts = append(parts, fmt.Sprintf("lines %d to %d of %s were sent (%d messages) and stay sent", in.lines[0], in.lines[ps.Sent-1], in.from, ps.Sent))
		}
		next := in.lines[ps.Sent]
		cause := ps.Err
		if i := ops.PayloadIndex(cause); i >= 0 && i < len(in.lines) {
			// A payload PostgreSQL refused: named by its line.
			cause = reworded{fmt.Sprintf("line %d of %s: %v", in.lines[i], in.from, ops.PayloadReason(cause)), cause}
		}
		stopped := sendStopped{cause: cause, err: err, resume: []int{next}}
		if ps.Unsure > 0 {
			last := ps.Sent + ps.Unsure - 1
			resume := fmt.Sprintf("--from-line %d if they are not there", next)
			if last+1 < len(in.lines) {
				resume += fmt.Sprintf(", --from-line %d if they are", in.lines[last+1])
				stopped.resume = append(stopped.resume, in.lines[last+1])
			}
			stopped.look = queue
			parts = append(parts, fmt.Sprintf("lines %d to %d may or may not have been sent, as their commit was sent but not answered (the connection broke, or the command was stopped, as it was made): look for them with %s, then run the same command with %s", next, in.lines[last], carried("pgbus queue messages "+vocab.ShellQuote(queue)), resume))
		} else {
			parts = append(parts, fmt.Sprintf("line %d and those after it were not: run the same command with --from-line %d to send them, not the whole input again, which would send the sent lines twice", next, next))
		}
		stopped.msg = strings.Join(parts, "; ")
		return stopped
	}
	if i := ops.PayloadIndex(err); i >= 0 && i < len(in.lines) {
		return reworded{fmt.Sprintf("line %d of %s: %v; nothing was sent", in.lines[i], in.from, ops.PayloadReason(err)), err}
	}
	return err
}

// sendStopped is the error of send --ndjson that stopped after sending
// some lines: why, then what was sent and how to send the rest.
type sendStopped struct {
	cause error
	msg   string
	err   error
	// resume are the lines to go on from, as msg says: the next one, and
	// the one after those that may have been sent.
	resume []int
	// look is the queue to look in for the lines that may have been
	// sent; "" when none may have been.
	look string
}

// steps are the next steps of a send that stopped, as msg says them: the
// list of the queue to look in, and the same command from each line to
// go on from.
func (e sendStopped) steps(a *app) []nextStep {
	var out []nextStep
	if e.look != "" {
		out = append(out, nextStep{Command: a.carried("pgbus queue messages " + vocab.ShellQuote(e.look)), Why: "shows whether the lines that may have been sent are there"})
	}
	for i, line := range e.resume {
		why := "sends the rest"
		if e.look != "" {
			why = map[bool]string{true: "sends the rest, if those lines are not there", false: "sends the rest, if those lines are there"}[i == 0]
		}
		out = append(out, nextStep{Command: a.sameCommandFrom(line), Why: why})
	}
	return out
}

// sameCommandFrom is the command line this one ran, from line of its
// input on (--from-line), its database URL's secrets hidden as next steps
// hide them.
func (a *app) sameCommandFrom(line int) string {
	words := []string{"pgbus"}
	for i := 0; i < len(a.args); i++ {
		w := a.args[i]
		switch {
		case w == "--from-line":
			i++
		case strings.HasPrefix(w, "--from-line="):
		case w == "--database-url" && i+1 < len(a.args):
			i++
			words = append(words, w, vocab.ShellQuote(redact.DatabaseURL(a.args[i])))
		case strings.HasPrefix(w, "--database-url="):
			words = append(words, "--database-url="+vocab.ShellQuote(redact.DatabaseURL(strings.TrimPrefix(w, "--database-url="))))
		default:
			words = append(words, vocab.ShellQuote(w))
		}
	}
	return strings.Join(append(words, "--from-line", strconv.Itoa(line)), " ")
}

func (e sendStopped) Error() string { return fmt.Sprintf("%v; %s", e.cause, e.msg) }
func (e sendStopped) Unwrap() error { return e.err }
