package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// causeMessages are error messages of one kind and class: pairs that differ
// only by a number, a uuid, a quoted value or a hex string, and two that
// say different things. want maps each normalized pattern to its count.
var causeMessages = []string{
	"order 42 failed", "order 43 failed",
	"user 0b7c4e1a-3f5e-4f8e-9a2b-1c2d3e4f5a6b not found", "user 9F8E7D6C-5B4A-4F3E-8D2C-1B0A9F8E7D6C not found",
	`bad ref 'abc' in row`, `bad ref "x\"y"  in row`,
	"checksum 3fa9c2e1d0b4 mismatch", "checksum 0x1F2E mismatch",
	"card declined", "address invalid",
	`400: {"error":"amount is missing","code":"E1"}`, `400: {"error":"amount is missing","code":"E2"}`,
	`400: {"error":"currency \"GBP\" is not supported"}`, `400: {"error":"currency \"XTS\" is not supported"}`,
	"order ord_8f7a6b5c not found", "order ord_1a2b3c4d not found",
}

var causePatterns = map[string]int64{
	"order <n> failed":                               2,
	"user <uuid> not found":                          2,
	"bad ref <str> in row":                           2,
	"checksum <hex> mismatch":                        2,
	"card declined":                                  1,
	"address invalid":                                1,
	`<n>: {<str>:"amount is missing",<str>:<str>}`:   2,
	`<n>: {<str>:"currency <str> is not supported"}`: 2,
	"order <id> not found":                           2,
}

func deadWithMessages(t testing.TB, s *store.Store, q, kind string, msgs []string) []int64 {
	t.Helper()
	specs := make([]pgtest.DeadSpec, len(msgs))
	for i, m := range msgs {
		specs[i] = pgtest.DeadSpec{Kind: kind, Class: "Failed", Message: m, Payload: fmt.Sprintf(`{"n": %d, "partner": "p-%d"}`, i, i%2)}
	}
	return pgtest.DeadLetter(t, s, q, specs...)
}

func checkPatterns(t testing.TB, gs []store.DeadGroup, ids []int64) {
	t.Helper()
	if len(gs) != len(causePatterns) {
		t.Fatalf("%d groups, want %d:%s", len(gs), len(causePatterns), dumpGroups(gs))
	}
	for _, g := range gs {
		if want, ok := causePatterns[g.ErrorPattern]; !ok || g.Count != want {
			t.Fatalf("group %q has %d messages, want %d:%s", g.ErrorPattern, g.Count, want, dumpGroups(gs))
		}
		// The representative message is the newest one's, as it was written.
		newest := g.SampleMsgIDs[0]
		i := indexOf(ids, newest)
		if i < 0 || g.ErrorMessage != causeMessages[i] {
			t.Fatalf("group %q: message %q, want that of its newest message %d", g.ErrorPattern, g.ErrorMessage, newest)
		}
	}
}

