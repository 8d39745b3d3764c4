package dashboard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/ops"
)

// New refuses a nil service with an error that says what to pass.
func TestNewRefusesNilService(t *testing.T) {
	t.Parallel()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("dashboard.New(nil) panicked: %v", r)
			}
		}()
		var h any
		h, err = dashboard.New(nil, dashboard.Config{})
		if h != nil {
			t.Errorf("dashboard.New(nil) returned a handler: %v", h)
		}
	}()
	if want := "dashboard.New needs an ops.Service, the operations layer: make one with ops.New"; !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("dashboard.New(nil) = %v; want ErrInvalid saying %q", err, want)
	}
}
