package runner

import (
	"context"
	"log/slog"
	"sync"

	"github.com/pgbus/pgbus/alerts"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// StartAlerts runs the alert notifier the configuration file asks for, in
// goroutines of its own, until the function it returns is called, which
// stops it and waits. With alerts off (no alerts block, or enabled:
// false) it starts nothing.
func StartAlerts(ctx context.Context, st *store.Store, svc *ops.Service, a *config.Alerts, log *slog.Logger) (stop func(), err error) {
	if !a.On() {
		return func() {}, nil
	}
	if err := a.Ready(); err != nil {
		return nil, err
	}
	log = orDiscard(log)
	cfg := a.Config()
	cfg.Logger = log
	n, err := alerts.New(st, svc, cfg)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { n.Run(runCtx) })
	log.Info("pgbus alerts: on; the elected process checks", "every", n.CheckInterval())
	return func() {
		cancel()
		wg.Wait()
	}, nil
}