func indexOf(ids []int64, id int64) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// Messages whose errors differ only by values group together, others do
// not, and the counts and the messages agree on it.
func TestDeadGroupsByErrorPattern(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	kind := uniqueName("cause")
	ids := deadWithMessages(t, s, q, kind, causeMessages)
	gs := checkGroups(t, s, store.DLQName(q), store.DeadFilter{Queue: q}, "after dead-lettering")
	checkPatterns(t, gs, ids)
	// Deleting one of a pair leaves its group with the other.
	if _, err := s.Pool().Exec(testContext(t), `DELETE FROM pgmq."q_`+store.DLQName(q)+`" WHERE msg_id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	gs = checkGroups(t, s, store.DLQName(q), store.DeadFilter{Queue: q}, "after a delete")
	for _, g := range gs {
		if g.ErrorPattern == "order <n> failed" && (g.Count != 1 || g.ErrorMessage != "order 42 failed") {
			t.Fatalf("after deleting %q the group is%s", causeMessages[1], dumpGroups([]store.DeadGroup{g}))
		}
	}
}

// The normalization bounds what it keeps and collapses white space.
func TestDeadErrorNormBounds(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	var norm string
	long := strings.Repeat("word ", 300)
	if err := s.Pool().QueryRow(testContext(t), `SELECT pgbus.dlq_error_norm($1)`, "  id\t7  "+long).Scan(&norm); err != nil {
		t.Fatal(err)
	}
	if len(norm) != 500 || !strings.HasPrefix(norm, "id <n> word word") {
		t.Fatalf("normalized %d characters starting %.30q, want 500 starting \"id <n> word word\"", len(norm), norm)
	}
	for in, want := range map[string]string{
		"can't parse 12": "can't parse <n>", "": "", "deadbeef cafe": "deadbeef cafe",
		// Prose in quotes stays, its values normalized; quote pairs stay
		// paired after it.
		`lookup of "sku 77" failed: "x"`:             `lookup of "sku <n>" failed: <str>`,
		`{"message":"not allowed here","field":"a"}`: `{<str>:"not allowed here",<str>:<str>}`,
		"name 'Ada Lovelace' taken; id 'u1'":         "name 'Ada Lovelace' taken; id <str>",
		"job `make all` failed in `/tmp`":            "job `make all` failed in <str>",
		"request req-20240101x: sha256 mismatch":     "request req-<n>x: sha<n> mismatch",
		"key k7Xq2Lp9 and a1b2c3 unknown":            "key <id> and <id> unknown",
		"stray  control ":                          "stray control",
		// A number is one value, its sign and decimals included; a
		// dash between digits (a date) stays.
		"no response within 1.025s":               "no response within <n>s",
		"no response within 3s":                   "no response within <n>s",
		"amount must be positive, got -20":        "amount must be positive, got <n>",
		"x=-5 y=(-1.5) on 2024-01-01 at 10.0.0.1": "x=<n> y=(<n>) on <n>-<n>-<n> at <n>",
		"sentence ends at 3. Then more":           "sentence ends at <n>. Then more",
		// A number with a unit or a name is that number, whatever its
		// width: 919ms and 1544ms are one cause.
		"timeout after 919ms talking to 10.0.3.7:5432":  "timeout after <n>ms talking to <n>:<n>",
		"timeout after 1544ms talking to 10.0.3.9:5432": "timeout after <n>ms talking to <n>:<n>",
		"body of 2048KB over 512KB":                     "body of <n>KB over <n>KB",
		"user5 and user357 and order-12345 missing":     "user<n> and user<n> and order-<n> missing",
		// An e-mail address is one value, its digits included; the
		// user and host of a URL stay.
		"mailbox full for bravo.delta@example.com":           "mailbox full for <email>",
		"mailbox full for Zoe_99+tag@mail-3.example.co.uk":   "mailbox full for <email>",
		"to <ops7@example.org>, cc a@b.io; from x@localhost": "to <<email>>, cc <email>; from x@localhost",
		"dial postgres://svc:xxxxx@db.internal/app failed":   "dial postgres://svc:xxxxx@db.internal/app failed",
		"GET https://bob@api.example.com/v1 refused":         "GET https://bob@api.example.com/v<n> refused",
		// A character written as an escape, as a database in LATIN1
		// stores one it has no room for (Ошибка as \u041e...), is that
		// character, its digits kept: two words are two causes.
		`\u0442\u0435\u0441\u0442 7 failed`:        `\u0442\u0435\u0441\u0442 <n> failed`,
		`\u0432\u0440\u0435\u0434 7 failed`:        `\u0432\u0440\u0435\u0434 <n> failed`,
		`\u04142 and \u0414.5`:                     `\u0414<n> and \u0414.<n>`,
		`\U0001f600 at 12, \ufeed`:                 `\U0001f600 at <n>, \ufeed`,
		`mail to \u0430\u0431@example.com bounced`: "mail to <email> bounced",
		`C:\tmp\k7Xq2Lp9.log and \u0430x12 gone`:   `C:\tmp\<id>.log and \u0430x<n> gone`,
	} {
		if err := s.Pool().QueryRow(testContext(t), `SELECT pgbus.dlq_error_norm($1)`, in).Scan(&norm); err != nil || norm != want {
			t.Fatalf("dlq_error_norm(%q) = %q, %v; want %q", in, norm, err, want)
		}
	}
}

// A breakdown by a payload field counts each group's values, the most
// frequent first, the rest as other, and those without the field as
// missing, alike on both paths.
func TestDeadGroupsByField(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	kind := uniqueName("field")
	var specs []pgtest.DeadSpec
	add := func(n int, payload string) {
		for range n {
			specs = append(specs, pgtest.DeadSpec{Kind: kind, Class: "Failed", Message: fmt.Sprintf("upload %d rejected", len(specs)), Payload: payload})
		}
	}
	add(4, `{"partner": "p-9", "file": {"type": "pdf"}}`)
	add(2, `{"partner": "p-9", "file": {"type": "png"}}`)
	for i := range 6 {
		add(1, fmt.Sprintf(`{"partner": "p-9", "file": {"type": "t%d"}}`, i))
	}
	add(1, `{"partner": "p-9", "file": {"type": 7}}`)
	add(2, `{"partner": "p-9"}`)
	pgtest.DeadLetter(t, s, q, specs...)
	for _, f := range []store.DeadFilter{{Queue: q}, {Queue: q, Since: epoch}} {
		sum, err := s.SummarizeDeadWith(ctx, f, store.SummaryOptions{ByField: []string{"file", "type"}})
		if err != nil || len(sum.Groups) != 1 || sum.Groups[0].ByField == nil {
			t.Fatalf("summary by file.type (%+v) = %+v, %v", f, sum, err)
		}
		b := sum.Groups[0].ByField
		got := fmt.Sprint(b.Values)
		if got != "[{pdf 4} {png 2} {7 1} {t0 1} {t1 1}]" || b.Other != 4 || b.Missing != 2 {
			t.Fatalf("breakdown by file.type (%+v): values %s other %d missing %d", f, got, b.Other, b.Missing)
		}
		sum, err = s.SummarizeDeadWith(ctx, f, store.SummaryOptions{ByField: []string{"partner"}})
		if err != nil || fmt.Sprint(sum.Groups[0].ByField) != "&{[{p-9 15}] 0 0}" {
			t.Fatalf("breakdown by partner (%+v) = %+v, %v", f, sum.Groups[0].ByField, err)
		}
	}
	_, err := s.SummarizeDeadWith(ctx, store.DeadFilter{Queue: q}, store.SummaryOptions{ByField: []string{"file", ""}})
	wantErr(t, "an empty key", err, store.ErrInvalid, "empty, overlong or invalid key")
}

// Migration 0010 regroups the DLQs that 0007 counted: by pattern, under
// the new index, the old one dropped.
func TestMigrationRegroupsDLQs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, all := storeAtVersion(t, 9)
	q := uniqueName("old")
	dlq := store.DLQName(q)
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	ids := deadAsAnOldVersion(t, s, q, "k", causeMessages)
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_groups WHERE dlq = $1`, dlq); n != 1 {
		t.Fatalf("before 0010: %d rows in pgbus.dlq_groups, want 1 (one class, one reason)", n)
	}
	if st, err := s.Migrate(ctx); err != nil || st.Applied != len(all)-9 {
		t.Fatalf("migrate = %+v, %v", st, err)
	}
	checkPatterns(t, checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after 0010"), ids)
	idx := func(name string) int {
		return dlCount(t, s, `SELECT count(*) FROM pg_class WHERE relname = $1`, "q_"+dlq+name)
	}
	if idx("_grp_idx") != 0 || idx("_cause_idx") != 1 {
		t.Fatalf("indexes after 0010: _grp_idx %d, _cause_idx %d; want 0 and 1", idx("_grp_idx"), idx("_cause_idx"))
	}
	deadWithMessages(t, s, q, "k", causeMessages[:1])
	checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after dead-lettering under 0010")
	if plan := explainProbe(t, s, dlq); !strings.Contains(plan, "q_"+dlq+"_cause_idx") {
		t.Fatalf("the summary's probe of a group does not use the group index:\n%s", plan)
	}
}

// deadAsAnOldVersion writes dead letters straight into the DLQ table, as
// a pgbus of the schema under test wrote them: today's store writes
// columns that later migrations add.
func deadAsAnOldVersion(t *testing.T, s *store.Store, q, kind string, msgs []string) []int64 {
	t.Helper()
	ids := make([]int64, len(msgs))
	for i, m := range msgs {
		headers := map[string]any{"pgbus_kind": kind, store.HeaderDeadLetter: map[string]any{
			"source_queue": q, "error_class": "Failed", "error_message": m, "reason": store.ReasonMaxRetriesExceeded}}
		h, err := json.Marshal(headers)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Pool().QueryRow(testContext(t), `INSERT INTO pgmq."q_`+store.DLQName(q)+`" (message, headers, vt)
			VALUES ($1::jsonb, $2::jsonb, now()) RETURNING msg_id`, fmt.Sprintf(`{"n": %d, "partner": "p-%d"}`, i, i%2), string(h)).Scan(&ids[i])
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// explainProbe returns the plan of the query that reads a group's newest
// messages, as the summary's fast path does, with sequential scans off: a
// tiny table would be scanned anyway, and the question is whether the
// index matches the expression at all.
func explainProbe(t testing.TB, s *store.Store, dlq string) string {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN SELECT msg_id FROM pgmq."q_`+dlq+`" d
		WHERE pgbus.dlq_cause_key(d.headers, d.message) = $1::uuid ORDER BY enqueued_at DESC, msg_id DESC LIMIT 5`, "00000000-0000-0000-0000-000000000000")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return b.String()
}

// emailMessages are one cause that names a different address each time,
// and another cause.
var emailMessages = []string{
	"mailbox full for bravo.delta@example.com", "mailbox full for alpha@example.org",
	"mailbox full for charlie+news@mail.example.co.uk", "mailbox full for echo@example.net",
	"card declined",
}

func checkEmailGroups(t *testing.T, gs []store.DeadGroup, step string) {
	t.Helper()
	if len(gs) != 2 || gs[0].ErrorPattern != "mailbox full for <email>" || gs[0].Count != 4 || gs[1].ErrorPattern != "card declined" || gs[1].Count != 1 {
		t.Fatalf("%s:%s\nwant 4 of mailbox full for <email>, 1 of card declined", step, dumpGroups(gs))
	}
}

// Messages whose errors differ only by an e-mail address are one group.
func TestDeadGroupsByEmail(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	deadWithMessages(t, s, q, uniqueName("mail"), emailMessages)
	checkEmailGroups(t, checkGroups(t, s, store.DLQName(q), store.DeadFilter{Queue: q}, "after dead-lettering"), "after dead-lettering")
}

// Migration 30 regroups the dead messages a DLQ held before it: its index
// of error groups rebuilt and its groups recounted.
func TestMigrationGroupsEmails(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, all := storeAtVersion(t, 29)
	if m := all[29]; !strings.Contains(m.SQL, "<email>") {
		t.Fatalf("migration 30 (%s) no longer groups e-mail addresses: pick the migration that does", m.Name)
	}
	q := uniqueName("old")
	dlq := store.DLQName(q)
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	deadAsAnOldVersion(t, s, q, "k", emailMessages)
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != len(emailMessages) {
		t.Fatalf("before 0030: %d groups counted, want %d (one per address)", n, len(emailMessages))
	}
	if st, err := s.Migrate(ctx); err != nil || st.Applied != len(all)-29 {
		t.Fatalf("migrate = %+v, %v", st, err)
	}
	checkEmailGroups(t, checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after 0030"), "after 0030")
	deadWithMessages(t, s, q, "k", []string{"mailbox full for foxtrot@example.com"})
	gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after dead-lettering under 0030")
	if len(gs) != 2 || gs[0].Count != 5 || gs[0].ErrorMessage != "mailbox full for foxtrot@example.com" {
		t.Fatalf("after dead-lettering under 0030:%s\nwant 5 of mailbox full for <email>, the newest foxtrot's", dumpGroups(gs))
	}
	if plan := explainProbe(t, s, dlq); !strings.Contains(plan, "q_"+dlq+"_cause_idx") {
		t.Fatalf("the summary's probe of a group does not use the group index:\n%s", plan)
	}
}

// latin1Messages are errors as a database in LATIN1 stores them, their
// Cyrillic written as escapes (textFit): the first two differ by a number
// alone, the third says another thing in as many letters.
var latin1Messages = []string{`\u0442\u0435\u0441\u0442 7 failed`, `\u0442\u0435\u0441\u0442 8 failed`, `\u0432\u0440\u0435\u0434 7 failed`}

// Migration 35 regroups the dead messages of a DLQ whose error texts hold
// characters written as escapes, which the normalization before it took
// for numbers, making one group of different causes: its index is rebuilt
// and its groups recounted. A DLQ whose texts hold no escape keeps its
// index as it was, unbuilt again; one whose groups are not counted has its
// messages read for escapes instead, and is rebuilt when they hold some.
func TestMigrationKeepsEscapedCharacters(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const before = 34
	url, all := migratedUpTo(t, pgtest.NewLatin1Database(t), before)
	if m := all[before]; !strings.Contains(m.SQL, `(?<!\\u[0-9a-fA-F]{0,3})`) {
		t.Fatalf("migration %d (%s) no longer keeps escapes whole: pick the migration that does", m.Version, m.Name)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	// untracked's groups are not counted: its triggers are off.
	q, plain, untracked := uniqueName("old"), uniqueName("plain"), uniqueName("untracked")
	dlq := store.DLQName(q)
	for _, name := range []string{q, plain, untracked} {
		if err := s.CreateQueue(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	deadAsAnOldVersion(t, s, q, "k", latin1Messages)
	deadAsAnOldVersion(t, s, plain, "k", causeMessages[:2])
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+store.DLQName(untracked)+`" DISABLE TRIGGER pgbus_dlq_groups_ins`); err != nil {
		t.Fatal(err)
	}
	deadAsAnOldVersion(t, s, untracked, "k", latin1Messages)
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != 1 {
		t.Fatalf("before migration %d: %d groups counted, want 1 (every escape's digits a number)", before+1, n)
	}
	filenode := func(queue string) int {
		return dlCount(t, s, `SELECT pg_relation_filenode(to_regclass($1))::bigint`, `pgmq."q_`+store.DLQName(queue)+`_cause_idx"`)
	}
	kept, rebuilt := filenode(plain), filenode(untracked)
	if st, err := s.Migrate(ctx); err != nil || st.Applied != len(all)-before {
		t.Fatalf("migrate = %+v, %v", st, err)
	}
	gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after the migration")
	if len(gs) != 2 || gs[0].ErrorPattern != `\u0442\u0435\u0441\u0442 <n> failed` || gs[0].Count != 2 ||
		gs[1].ErrorPattern != `\u0432\u0440\u0435\u0434 <n> failed` || gs[1].Count != 1 {
		t.Fatalf("after the migration:%s\nwant 2 of %s, 1 of %s", dumpGroups(gs), latin1Messages[0], latin1Messages[2])
	}
	if plan := explainProbe(t, s, dlq); !strings.Contains(plan, "q_"+dlq+"_cause_idx") {
		t.Fatalf("the summary's probe of a group does not use the group index:\n%s", plan)
	}
	if filenode(plain) != kept {
		t.Errorf("the migration rebuilt the group index of %s, whose error texts hold no escape", plain)
	}
	if filenode(untracked) == rebuilt {
		t.Errorf("the migration did not rebuild the group index of %s, whose groups are not counted and whose error texts hold escapes", untracked)
	}
	checkGroups(t, s, store.DLQName(plain), store.DeadFilter{Queue: plain}, "after the migration")
}
