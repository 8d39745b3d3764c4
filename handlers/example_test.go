package handlers_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/store"
)

// A Go program builds a built-in handler from a Spec, as a handler block
// of the configuration file would, and registers it on a client.
func ExampleBuild() {
	fn, opts, err := handlers.Build(handlers.Spec{
		Type:    handlers.TypeHTTP,
		Timeout: handlers.Duration(10 * time.Second),
		Options: map[string]any{
			"url":     "https://billing.internal/hooks/charge",
			"headers": map[string]string{"Authorization": "Bearer abc123"},
			"breaker": map[string]any{"failure_threshold": 3, "cool_off": "30s"},
			"on_status": map[string]any{
				"409": "discard",
				"5xx": map[string]any{"action": "retry", "max_retries": 10},
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("timeout:", opts.Timeout)
	fmt.Println("breaker:", opts.Breaker.Name, "opens after", opts.Breaker.FailureThreshold, "failures")
	fmt.Println("status rules:", len(opts.Policies))

	// The pool connects when first used: a real program opens the store
	// with store.Open, migrates it with Store.Migrate, and calls client.Run.
	pool, err := pgxpool.New(context.Background(), "postgres://app@db.internal/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	client, err := engine.NewClient(store.New(pool), engine.Config{
		Queues: []engine.QueueConfig{{Name: "charges", Concurrency: 4}},
	})
	if err != nil {
		log.Fatal(err)
	}
	client.HandleQueue("charges", fn, opts)
	// Output:
	// timeout: 10s
	// breaker: http:billing.internal:443 opens after 3 failures
	// status rules: 2
}
