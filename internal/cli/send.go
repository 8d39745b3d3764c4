package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// SendResult is what send prints with --json.
type SendResult struct {
	Queue string `json:"queue"`
	MsgID int64  `json:"msg_id"`
}

func (a *app) sendCommand() *cobra.Command {
	var (
		file, kind, deadline, idemKey string
		delay                         time.Duration
		headers                       []string
		asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "send QUEUE [PAYLOAD | @FILE | -]",
		Short: "Send one message (a job) to a queue and print its id",
		Long: `Send one message to QUEUE. The payload is JSON: given inline, read from a file
(@FILE or --file FILE), or from stdin (-). The new message's id is printed on
stdout (with --json, {"queue": ..., "msg_id": ...}).

--kind sets pgbus_kind, which chooses the handler. --deadline is when the
message stops being worth running: past it, it is dead-lettered with reason
deadline_exceeded; give an RFC 3339 time or a duration from now. With
--idempotency-key, sending the same key to the same queue again returns the
first message's id instead of a duplicate.`,
		Example: `  pgbus send orders '{"order_id": 42, "amount_cents": 1999}' --kind charge_card
  pgbus send orders @order.json --idempotency-key order-42
  echo '{"to": "ada@example.com"}' | pgbus send emails - --kind welcome --delay 10m
  pgbus send reports --file big.json --deadline 2026-12-01T09:00:00Z --header tenant=acme
  id=$(pgbus send orders '{}' --deadline 30m)`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			if err := store.ValidatePhysicalName(queue); err != nil {
				return err
			}
			if strings.HasSuffix(queue, store.DLQSuffix) {
				return usageError{fmt.Errorf("queue %q is a dead-letter queue: messages reach it only by dying; send to %q instead", queue, strings.TrimSuffix(queue, store.DLQSuffix))}
			}
			arg, hasArg := "", len(args) == 2
			if hasArg {
				arg = args[1]
			}
			payload, err := readPayload(arg, hasArg, file, a.stdin)
			if err != nil {
				return err
			}
			if err := checkDuration("delay", delay, store.MaxDelay); err != nil {
				return err
			}
			opts := engine.SendOptions{Kind: kind, Delay: delay, IdempotencyKey: idemKey}
			if deadline != "" {
				now := time.Now()
				if opts.Deadline, err = parseWhen("deadline", deadline, now, false); err != nil {
					return err
				}
				if !opts.Deadline.After(now) {
					return usageError{fmt.Errorf("--deadline %s is in the past: the message would be dead-lettered without running", opts.Deadline.UTC().Format(time.RFC3339))}
				}
			}
			if opts.Headers, err = parseHeaders(headers); err != nil {
				return err
			}
			msg, err := engine.NewMessage(payload, opts)
			if err != nil {
				return err
			}
			db, err := a.openChecked(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			id, err := db.Send(cmd.Context(), queue, msg)
			res := SendResult{Queue: queue, MsgID: id}
			a.recordAudit(cmd.Context(), db, "send", map[string]any{
				"queue": queue, "kind": kind, "delay": delay.String(), "deadline": deadline,
				"idempotency_key": idemKey, "headers": opts.Headers, "payload_bytes": len(payload),
			}, res, err)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, res)
			}
			_, err = fmt.Fprintln(a.stdout, id)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "read the payload from this file")
	f.StringVar(&kind, "kind", "", "job kind (pgbus_kind header): chooses the handler")
	f.DurationVar(&delay, "delay", 0, "deliver no sooner than this from now, e.g. 30s or 2h")
	f.StringVar(&deadline, "deadline", "", "do not run after this time: RFC 3339, or a duration from now such as 1h")
	f.StringVar(&idemKey, "idempotency-key", "", "send at most once per key and queue; also handed to the handler")
	f.StringArrayVar(&headers, "header", nil, "extra header key=value (repeatable); keys starting with pgbus_ are reserved")
	f.BoolVar(&asJSON, "json", false, `print {"queue": ..., "msg_id": ...}`)
	return cmd
}
