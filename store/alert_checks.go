package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AlertCheck is the last check of the process that sends alerts.
type AlertCheck struct {
	At     time.Time
	Status string
}

// LastAlertCheck returns the last check RecordAlertCheck recorded, or
// ErrNotFound when none was.
func (s *Store) LastAlertCheck(ctx context.Context) (AlertCheck, error) {
	var c AlertCheck
	err := s.reads.QueryRow(ctx, `SELECT checked_at, status FROM pgbus.alert_checks`).Scan(&c.At, &c.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFoundf("no alert check was recorded")
	}
	if err != nil {
		return c, fmt.Errorf("store: read the last alert check: %w", err)
	}
	return c, nil
}

// DatabaseTime is the database's clock, for a time to be compared with
// the times the database records (when a message was dead-lettered)
// rather than with a process's clock, which may differ.
func (s *Store) DatabaseTime(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.reads.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("store: read the database's clock: %w", err)
	}
	return now, nil
}

// RecordAlertCheck records a check of the process that sends alerts, for
// the process elected after it.
func (s *Store) RecordAlertCheck(ctx context.Context, c AlertCheck) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO pgbus.alert_checks (checked_at, status) VALUES ($1, $2)
		ON CONFLICT (only_row) DO UPDATE SET checked_at = excluded.checked_at, status = excluded.status`, c.At, c.Status)
	if err != nil {
		return fmt.Errorf("store: record the alert check: %w", err)
	}
	return nil
}
