package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AlertCheck is the last check of the process that sends alerts.
type AlertCheck struct {
	At     time.Time
	Status string
	// Reasons are the reasons of the verdict it saw, each by what tells it
	// apart, all of them reported by then.
	Reasons []AlertReason
}

// AlertReason tells a reason of the health verdict apart (ops.ReasonKey).
type AlertReason struct {
	Code    string `json:"code"`
	Queue   string `json:"queue,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// LastAlertCheck returns the last check RecordAlertCheck recorded, or
// ErrNotFound when none was.
func (s *Store) LastAlertCheck(ctx context.Context) (AlertCheck, error) {
	var c AlertCheck
	var reasons []byte
	err := s.reads.QueryRow(ctx, `SELECT checked_at, status, reasons::text FROM pgbus.alert_checks`).Scan(&c.At, &c.Status, &reasons)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFoundf("no alert check was recorded")
	}
	if err != nil {
		return c, fmt.Errorf("store: read the last alert check: %w", err)
	}
	if err := json.Unmarshal(reasons, &c.Reasons); err != nil {
		return c, fmt.Errorf("store: read the reasons of the last alert check: %w", err)
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
// the process elected after it. A check older than the one recorded is
// left out: a process that lost the election may still be delivering the
// alerts of a check it made before the new leader's.
func (s *Store) RecordAlertCheck(ctx context.Context, c AlertCheck) error {
	reasons, err := json.Marshal(c.Reasons)
	if err != nil {
		return fmt.Errorf("store: record the alert check: %w", err)
	}
	if c.Reasons == nil {
		reasons = []byte("[]")
	}
	_, err = s.db.Exec(ctx, `
		INSERT INTO pgbus.alert_checks (checked_at, status, reasons) VALUES ($1, $2, $3::text::jsonb)
		ON CONFLICT (only_row) DO UPDATE SET checked_at = excluded.checked_at, status = excluded.status, reasons = excluded.reasons
		WHERE alert_checks.checked_at < excluded.checked_at`,
		c.At, c.Status, string(reasons))
	if err != nil {
		return fmt.Errorf("store: record the alert check: %w", err)
	}
	return nil
}
