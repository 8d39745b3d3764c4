package chaos_test

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// What the downstream answers, per request, at random.
const (
	okShare        = 0.65 // 200: the job succeeds
	retryableShare = 0.25 // 500: retried, dead-lettered after max_retries
	// the rest: 422, dead-lettered at once
)

// downstream is the service the workers' http handler calls: it succeeds,
// fails retryably or fails for good at random, and counts per message id
// what it answered.
type downstream struct {
	srv *httptest.Server

	mu    sync.Mutex
	fails map[string]int // failing answers (500, 422) per uid
	ok    map[string]int // successes per uid
}

// startDownstream starts the downstream, closed when the test ends.
func startDownstream(t *testing.T) *downstream {
	d := &downstream{fails: map[string]int{}, ok: map[string]int{}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *downstream) serve(w http.ResponseWriter, r *http.Request) {
	var p payload
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.UID == "" {
		http.Error(w, "want a JSON body with a uid", http.StatusBadRequest)
		return
	}
	// A short random delay, so that killed workers leave jobs half done.
	time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	status := http.StatusOK
	switch x := rand.Float64(); {
	case x >= okShare+retryableShare:
		status = http.StatusUnprocessableEntity
	case x >= okShare:
		status = http.StatusInternalServerError
	}
	d.count(p.UID, status)
	w.WriteHeader(status)
}

func (d *downstream) count(uid string, status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if status == http.StatusOK {
		d.ok[uid]++
	} else {
		d.fails[uid]++
	}
}

// failsOf returns how many failing answers uid got.
func (d *downstream) failsOf(uid string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fails[uid]
}

// totals returns the successes and failing answers of every uid.
func (d *downstream) totals() (ok, fails int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.ok {
		ok += n
	}
	for _, n := range d.fails {
		fails += n
	}
	return ok, fails
}

// successesOf returns how many times uid was answered 200.
func (d *downstream) successesOf(uid string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ok[uid]
}
