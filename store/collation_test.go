package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// collatedNames are queue names that ICU's en-US sorts otherwise than
// bytes do: it puts "_" before digits, and digits before letters.
var collatedNames = []string{"ab", "a_c", "a1", "a_b"}

// icuStore is a migrated store on a database whose default collation is
// ICU's en-US, as hosted servers make them, holding the queues of
// collatedNames.
func icuStore(t *testing.T) *store.Store {
	t.Helper()
	s := pgtest.OpenStore(t, pgtest.NewICUDatabase(t, "en-US"))
	var differs bool
	if err := s.Pool().QueryRow(testContext(t), `SELECT 'a_b'::text < 'a1'::text`).Scan(&differs); err != nil || !differs {
		t.Fatalf("the database's collation puts a_b before a1: %v, %v; want true, or the test proves nothing", differs, err)
	}
	for _, q := range collatedNames {
		pgtest.CreateQueue(t, s, q)
	}
	return s
}

// wantByteOrder fails the test unless got is want in byte order.
func wantByteOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if want = slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
		t.Fatalf("%s = %q, want %q (byte order)", what, got, want)
	}
}

// withDLQs is names and their DLQs.
func withDLQs(names []string) []string {
	out := slices.Clone(names)
	for _, n := range names {
		out = append(out, store.DLQName(n))
	}
	return out
}

// Names come in byte order whatever the database's collation, as the
// front ends, which sort and compare them in Go, expect, and the same on
// every server.
func TestNamesInByteOrderUnderICUCollation(t *testing.T) {
	t.Parallel()
	s, ctx := icuStore(t), testContext(t)

	queues, err := s.ListQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range queues {
		names = append(names, q.Name)
	}
	wantByteOrder(t, "ListQueues", names, withDLQs(collatedNames))

	dlqs, err := store.DeadQueues(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	wantByteOrder(t, "the DLQs", dlqs, withDLQs(collatedNames)[len(collatedNames):])
}

// Circuit breakers, and the queues and kinds that use one, come in byte
// order of their names.
func TestBreakersInByteOrderUnderICUCollation(t *testing.T) {
	t.Parallel()
	s, ctx := icuStore(t), testContext(t)
	var users []store.BreakerUser
	for _, n := range collatedNames {
		err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: n, FailureThreshold: 3, CoolOff: time.Second, MaxCoolOff: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, store.BreakerUser{Queue: n, Kind: "k"}, store.BreakerUser{Queue: "ab", Kind: n})
	}
	if err := s.RecordBreakerUsers(ctx, "ab", users); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListBreakers(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names, used []string
	for _, b := range all {
		names = append(names, b.Name)
		for _, u := range b.Users {
			used = append(used, u.Queue+" "+u.Kind)
		}
	}
	wantByteOrder(t, "ListBreakers", names, collatedNames)
	// No name holds a space, which sorts before every character of one.
	var want []string
	for _, u := range users {
		want = append(want, u.Queue+" "+u.Kind)
	}
	wantByteOrder(t, "the users of breaker ab", used, want)
}

// Throughput lists its queues in byte order.
func TestThroughputInByteOrderUnderICUCollation(t *testing.T) {
	t.Parallel()
	s, ctx := icuStore(t), testContext(t)
	first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	var deltas []store.StatsDelta
	for _, n := range collatedNames {
		deltas = append(deltas, store.StatsDelta{Minute: first, Queue: n, Kind: "k", Succeeded: 1})
	}
	if err := s.AddStats(ctx, deltas); err != nil {
		t.Fatal(err)
	}
	series, err := s.Throughput(ctx, "", store.ThroughputSpan{First: first, Step: time.Minute, Buckets: 2})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, se := range series {
		names = append(names, se.Queue)
	}
	wantByteOrder(t, "Throughput", names, collatedNames)
}

// Migrate reports the DLQs it repaired in byte order.
func TestRepairedDLQsInByteOrderUnderICUCollation(t *testing.T) {
	t.Parallel()
	s, ctx := icuStore(t), testContext(t)
	dlqs := withDLQs(collatedNames)[len(collatedNames):]
	for _, d := range dlqs {
		strip(t, s, d)
	}
	st, err := s.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantByteOrder(t, "the DLQs Migrate repaired", st.DLQsRepaired, dlqs)
}
