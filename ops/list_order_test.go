package ops_test

import (
	"errors"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A list's order and minimum payload size are checked before the
// database, each refusal naming its field.
func TestDLQListOrderAndSizeChecked(t *testing.T) {
	t.Parallel()
	for field, req := range map[string]ops.DLQListRequest{
		"order":             {Order: "biggest"},
		"min_payload_bytes": {MinPayloadBytes: -1},
	} {
		var e *ops.Error
		if err := req.Check(); !errors.As(err, &e) || e.Field != field {
			t.Errorf("%+v: %v, want a refusal of %s", req, err, field)
		}
	}
	for _, req := range []ops.DLQListRequest{{}, {Order: ops.OrderNewest}, {Order: ops.OrderLargest, MinPayloadBytes: 1 << 20}} {
		if err := req.Check(); err != nil {
			t.Errorf("%+v refused: %v", req, err)
		}
	}
}
