package metrics_test

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A service that embeds the engine counts its jobs, reads the queue
// gauges at scrape time, and serves them with the probes.
func ExampleNew() {
	ctx := context.Background()
	st, err := store.Open(ctx, "postgres://localhost/app")
	if err != nil {
		panic(err)
	}
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		panic(err)
	}
	m := metrics.New(metrics.Options{Ops: svc})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	client, err := engine.NewClient(st, engine.Config{
		Queues:    []engine.QueueConfig{{Name: "orders", Concurrency: 10}},
		Observers: []engine.Observer{m},
	})
	if err != nil {
		panic(err)
	}
	client.HandleQueue("orders", func(ctx context.Context, job *engine.Job) error { return nil })
	go func() {
		_ = http.ListenAndServe("127.0.0.1:9187", metrics.Mux(reg, svc, metrics.ProbeOptions{Queues: []string{"orders"}}))
	}()
	_ = client.Run(ctx)
}
