package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

const secondVT = 30 * time.Second

func msg(payload string) store.NewMessage {
	return store.NewMessage{Payload: json.RawMessage(payload)}
}

func msgs(n int) []store.NewMessage {
	out := make([]store.NewMessage, n)
	for i := range out {
		out[i] = msg(fmt.Sprintf(`{"n":%d}`, i))
	}
	return out
}

func TestSendAndReadRoundTrip(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	id, err := s.Send(ctx, q, store.NewMessage{
		Payload: json.RawMessage(`{"order":42,"note":"it's \"quoted\"; DROP TABLE x; --"}`),
		Headers: json.RawMessage(`{"pgbus_kind":"email","x-pgmq-group":"g1"}`),
	})
	if err != nil || id <= 0 {
		t.Fatalf("send = %d, %v", id, err)
	}
	before := time.Now()
	got, err := s.Read(ctx, q, secondVT, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("read = %v, %v; want one message", got, err)
	}
	m := got[0]
	if m.ID != id || m.ReadCount != 1 {
		t.Fatalf("read id=%d read_ct=%d, want %d and 1", m.ID, m.ReadCount, id)
	}
	var payload map[string]any
	if err := json.Unmarshal(m.Payload, &payload); err != nil || payload["note"] != `it's "quoted"; DROP TABLE x; --` {
		t.Fatalf("payload = %s (%v)", m.Payload, err)
	}
	var headers map[string]string
	if err := json.Unmarshal(m.Headers, &headers); err != nil || headers["pgbus_kind"] != "email" || headers["x-pgmq-group"] != "g1" {
		t.Fatalf("headers = %s (%v)", m.Headers, err)
	}
	if d := m.VisibleAt.Sub(before); d < 25*time.Second || d > 35*time.Second {
		t.Fatalf("vt is %v from now, want about 30s", d)
	}
	// Hidden while its visibility timeout runs.
	again, err := s.Read(ctx, q, secondVT, 10)
	if err != nil || len(again) != 0 {
		t.Fatalf("second read = %v, %v; want nothing while invisible", again, err)
	}
	// Visible again after SetVisibility(0), and the read count grows.
	if ok, err := s.SetVisibility(ctx, q, id, 0); err != nil || !ok {
		t.Fatalf("set visibility = %v, %v", ok, err)
	}
	third, err := s.Read(ctx, q, secondVT, 10)
	if err != nil || len(third) != 1 || third[0].ReadCount != 2 {
		t.Fatalf("third read = %+v, %v; want the message with read_ct 2", third, err)
	}
}

func TestSendWithoutHeadersStoresNull(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	if _, err := s.Send(ctx, q, msg(`"plain string"`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, q, secondVT, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v %v", got, err)
	}
	if string(got[0].Payload) != `"plain string"` || got[0].Headers != nil {
		t.Fatalf("payload %s headers %s; want the string and no headers", got[0].Payload, got[0].Headers)
	}
}

func TestSendDelay(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	delayed, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`1`), Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now, err := s.Send(ctx, q, msg(`2`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, q, secondVT, 10)
	if err != nil || len(got) != 1 || got[0].ID != now {
		t.Fatalf("read = %+v, %v; want only the undelayed message %d", got, err, now)
	}
	if ok, err := s.SetVisibility(ctx, q, delayed, 0); err != nil || !ok {
		t.Fatalf("set visibility: %v %v", ok, err)
	}
	got, err = s.Read(ctx, q, secondVT, 10)
	if err != nil || len(got) != 1 || got[0].ID != delayed || got[0].ReadCount != 1 {
		t.Fatalf("read = %+v, %v; want the formerly delayed message %d", got, err, delayed)
	}
}

func TestSendBatchReturnsIDsInOrder(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	batch := msgs(250)
	batch[3].Headers = json.RawMessage(`{"k":"v"}`)
	batch[7].Delay = time.Hour
	ids, err := s.SendBatch(ctx, q, batch)
	if err != nil || len(ids) != 250 {
		t.Fatalf("send batch = %d ids, %v", len(ids), err)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ids not increasing at %d: %v", i, ids[i-1:i+1])
		}
	}
	got, err := s.Read(ctx, q, secondVT, 1000)
	if err != nil || len(got) != 249 {
		t.Fatalf("read %d messages (%v); want 249 (one delayed)", len(got), err)
	}
	for _, m := range got {
		if m.ID == ids[7] {
			t.Fatalf("delayed message %d was read", m.ID)
		}
		var body struct{ N int }
		if err := json.Unmarshal(m.Payload, &body); err != nil || ids[body.N] != m.ID {
			t.Fatalf("message %d has payload %s; ids and payloads do not line up", m.ID, m.Payload)
		}
		if body.N == 3 && string(m.Headers) != `{"k": "v"}` {
			t.Fatalf("headers of message 3 = %s", m.Headers)
		}
	}
}

