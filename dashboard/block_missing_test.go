package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A dead-letter block another client wrote without its source_msg_id,
// attempts and max_retries shows them as unknown on the message's page and
// in the DLQ's list, never as a made-up 0.
func TestPagesShowNumbersABlockLacksAsUnknown(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	q, b := browseQueue(t, st, "dash_lacks")
	id := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k"})[0]
	pgtest.Exec(t, url, fmt.Sprintf(`UPDATE pgmq."q_%s" SET headers = headers #- '{pgbus_dead_letter,source_msg_id}' #- '{pgbus_dead_letter,attempts}' #- '{pgbus_dead_letter,max_retries}' WHERE msg_id = %d`,
		store.DLQName(q), id))

	path := fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, id)
	code, page, _ := b.get(path)
	if code != http.StatusOK || !strings.Contains(page, ", message unknown</dd>") || !strings.Contains(page, "<dd>unknown, with max_retries unknown") {
		t.Errorf("GET %s: %d; want the message's source id, attempts and max_retries unknown\n%s", path, code, page)
	}
	if strings.Contains(page, "message 0<") || strings.Contains(page, "max_retries 0") {
		t.Errorf("GET %s shows a made-up 0:\n%s", path, page)
	}
	path = "/dlq/messages?queue=" + store.DLQName(q)
	code, page, _ = b.get(path)
	if code != http.StatusOK || !strings.Contains(page, ">unknown / unknown") {
		t.Errorf("GET %s: %d; want its attempts and max_retries unknown\n%s", path, code, page)
	}
}
