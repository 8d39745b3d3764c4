package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Now returns the time on the database server's clock, as SyncClock last
// measured it: this process's clock, corrected by how far it is from the
// server's. Before any SyncClock it is this process's clock. Times that
// pgbus compares with those the database wrote (deadlines, since when a
// breaker is open, the minute of a stat) are taken from it, so that a host
// whose clock is off (time synchronization broken, a virtual machine
// resumed) judges them as the other hosts do.
func (s *Store) Now() time.Time {
	return time.Now().Add(time.Duration(s.clockSkew.Load()))
}

// ClockSkew returns how far the database server's clock is ahead of this
// process's (negative when behind), as SyncClock last measured it, and when
// it did (the zero time before it ever did).
func (s *Store) ClockSkew() (time.Duration, time.Time) {
	at := s.clockSyncedAt.Load()
	if at == 0 {
		return 0, time.Time{}
	}
	return time.Duration(s.clockSkew.Load()), time.Unix(0, at)
}

// SyncClock measures how far the database server's clock is from this
// process's, for Now, in one round trip: the server's time is taken as of
// the middle of it. A server time that falls within the round trip is no
// difference at all: the two clocks cannot be told apart that way, and a
// host beside its database (the same clock) must not see its times moved by
// the noise of one query. It returns the difference (the server's ahead
// when positive).
func (s *Store) SyncClock(ctx context.Context) (time.Duration, error) {
	return s.syncClock(ctx, s.reads)
}

// SyncClockInTx is SyncClock measured in the caller's transaction tx,
// which may hold the last connection of a pool pgbus shares: it asks no
// connection of the pool. Its statement reads only the clock; it fails
// only where tx could run nothing (committed, aborted, its connection
// lost).
func (s *Store) SyncClockInTx(ctx context.Context, tx pgx.Tx) (time.Duration, error) {
	if err := CheckTx(tx); err != nil {
		return 0, err
	}
	return s.syncClock(ctx, tx)
}

func (s *Store) syncClock(ctx context.Context, db rowQuerier) (time.Duration, error) {
	var server time.Time
	sent := time.Now()
	if err := db.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&server); err != nil {
		return 0, fmt.Errorf("store: read the database server's clock: %w", err)
	}
	took := time.Since(sent) // on the monotonic clock
	skew := clockSkew(sent.Round(0), took, server)
	s.clockSkew.Store(int64(skew))
	s.clockSyncedAt.Store(time.Now().UnixNano())
	return skew, nil
}

// clockSkew is how far server is from the middle of the round trip that
// began at sent and took took; zero when server falls within it, give or
// take the server's microsecond resolution.
func clockSkew(sent time.Time, took time.Duration, server time.Time) time.Duration {
	if !server.Before(sent.Add(-time.Microsecond)) && !server.After(sent.Add(took+time.Microsecond)) {
		return 0
	}
	return server.Sub(sent.Add(took / 2)).Round(time.Millisecond)
}
