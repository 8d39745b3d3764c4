package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// axNames are the accessible names, as the browser computes them for
// screen readers, of the page's elements of the roles given.
func (b tab) axNames(roles ...string) []string {
	b.t.Helper()
	var names []string
	err := chromedp.Do(b.ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		tree, err := cdp.Call(ctx, t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return err
		}
		for _, n := range tree.Nodes {
			if n.Ignored || n.Role == nil || n.Name == nil {
				continue
			}
			var role, name string
			if json.Unmarshal([]byte(n.Role.Value), &role) != nil || json.Unmarshal([]byte(n.Name.Value), &name) != nil {
				continue
			}
			for _, r := range roles {
				if role == r {
					names = append(names, name)
				}
			}
		}
		return nil
	}))
	if err != nil {
		b.t.Fatalf("read the accessibility tree: %v", err)
	}
	return names
}

// On the circuits page, the fields of each breaker's Open form are named
// by its breaker, as its buttons are: a screen reader listing the form
// fields heard "Hold its jobs for" and "because" once per breaker, with
// nothing to tell them apart.
func TestBrowserCircuitFieldsNamed(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	breakers := []string{pgtest.Name("bank_api"), pgtest.Name("mail_api")}
	for _, name := range breakers {
		if err := st.EnsureBreaker(pgtest.Context(t), store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + serve(t, st, serverOpts{})
	b.do("open the circuits", chromedp.Navigate(base+"/circuits"), page("circuits"))
	names := b.axNames("combobox", "textbox")
	if len(names) != 2*len(breakers) {
		t.Fatalf("the circuits page's fields are named %q; want two for each of %d breakers", names, len(breakers))
	}
	for _, name := range breakers {
		var hold, because int
		for _, n := range names {
			if strings.Contains(n, name) && strings.HasPrefix(n, "Hold its jobs for") {
				hold++
			}
			if strings.Contains(n, name) && strings.HasPrefix(n, "because") {
				because++
			}
		}
		if hold != 1 || because != 1 {
			t.Errorf("the fields named for breaker %s: %d \"Hold its jobs for\", %d \"because\", want one each; the names: %q", name, hold, because, names)
		}
	}
}