func TestArchiveAndDelete(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, msgs(6))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Archive(ctx, q, ids[0]); err != nil || !ok {
		t.Fatalf("archive one = %v, %v", ok, err)
	}
	if ok, err := s.Archive(ctx, q, ids[0]); err != nil || ok {
		t.Fatalf("archive again = %v, %v; want false, nil", ok, err)
	}
	moved, err := s.ArchiveMany(ctx, q, []int64{ids[1], ids[2], 999_999_999})
	if err != nil || len(moved) != 2 || moved[0] != ids[1] || moved[1] != ids[2] {
		t.Fatalf("archive many = %v, %v; want %v", moved, err, ids[1:3])
	}
	if ok, err := s.Delete(ctx, q, ids[3]); err != nil || !ok {
		t.Fatalf("delete one = %v, %v", ok, err)
	}
	gone, err := s.DeleteMany(ctx, q, []int64{ids[4], ids[3]})
	if err != nil || len(gone) != 1 || gone[0] != ids[4] {
		t.Fatalf("delete many = %v, %v; want [%d]", gone, err, ids[4])
	}
	var archived []int64
	rows, err := s.Pool().Query(ctx, `SELECT msg_id FROM pgmq.`+`"a_`+q+`" ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		archived = append(archived, id)
	}
	if len(archived) != 3 || archived[0] != ids[0] || archived[2] != ids[2] {
		t.Fatalf("archive table holds %v, want %v", archived, ids[:3])
	}
	m, err := s.Metrics(ctx, q)
	if err != nil || m.Depth != 1 || m.Archived != 3 {
		t.Fatalf("metrics depth=%d archived=%d (%v); want 1 and 3", m.Depth, m.Archived, err)
	}
}

func TestSetVisibilityMany(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, msgs(3))
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := s.SetVisibilityMany(ctx, q, ids[:2], time.Hour)
	if err != nil || len(hidden) != 2 {
		t.Fatalf("set visibility many = %v, %v", hidden, err)
	}
	got, err := s.Read(ctx, q, secondVT, 10)
	if err != nil || len(got) != 1 || got[0].ID != ids[2] || got[0].ReadCount != 1 {
		t.Fatalf("read = %+v, %v; want only %d", got, err, ids[2])
	}
}

// Reads take the messages visible longest first, not the lowest ids: a
// message made visible again just now waits behind one visible since it
// was sent.
func TestReadTakesLongestVisibleFirst(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, msgs(2))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // so that "now" is later than the second message's send
	if ok, err := s.SetVisibility(ctx, q, ids[0], 0); err != nil || !ok {
		t.Fatalf("set visibility of %d to now: %v, %v", ids[0], ok, err)
	}
	for i, want := range []int64{ids[1], ids[0]} {
		got, err := s.Read(ctx, q, secondVT, 1)
		if err != nil || len(got) != 1 || got[0].ID != want {
			t.Fatalf("read %d = %+v, %v; want message %d", i+1, got, err, want)
		}
	}
}

// Concurrent readers never receive the same message while its visibility
// timeout runs: SKIP LOCKED plus the vt update make each claim exclusive.
func TestConcurrentReadersNeverShareAMessage(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	const total = 2000
	for i := 0; i < total; i += 500 {
		if _, err := s.SendBatch(ctx, q, msgs(500)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := s.Read(ctx, q, time.Minute, 7)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					seen[m.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("reader: %v", err)
	}
	if len(seen) != total {
		t.Fatalf("readers saw %d distinct messages, want %d", len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("message %d delivered %d times within its visibility timeout", id, n)
		}
	}
}

func TestMessageOperationsRejectBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	big := `"` + strings.Repeat("x", store.MaxPayloadBytes) + `"`
	cases := map[string]store.NewMessage{
		"payload not JSON":   {Payload: json.RawMessage(`{"a":`)},
		"payload plain text": {Payload: json.RawMessage(`hello`)},
		"payload empty":      {},
		"payload too large":  {Payload: json.RawMessage(big)},
		"headers array":      {Payload: json.RawMessage(`1`), Headers: json.RawMessage(`[1,2]`)},
		"headers string":     {Payload: json.RawMessage(`1`), Headers: json.RawMessage(`"x"`)},
		"headers null":       {Payload: json.RawMessage(`1`), Headers: json.RawMessage(`null`)},
		"headers not JSON":   {Payload: json.RawMessage(`1`), Headers: json.RawMessage(`{x}`)},
		"payload NUL escape": {Payload: json.RawMessage(`{"a":"x\u0000"}`)},
		"payload bad UTF-8":  {Payload: json.RawMessage("\"\xff\"")},
		"payload surrogate":  {Payload: json.RawMessage(`"\uDBFF\u0041"`)},
		"headers NUL escape": {Payload: json.RawMessage(`1`), Headers: json.RawMessage(`{"k\u0000":"v"}`)},
		"headers bad UTF-8":  {Payload: json.RawMessage(`1`), Headers: json.RawMessage("{\"k\":\"\xfe\"}")},
		"negative delay":     {Payload: json.RawMessage(`1`), Delay: -time.Second},
		"absurd delay":       {Payload: json.RawMessage(`1`), Delay: 200 * 365 * 24 * time.Hour},
	}
	for label, m := range cases {
		if _, err := s.Send(ctx, q, m); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: Send = %v, want ErrInvalid", label, err)
		}
		// One bad message spoils the batch before anything is written.
		batch := append(msgs(3), m)
		if _, err := s.SendBatch(ctx, q, batch); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "the batch's message at index 3") {
			t.Errorf("%s: SendBatch = %v, want ErrInvalid naming message 3", label, err)
		}
	}
	if _, err := s.SendBatch(ctx, q, nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("empty batch = %v, want ErrInvalid", err)
	}
	if _, err := s.SendBatch(ctx, q, msgs(store.MaxBatch+1)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("oversized batch = %v, want ErrInvalid", err)
	}
	for _, qty := range []int{0, -1, store.MaxBatch + 1, 1 << 40} {
		if _, err := s.Read(ctx, q, secondVT, qty); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Read qty %d = %v, want ErrInvalid", qty, err)
		}
	}
	for _, vt := range []time.Duration{0, -time.Second, 100 * 365 * 24 * time.Hour} {
		if _, err := s.Read(ctx, q, vt, 1); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Read vt %v = %v, want ErrInvalid", vt, err)
		}
	}
	for _, ids := range [][]int64{nil, {0}, {-5}, make([]int64, store.MaxBatch+1)} {
		if _, err := s.ArchiveMany(ctx, q, ids); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ArchiveMany(%d ids) = %v, want ErrInvalid", len(ids), err)
		}
		if _, err := s.DeleteMany(ctx, q, ids); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DeleteMany(%d ids) = %v, want ErrInvalid", len(ids), err)
		}
		if _, err := s.SetVisibilityMany(ctx, q, ids, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SetVisibilityMany(%d ids) = %v, want ErrInvalid", len(ids), err)
		}
	}
	if _, err := s.SetVisibility(ctx, q, 1, -time.Second); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SetVisibility negative = %v, want ErrInvalid", err)
	}
	m, err := s.Metrics(ctx, q)
	if err != nil || m.Depth != 0 || m.TotalSent != 0 {
		t.Fatalf("after bad input depth=%d total_sent=%d (%v); want nothing written", m.Depth, m.TotalSent, err)
	}
}

// A message PostgreSQL cannot store, such as a number beyond what jsonb
// holds, is the sender's to change: an invalid send saying so, with or
// without keys, and nothing written.
func TestSendOfANumberJSONBCannotHold(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	for _, batch := range [][]store.NewMessage{{msg(`1e200000`)}, {keyed(`{"n":1e200000}`, "k")}} {
		_, err := s.SendBatch(ctx, q, batch)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "cannot store the message") || !strings.Contains(err.Error(), "send it as a string") {
			t.Fatalf("err = %v, want an invalid send saying what to change", err)
		}
	}
	if m, _ := s.Metrics(ctx, q); m.Depth != 0 {
		t.Fatalf("depth = %d, want nothing written", m.Depth)
	}
}
