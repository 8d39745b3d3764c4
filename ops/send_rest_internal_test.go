package ops

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// The step that sends the rest of an unfinished send, taken while that
// send still runs, sends its lines twice. It was given as plainly where
// whether the send runs is not known (its process held no session, or the
// sessions could not be read) as where it stopped: there it now says to
// take it only once the send no longer runs; while it runs there is none.
func TestSendRestOnlyOnceTheSendStopped(t *testing.T) {
	t.Parallel()
	e := store.AuditEntry{ID: 7, At: time.Now(), Client: "cli", Transport: "cli", Tool: OpSend, Pending: true,
		Arguments: json.RawMessage(`{"queue":"orders","ndjson":"/data/in.ndjson","messages":5000}`),
		Result:    json.RawMessage(`{"sent":1000,"total":5000,"next_line":1001}`)}
	for _, c := range []struct {
		name    string
		pid     int32
		running map[int64]bool
		step    bool // a step is given
		caution bool // it says to wait for the send to stop
	}{
		{"its process stopped", 4242, map[int64]bool{}, true, false},
		{"no session named", 0, map[int64]bool{}, true, true},
		{"sessions unreadable", 4242, nil, true, true},
		{"still running", 4242, map[int64]bool{7: true}, false, false},
	} {
		e.RunPID = c.pid
		out := auditView(store.AuditPage{Items: []store.AuditEntry{e}}, c.running)
		var sends []Hint
		for _, h := range out.Next {
			if h.Op == OpSend {
				sends = append(sends, h)
			}
		}
		if len(sends) != map[bool]int{true: 1, false: 0}[c.step] {
			t.Errorf("%s: send steps %+v; want %v", c.name, sends, c.step)
			continue
		}
		if c.step && sends[0].Args["from_line"] != 1001 {
			t.Errorf("%s: step %+v; want the send from line 1001", c.name, sends[0])
		}
		if c.step && strings.Contains(sends[0].Why, "only once send 7 no longer runs") != c.caution {
			t.Errorf("%s: step says %q; want it to say to wait for the send to stop: %v", c.name, sends[0].Why, c.caution)
		}
	}
}
