package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/ops"
)

func (a *app) sendCommand() *cobra.Command {
	var (
		file, kind, deadline, idemKey string
		delay                         time.Duration
		priority                      int
		headers                       []string
	)
	cmd := &cobra.Command{
		Use:   "send QUEUE [PAYLOAD | @FILE | -]",
		Short: "Send one message (a job) to a queue and print its id",
		Long: `Send one message to QUEUE. The payload is JSON: given inline, read from a file
(@FILE or --file FILE), or from stdin (-). The new message's id is printed on
stdout (with --json, {"queue": ..., "msg_id": ...}).

--kind sets pgbus_kind, which chooses the handler. --deadline is when the
message stops being worth running: past it, it is dead-lettered with reason
deadline_exceeded; give an RFC 3339 time, a date (midnight UTC) or a
duration from now (30m, 2h, 7d). With
--idempotency-key, sending the same key to the same queue again returns the
first message's id instead of a duplicate. --priority picks the level of a
queue created with --priorities (0, the default, is read first).`,
		Example: `  pgbus send orders '{"order_id": 42, "amount_cents": 1999}' --kind charge_card
  pgbus send orders @order.json --idempotency-key order-42
  echo '{"to": "ada@example.com"}' | pgbus send emails - --kind welcome --delay 10m
  pgbus send reports --file big.json --deadline 2026-12-01T09:00:00Z --header tenant=acme
  pgbus send alerts '{"page": true}' --priority 0
  id=$(pgbus send orders '{}' --deadline 30m)`,
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
			if err := refuseEmpty(cmd.Flags(), "kind", "idempotency-key", "deadline", "file"); err != nil {
				return err
			}
			payload, err := readPayload(arg, hasArg, file, a.stdin)
			if err != nil {
				return err
			}
			req := ops.SendRequest{Queue: queue, Payload: payload, Kind: kind, Delay: delay, IdempotencyKey: idemKey, Priority: priority}
			if deadline != "" {
				if req.Deadline, err = ops.ParseDeadline(deadline, time.Now()); err != nil {
					return flagWords(err, "deadline")
				}
			}
			if req.Headers, err = parseHeaders(headers); err != nil {
				return err
			}
			return run(a, cmd, (*ops.Service).Send, req, func(res ops.Sent) error {
				_, err := fmt.Fprintln(a.stdout, res.MsgID)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "read the payload from this file")
	f.StringVar(&kind, "kind", "", "job kind (pgbus_kind header): chooses the handler")
	f.DurationVar(&delay, "delay", 0, "deliver no sooner than this from now, e.g. 30s or 2h")
	f.StringVar(&deadline, "deadline", "", "do not run after this time: RFC 3339, a date, or a duration from now such as 1h or 7d")
	f.StringVar(&idemKey, "idempotency-key", "", "send at most once per key and queue; also handed to the handler")
	f.IntVar(&priority, "priority", 0, "priority level of a queue created with --priorities: 0 (default, read first) to levels-1")
	f.StringArrayVar(&headers, "header", nil, "extra header key=value (repeatable); keys starting with pgbus_ are reserved")
	return jsonFlag(cmd)
}
