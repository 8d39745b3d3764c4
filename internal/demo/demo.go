// Package demo is the scenario of pgbus demo: two queues, their short
// retry settings, the demo handler, and a fixed mix of jobs for it (most
// succeed, some after retries, some die for different reasons), the same
// on every run.
package demo

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/store"
)

// The demo's queues.
const (
	Orders = "demo_orders"
	Emails = "demo_emails"
)

// Settings are the demo queues' retry settings: short, so that a run
// takes seconds.
func Settings() config.Settings {
	maxRetries, jitter := 4, 0.1
	vt, backoff, backoffMax := config.Duration(2*time.Second), config.Duration(50*time.Millisecond), config.Duration(time.Second)
	return config.Settings{MaxRetries: &maxRetries, VisibilityTimeout: &vt, Backoff: &backoff, BackoffMax: &backoffMax, Jitter: &jitter}
}

// Handler is the handler both demo queues run: the demo type, with an
// attempt timeout short enough for the simulated hangs to fail fast.
func Handler() handlers.Spec {
	return handlers.Spec{Type: handlers.TypeDemo, Timeout: handlers.Duration(300 * time.Millisecond)}
}

// group is a batch of alike jobs of the demo.
type group struct {
	queue, kind, simulate string
	count                 int
	badInput, expired     bool
}

// plan is what pgbus demo sends: mostly jobs that succeed, some that
// succeed after retries, and some that die for different reasons.
var plan = []group{
	{queue: Orders, kind: "charge_card", simulate: handlers.SimulateOK, count: 160},
	{queue: Orders, kind: "charge_card", simulate: handlers.SimulateFlaky, count: 40},
	{queue: Orders, kind: "charge_card", simulate: handlers.SimulateOutage, count: 12},
	{queue: Orders, kind: "charge_card", count: 6, badInput: true},
	{queue: Orders, kind: "refund_order", simulate: handlers.SimulateOK, count: 20},
	{queue: Orders, kind: "refund_order", simulate: handlers.SimulatePanic, count: 2},
	{queue: Emails, kind: "send_receipt", simulate: handlers.SimulateOK, count: 90},
	{queue: Emails, kind: "send_receipt", simulate: handlers.SimulateThrottled, count: 10},
	{queue: Emails, kind: "send_receipt", simulate: handlers.SimulateTimeout, count: 4},
	{queue: Emails, kind: "send_receipt", simulate: handlers.SimulateOK, count: 3, expired: true},
}

// Messages builds the demo's messages per queue, in a fixed shuffled
// order, so that every run is the same.
func Messages(now time.Time) (map[string][]store.NewMessage, int, error) {
	type job struct {
		g group
		i int
	}
	var jobs []job
	for _, g := range plan {
		for i := range g.count {
			jobs = append(jobs, job{g, i})
		}
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	out := map[string][]store.NewMessage{}
	for n, j := range jobs {
		id := 1000 + n
		p := map[string]any{"order_id": id}
		if j.g.simulate != "" && j.g.simulate != handlers.SimulateOK {
			p["simulate"] = j.g.simulate
		}
		if j.g.simulate == handlers.SimulateFlaky {
			p["failures"] = 1 + j.i%2
		}
		opts := engine.SendOptions{Kind: j.g.kind, IdempotencyKey: fmt.Sprintf("demo-%s-%d", j.g.kind, id)}
		switch j.g.queue {
		case Orders:
			p["amount_cents"] = 500 + (id*37)%9500
			if j.g.badInput {
				p["amount_cents"] = 0
			}
		case Emails:
			p["email"] = fmt.Sprintf("customer%d@example.com", id)
		}
		if j.g.expired {
			opts.Deadline = now.Add(-time.Second) // the receipt was due before it could be sent
		}
		body, err := json.Marshal(p)
		if err != nil {
			return nil, 0, err
		}
		m, err := engine.NewMessage(json.RawMessage(body), opts)
		if err != nil {
			return nil, 0, err
		}
		out[j.g.queue] = append(out[j.g.queue], m)
	}
	return out, len(jobs), nil
}
