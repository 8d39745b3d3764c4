package dashboard_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

var assetRE = regexp.MustCompile(`(?:href|src)="/static/([a-z]+\.(?:css|js|svg))\?v=([0-9a-f]+)"`)

// The pages load the embedded assets at addresses that carry a version of
// their content: browsers cache the assets for an hour, and the pages of
// an upgraded server must not run with the scripts and styles the browser
// kept from the one before.
func TestAssetAddressesCarryTheirVersion(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_assets")
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	seen := map[string]bool{}
	for _, path := range []string{"/?refresh=10", pageURLOf("/dlq/message", "queue", q+"_dlq", "id", strconv.FormatInt(ids[0], 10))} {
		_, page, _ := b.get(path)
		for _, m := range assetRE.FindAllStringSubmatch(page, -1) {
			seen[m[1]] = true
			code, body, _ := b.get("/static/" + m[1] + "?v=" + m[2])
			sum := sha256.Sum256([]byte(body))
			if code != http.StatusOK || m[2] != hex.EncodeToString(sum[:6]) {
				t.Errorf("%s loads %s at version %s; it is served with %d, version %x", path, m[1], m[2], code, sum[:6])
			}
		}
	}
	for _, name := range []string{"style.css", "live.js", "editor.js", "refresh.js", "icon.svg"} {
		if !seen[name] {
			t.Errorf("no page loads %s at a versioned address (saw %v)", name, seen)
		}
	}
}
