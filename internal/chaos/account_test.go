package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// tablesOf returns the tables a message of queue q can be in, each with the
// queue name its failure history is kept under: the live queue and its
// archive, the DLQ and its archive (discarded messages).
func tablesOf(q string) [][2]string {
	d := q + "_dlq"
	return [][2]string{{"q_" + q, q}, {"a_" + q, q}, {"q_" + d, d}, {"a_" + d, d}}
}

// unionOf selects cols, with the table (tbl) and its history name (base),
// from every table a message of q can be in.
func unionOf(q, cols string) string {
	var parts []string
	for _, t := range tablesOf(q) {
		parts = append(parts, fmt.Sprintf(`SELECT '%s' AS tbl, '%s' AS base, %s FROM pgmq."%s"`, t[0], t[1], cols, t[0]))
	}
	return strings.Join(parts, " UNION ALL ")
}

// stored is one message row at the end of the soak.
type stored struct {
	tbl, uid string
	trips    int // pgbus_dlq_retries: its trips out of a DLQ
	failures int // its recorded failures the downstream answered (500, 422)
}

// account checks the end state against what was sent and done, and logs
// the soak's figures.
func (h *harness) account(elapsed time.Duration) {
	rows := h.storedRows()
	byUID := map[string][]stored{}
	for _, r := range rows {
		byUID[r.uid] = append(byUID[r.uid], r)
	}
	h.checkExactlyOnce(byUID)
	where := h.checkMoves(rows)
	h.checkSummary()
	h.checkQueueStats(where)
	h.checkFailures(rows)
	h.logFigures(where, elapsed)
}

