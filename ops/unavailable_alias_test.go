package ops_test

import (
	"testing"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// ops.ErrUnavailable is the store's, as ErrInvalid and ErrNotFound are:
// an engine.Client's error for a database that cannot be reached matches
// it, as an operation's does.
func TestErrUnavailableIsTheStores(t *testing.T) {
	t.Parallel()
	if ops.ErrUnavailable != store.ErrUnavailable {
		t.Fatal("ops.ErrUnavailable is not store.ErrUnavailable")
	}
}
