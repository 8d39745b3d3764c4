package tools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// DLQListInput is the input of pgbus_dlq_list.
type DLQListInput struct {
	DeadFilter
	Cursor string `json:"cursor,omitempty" jsonschema_description:"next_cursor of the previous page, with the same filters. Omit for the first page."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=25" jsonschema_description:"Messages per page: 1 to 100, default 25."`
}

// DLQListOutput is the output of pgbus_dlq_list.
type DLQListOutput struct {
	Items      []store.DeadItem `json:"items" jsonschema_description:"Dead messages, newest first, without payload or backtrace (pgbus_dlq_show has them)."`
	NextCursor string           `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor, with the same filters, for the next page. Absent on the last page."`
	Notes      []string         `json:"notes" jsonschema_description:"What was shortened, and how to see it."`
}

// listErrorChars bounds each item's error message in pgbus_dlq_list.
const listErrorChars = 300

const dlqListDescription = `Lists dead messages, newest first, one page at a time: DLQ, id, kind, reason, source queue, attempts, error class and error message, dead-letter time and payload size. No payloads or backtraces; error messages cut to 300 characters.

Use it to see the individual messages of a group from pgbus_dlq_summary, with the same filters (queue, kind, error_class, reason, since, until, text). Pages: pass next_cursor back as cursor with the same filters; limit 1 to 100, default 25. Next: pgbus_dlq_show (queue: the item's dlq, msg_id) for one message in full; pgbus_dlq_retry or pgbus_dlq_discard with the ids or the same filters.`

// NewDLQList returns the pgbus_dlq_list tool.
func NewDLQList(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_dlq_list", dlqListDescription, readAnnotations("List dead messages"), DLQListInput{}, DLQListOutput{}),
		Handler: handler(func(ctx context.Context, in DLQListInput) (DLQListOutput, error) {
			limit, err := pageLimit(in.Limit)
			if err != nil {
				return DLQListOutput{}, err
			}
			cursor, now, err := splitCursor(in.Cursor)
			if err != nil {
				return DLQListOutput{}, err
			}
			f, err := in.toStore(now)
			if err != nil {
				return DLQListOutput{}, err
			}
			page, err := d.DLQ.List(ctx, f, cursor, limit)
			out := DLQListOutput{Items: page.Items, NextCursor: page.NextCursor, Notes: []string{}}
			cut := 0
			for i := range out.Items {
				var c bool
				if out.Items[i].ErrorMessage, c = cutChars(out.Items[i].ErrorMessage, listErrorChars); c {
					cut++
				}
			}
			if cut > 0 {
				out.Notes = append(out.Notes, fmt.Sprintf("%d error messages are cut to %d characters; pgbus_dlq_show has them whole", cut, listErrorChars))
			}
			if out.NextCursor != "" && in.relative() {
				// An age (since: 24h) must mean the same instant on every
				// page, or the engine rejects the cursor as issued for
				// other filters: pin the first page's clock in the cursor.
				out.NextCursor += cursorClockSep + strconv.FormatInt(now.UnixMicro(), 36)
			}
			return out, err
		}),
	}
}

// cursorClockSep separates the engine's cursor from the clock pinned for
// filters given as ages; it is not in the base64url alphabet of the
// engine's cursors.
const cursorClockSep = "~"

// splitCursor splits a cursor of pgbus_dlq_list into the engine's cursor
// and the time ages count back from: the pinned one, or now.
func splitCursor(c string) (string, time.Time, error) {
	engineCursor, clock, pinned := strings.Cut(c, cursorClockSep)
	if !pinned {
		return c, time.Now().Truncate(time.Microsecond), nil
	}
	us, err := strconv.ParseInt(clock, 36, 64)
	if err != nil || us <= 0 {
		return "", time.Time{}, fixf("cursor is not one this server issued; start again without cursor")
	}
	return engineCursor, time.UnixMicro(us), nil
}
