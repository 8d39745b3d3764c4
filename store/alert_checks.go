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

// AlertCheckTime is the time a check of the alerting process stands for,
// on the database's clock, which times the dead-letterings it is compared
// with: now, or just before the start of the oldest transaction in
// progress that has written. A dead message carries its transaction's
// start as its time, and a check does not see it until it commits: the
// process elected next takes a group first dead after the last check's
// time as new, and one that committed after that check's reads must be
// among them. Reads and elections, which write nothing, do not count. A
// long writing transaction only moves the time back, so that a group
// first dead meanwhile may be reported twice, never missed.
func (s *Store) AlertCheckTime(ctx context.Context) (time.Time, error) {
	var at time.Time
	err := s.reads.QueryRow(ctx, `SELECT least(clock_timestamp(),
		(SELECT min(xact_start) - interval '1 microsecond' FROM pg_stat_activity
		 WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()))`).Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: read the database's clock: %w", err)
	}
	return at, nil
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
		c.At, c.Status, jsonbText(reasons))
	if err != nil {
		return fmt.Errorf("store: record the alert check: %w", err)
	}
	return nil
}
