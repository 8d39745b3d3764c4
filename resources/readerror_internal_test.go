package resources

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// TestReadErrorHidesSecrets: the error of a resource read, whether the
// reader can fix it or not, quotes what a database or a downstream said
// with the secrets of the corpus hidden, as every other output does.
func TestReadErrorHidesSecrets(t *testing.T) {
	const uri = "pgbus://dlq/orders/42"
	for _, text := range secrettest.Texts(secrettest.Error) {
		for _, err := range []error{
			errors.New(text),
			&ops.Error{Msg: text, Err: ops.ErrInvalid},
			fmt.Errorf("%w: %s", ops.ErrNotFound, text),
		} {
			out := readError(uri, err).Error()
			if !strings.HasPrefix(out, "resource "+uri+": ") {
				t.Fatalf("readError(%v) = %q, want it to name the resource", err, out)
			}
			secrettest.AssertHidden(t, out)
		}
	}
}
