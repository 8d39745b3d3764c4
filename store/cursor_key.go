package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// newCursorKeySQL stores a new random cursor key, as migration 8 does.
const newCursorKeySQL = `INSERT INTO pgbus.cursor_key (key) SELECT sha256(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))`

// cursorKey is the database's key for signing cursors, read once per Store
// (it never changes) and only when a cursor is first needed.
type cursorKey struct {
	mu  sync.Mutex
	key []byte
}

// cursorKey returns the database's cursor key (pgbus.cursor_key). A failed
// read is not remembered, so the next call tries again.
func (s *Store) cursorKey(ctx context.Context) ([]byte, error) {
	s.cursorKeys.mu.Lock()
	defer s.cursorKeys.mu.Unlock()
	if s.cursorKeys.key != nil {
		return s.cursorKeys.key, nil
	}
	// In hex text: pgx reads a bytea as text (the exec and simple_protocol
	// modes of default_query_exec_mode) only in the hex format, and a
	// role's or database's bytea_output may be escape.
	var hexKey string
	err := s.reads.QueryRow(ctx, `SELECT encode(key, 'hex') FROM pgbus.cursor_key`).Scan(&hexKey)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return nil, errors.New("store: the database has no cursor key table (pgbus.cursor_key): migrate the database with this version of pgbus")
	case errors.Is(err, pgx.ErrNoRows):
		return nil, errors.New("store: pgbus.cursor_key is empty: put a new key in it with " + newCursorKeySQL)
	case IsPermissionDenied(err):
		return nil, fmt.Errorf("store: read the cursor key: %w; grant the role SELECT on pgbus.cursor_key (see pgbus's read grants)", err)
	case err != nil:
		return nil, fmt.Errorf("store: read the cursor key: %w", err)
	}
	key, err := hex.DecodeString(hexKey)
	if err != nil {
		return nil, fmt.Errorf("store: read the cursor key: %w", err)
	}
	s.cursorKeys.key = key
	return key, nil
}
