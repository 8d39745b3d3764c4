package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// IntegrityViolation tells whether err's statement was refused for
// breaking a constraint of the data it wrote (SQLSTATE class 23: a unique
// key, as an archive's msg_id an older message holds, a not-null column, a
// check, a foreign key). The same write is refused again however often it
// is tried: only another write, of other rows, can land.
func IntegrityViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "23")
}