// storedRows reads every message of the soak's queues with its history.
func (h *harness) storedRows() []stored {
	ctx := context.Background()
	var out []stored
	for _, q := range queues {
		rows, err := h.st.Pool().Query(ctx, `SELECT m.tbl, coalesce(m.message->>'uid', ''),
				coalesce((m.headers->>'pgbus_dlq_retries')::int, 0),
				(SELECT count(*) FROM pgbus.failures f WHERE f.queue_name = m.base AND f.msg_id = m.msg_id AND f.error_class IN ('http.500', 'http.422'))
			FROM (`+unionOf(q, "msg_id, message, headers")+`) AS m`)
		if err != nil {
			h.t.Fatalf("read the messages of %s: %v", q, err)
		}
		for rows.Next() {
			var s stored
			if err := rows.Scan(&s.tbl, &s.uid, &s.trips, &s.failures); err != nil {
				h.t.Fatal(err)
			}
			out = append(out, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			h.t.Fatal(err)
		}
	}
	return out
}

// checkExactlyOnce fails for every message sent that is stored nowhere or
// more than once, in the wrong queue's tables, and for any stored message
// that was never sent.
func (h *harness) checkExactlyOnce(byUID map[string][]stored) {
	var lost, dup []string
	for _, p := range h.send.sent {
		rows := byUID[p.UID]
		switch {
		case len(rows) == 0:
			lost = append(lost, p.UID)
		case len(rows) > 1:
			dup = append(dup, fmt.Sprintf("%s in %v", p.UID, rows))
		case !strings.HasSuffix(strings.TrimSuffix(rows[0].tbl, "_dlq"), p.Queue):
			h.t.Errorf("message %s was sent to %s but is in %s", p.UID, p.Queue, rows[0].tbl)
		}
		delete(byUID, p.UID)
	}
	if len(lost) > 0 {
		h.t.Errorf("%d messages LOST (in no table), the first: %v", len(lost), lost[:min(10, len(lost))])
	}
	if len(dup) > 0 {
		h.t.Errorf("%d messages DUPLICATED, the first: %v", len(dup), dup[:min(10, len(dup))])
	}
	for uid, rows := range byUID {
		h.t.Errorf("message %q is stored (%v) but was never sent", uid, rows)
	}
}

// checkMoves compares the retries and discards the tables record with those
// the calls reported: a message's trips out of a DLQ count in its
// pgbus_dlq_retries header, and a discarded message is in its DLQ's
// archive. Calls that failed under a restart may have moved messages
// without reporting them, up to the unsure counts. It returns how many
// messages each table holds.
func (h *harness) checkMoves(rows []stored) map[string]int {
	where := map[string]int{}
	trips := 0
	for _, r := range rows {
		where[r.tbl]++
		trips += r.trips
	}
	discarded := 0
	for _, q := range queues {
		discarded += where["a_"+q+"_dlq"]
	}
	h.t.Logf("recorded: %d trips out of a DLQ, %d messages discarded", trips, discarded)
	f := h.fix
	if trips < f.retried || trips > f.retried+f.retryUnsure {
		h.t.Errorf("messages record %d trips out of a DLQ; the calls reported %d retried, and at most %d more unsure", trips, f.retried, f.retryUnsure)
	}
	if discarded < f.discarded || discarded > f.discarded+f.discardUnsure {
		h.t.Errorf("the DLQ archives hold %d messages; the calls reported %d discarded, and at most %d more unsure", discarded, f.discarded, f.discardUnsure)
	}
	return where
}

// checkSummary compares pgbus dlq summary --json, and pgbus_dlq_summary,
// with the DLQ tables grouped in SQL.
func (h *harness) checkSummary() {
	want := h.groupsInTables()
	var fromCLI ops.DLQSummary
	h.cliJSON(&fromCLI, "dlq", "summary", "--json")
	if got := groupsOf(fromCLI); !slices.Equal(got, want) {
		h.t.Errorf("pgbus dlq summary --json groups:\n%v\nthe DLQ tables:\n%v", got, want)
	}
	var fromMCP ops.DLQSummary
	h.callTool(&fromMCP, "pgbus_dlq_summary", map[string]any{})
	if got := groupsOf(fromMCP); !slices.Equal(got, want) {
		h.t.Errorf("pgbus_dlq_summary groups:\n%v\nthe DLQ tables:\n%v", got, want)
	}
}

// groupsOf renders a summary's groups as sorted lines.
func groupsOf(s ops.DLQSummary) []string {
	var out []string
	var total int64
	for _, g := range s.Groups {
		reasons := slices.Sorted(slices.Values(g.Reasons))
		out = append(out, fmt.Sprintf("%s %s %s %q %v %d", g.DLQ, g.SourceQueue, g.Kind, g.ErrorClass, reasons, g.Count))
		total += g.Count
	}
	slices.Sort(out)
	return append(out, fmt.Sprintf("total %d in %d groups", s.Total, s.TotalGroups))
}

// groupsInTables groups the DLQ tables as groupsOf renders a summary.
func (h *harness) groupsInTables() []string {
	var out []string
	total, groups := 0, 0
	for _, q := range queues {
		rows, err := h.st.Pool().Query(context.Background(), fmt.Sprintf(`
			SELECT coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''),
				coalesce(headers->>'pgbus_kind', message->>'job_class', ''),
				coalesce(headers->'pgbus_dead_letter'->>'error_class', ''),
				array_agg(DISTINCT headers->'pgbus_dead_letter'->>'reason' ORDER BY headers->'pgbus_dead_letter'->>'reason'),
				count(*)
			FROM pgmq."q_%s_dlq" GROUP BY 1, 2, 3`, q))
		if err != nil {
			h.t.Fatalf("group the DLQ of %s: %v", q, err)
		}
		for rows.Next() {
			var src, kind, class string
			var reasons []string
			var n int
			if err := rows.Scan(&src, &kind, &class, &reasons, &n); err != nil {
				h.t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s_dlq %s %s %q %v %d", q, src, kind, class, reasons, n))
			total, groups = total+n, groups+1
		}
		rows.Close()
	}
	slices.Sort(out)
	return append(out, fmt.Sprintf("total %d in %d groups", total, groups))
}

// checkQueueStats compares pgbus queues --json with the tables.
func (h *harness) checkQueueStats(where map[string]int) {
	var res ops.QueueStatsResult
	h.cliJSON(&res, "queues", "--json")
	seen := 0
	for _, s := range res.Queues {
		if !slices.Contains(queues, s.Queue) {
			continue
		}
		seen++
		got := [3]int64{s.Depth, s.DLQDepth, s.Archived}
		want := [3]int64{int64(where["q_"+s.Queue]), int64(where["q_"+s.Queue+"_dlq"]), int64(where["a_"+s.Queue])}
		if got != want {
			h.t.Errorf("pgbus queues --json %s: depth, DLQ depth, archived = %v; the tables hold %v", s.Queue, got, want)
		}
	}
	if seen != len(queues) {
		h.t.Errorf("pgbus queues --json lists %d of the %d soak queues", seen, len(queues))
	}
}

// checkFailures checks the failure history against the downstream and the
// tables.
func (h *harness) checkFailures(rows []stored) {
	h.checkFailuresPerMessage(rows)
	h.checkFailureRows()
}

// checkFailuresPerMessage checks that no message has more failures recorded
// than the downstream gave it (none recorded twice, none made up) and that
// every archived message was answered 200 at least once.
func (h *harness) checkFailuresPerMessage(rows []stored) {
	for _, r := range rows {
		if n := h.down.failsOf(r.uid); r.failures > n {
			h.t.Errorf("message %s (%s) has %d failures recorded but the downstream failed it %d times", r.uid, r.tbl, r.failures, n)
		}
		if strings.HasPrefix(r.tbl, "a_") && !strings.HasSuffix(r.tbl, "_dlq") && h.down.successesOf(r.uid) == 0 {
			h.t.Errorf("message %s is archived as done, but the downstream never answered it 200", r.uid)
		}
	}
}

// checkFailureRows checks that every failure belongs to a stored message:
// the history followed its message into DLQs, back and into archives; and
// that every dead message's block names a failure of its history.
func (h *harness) checkFailureRows() {
	for _, q := range queues {
		for _, base := range []string{q, q + "_dlq"} {
			if n := h.count(fmt.Sprintf(`SELECT count(*) FROM pgbus.failures f WHERE queue_name = $1
				AND NOT EXISTS (SELECT 1 FROM pgmq."q_%[1]s" m WHERE m.msg_id = f.msg_id)
				AND NOT EXISTS (SELECT 1 FROM pgmq."a_%[1]s" m WHERE m.msg_id = f.msg_id)`, base), base); n > 0 {
				h.t.Errorf("%d failures of %s belong to no message there", n, base)
			}
		}
		if n := h.count(fmt.Sprintf(`SELECT count(*) FROM pgmq."q_%s_dlq" d
			WHERE d.headers->'pgbus_dead_letter' ? 'error_attempt' AND NOT EXISTS (
				SELECT 1 FROM pgbus.failures f WHERE f.queue_name = $1 AND f.msg_id = d.msg_id
				AND f.attempt = (d.headers->'pgbus_dead_letter'->>'error_attempt')::int
				AND f.error_class = d.headers->'pgbus_dead_letter'->>'error_class')`, q), q+"_dlq"); n > 0 {
			h.t.Errorf("%d dead messages of %s name a last failure their history does not hold", n, q)
		}
	}
	if n := h.count(`SELECT count(*) FROM pgbus.failures WHERE NOT queue_name = ANY($1)`, h.historyNames()); n > 0 {
		h.t.Errorf("%d failures name a queue the soak does not have", n)
	}
}

func (h *harness) historyNames() []string {
	var names []string
	for _, q := range queues {
		names = append(names, q, q+"_dlq")
	}
	return names
}

func (h *harness) count(sql string, args ...any) int {
	var n int
	if err := h.st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// cliJSON runs a pgbus command that must succeed and decodes its output.
func (h *harness) cliJSON(out any, args ...string) {
	stdout, err := cli(context.Background(), h.pg.URL(), args...)
	if err != nil {
		h.t.Fatalf("%v\n%s", err, stdout)
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		h.t.Fatalf("pgbus %v: %v\n%s", args, err, stdout)
	}
}
