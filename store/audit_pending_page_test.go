package store_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The audit log's pages leave out a pending entry another completes, as
// the listing saw the log when its first page was read: an operation that
// ended between two pages, its pending entry on the later one and its
// completion newer than the first, is shown there as not finished rather
// than on no page at all; one completed before the first page shows by its
// completion alone.
func TestAuditPagesKeepAnOperationCompletedBetweenThem(t *testing.T) {
	t.Parallel()
	s := pgtest.Store(t)
	ctx := testContext(t)
	client := pgtest.Name("pages")
	f := store.AuditFilter{Client: client}
	entry := func(tool string) store.AuditEntry {
		return store.AuditEntry{Client: client, Tool: tool, Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{}`)}
	}
	record := func(e store.AuditEntry) {
		t.Helper()
		if err := s.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	list := func(cursor string) store.AuditPage {
		t.Helper()
		page, err := s.ListAudit(ctx, f, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}

	// Completed before the listing: its completion alone, on the first page.
	done, err := s.StartAudit(ctx, entry("dlq_retry"))
	if err != nil {
		t.Fatal(err)
	}
	finished := entry("dlq_retry")
	finished.Completes = done
	// Under way while the first page is read, below it.
	running, err := s.StartAudit(ctx, entry("dlq_discard"))
	if err != nil {
		t.Fatal(err)
	}
	record(finished)
	record(entry("queue_pause"))
	record(entry("queue_resume"))

	first := list("")
	if len(first.Items) != 2 || first.Items[0].Tool != "queue_resume" || first.Items[1].Tool != "queue_pause" || first.NextCursor == "" {
		t.Fatalf("first page: %+v; want queue_resume and queue_pause, and a cursor", first)
	}
	ended := entry("dlq_discard")
	ended.Completes = running
	record(ended) // between the pages

	var seen []store.AuditEntry
	for cursor := first.NextCursor; cursor != ""; {
		page := list(cursor)
		seen = append(seen, page.Items...)
		cursor = page.NextCursor
	}
	var discards, retries int
	for _, e := range seen {
		switch {
		case e.Tool == "dlq_discard":
			discards++
			if e.ID != running || !e.Pending {
				t.Errorf("the discard on the later pages: %+v; want its pending entry %d, not finished as the first page saw the log", e, running)
			}
		case e.Tool == "dlq_retry":
			retries++
			if e.Pending {
				t.Errorf("the retry completed before the listing shows by its pending entry %d too", e.ID)
			}
		}
	}
	if discards != 1 || retries != 1 {
		t.Fatalf("later pages: %+v; want the discard that ended between the pages once, and the completed retry once", seen)
	}
}

// An operation whose pending entry nothing completes (its process was
// stopped before it recorded the outcome) is on the page its entry falls
// on, the first or a later one, as not finished; one completed shows by
// its completion alone.
func TestAuditPagesKeepPendingEntriesNeverCompleted(t *testing.T) {
	t.Parallel()
	s := pgtest.Store(t)
	ctx := testContext(t)
	client := pgtest.Name("never")
	f := store.AuditFilter{Client: client}
	entry := func(tool string) store.AuditEntry {
		return store.AuditEntry{Client: client, Tool: tool, Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{}`)}
	}
	start := func(tool string) int64 {
		t.Helper()
		id, err := s.StartAudit(ctx, entry(tool))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	record := func(e store.AuditEntry) {
		t.Helper()
		if err := s.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	stopped := map[int64]bool{}
	for i := 0; i < 3; i++ {
		stopped[start("dlq_discard")] = true
		record(entry("queue_pause"))
		record(entry("queue_resume"))
	}
	done := start("dlq_retry")
	finished := entry("dlq_retry")
	finished.Completes = done
	record(finished)
	stopped[start("dlq_purge")] = true // the newest, on the first page

	seen := map[int64]int{}
	var pages, retries int
	for cursor := ""; ; pages++ {
		page, err := s.ListAudit(ctx, f, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Items {
			seen[e.ID]++
			if e.Tool == "dlq_retry" {
				retries++
				if e.Pending {
					t.Errorf("the retry completed shows by its pending entry %d", e.ID)
				}
			}
			if stopped[e.ID] != e.Pending {
				t.Errorf("entry %d (%s) pending %v; want %v", e.ID, e.Tool, e.Pending, stopped[e.ID])
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	for id := range stopped {
		if seen[id] != 1 {
			t.Errorf("pending entry %d never completed is listed %d times over %d pages; want once", id, seen[id], pages+1)
		}
	}
	if retries != 1 || pages < 3 {
		t.Errorf("the retry listed %d times over %d pages; want once, over at least 4 pages", retries, pages+1)
	}
}
