package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// An error message longer than the history keeps is redacted where it was
// cut as the whole one would be: a list of cookies, or a URL's password,
// that the cut went through was kept in clear for want of its end.
func TestStoredErrorHidesSecretsTheCutWentThrough(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	long := strings.Repeat("S3cr", 1000)
	pad := strings.Repeat("x", store.HistoryErrorMessageMax-100)
	for _, text := range []string{
		pad + ` request headers: {"Cookie":["sid=` + long + `"]}`,
		pad + " dial postgres://app:" + long + "@db/app",
	} {
		id, err := s.Send(ctx, q, msg(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: id, Delay: time.Hour,
			Failure: store.Failure{Attempt: 1, ErrorClass: "http.401", ErrorMessage: text}}}); err != nil {
			t.Fatal(err)
		}
		h, err := s.FailureHistory(ctx, q, id)
		if err != nil || len(h) != 1 {
			t.Fatalf("history = %+v, %v; want one failure", h, err)
		}
		if kept := h[0].ErrorMessage; strings.Contains(kept, "S3cr") || !strings.HasSuffix(kept, "…") {
			t.Errorf("the error kept ends %q; want the secret hidden and the cut marked", kept[len(kept)-200:])
		}
	}
}
