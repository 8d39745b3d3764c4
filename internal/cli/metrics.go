package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
)

// EnvMetricsAddr is the address of the metrics endpoint when
// --metrics-addr does not give one.
const EnvMetricsAddr = "PGBUS_METRICS_ADDR"

// addMetricsFlag adds --metrics-addr to pgbus work and pgbus serve.
func addMetricsFlag(fs *pflag.FlagSet, addr *string) {
	fs.StringVar(addr, "metrics-addr", "", "serve Prometheus metrics at /metrics and the /livez and /readyz probes on this host:port, e.g. 127.0.0.1:9187, or :9187 for every interface (env "+EnvMetricsAddr+"; default: off)")
}

// resolveMetricsAddr settles --metrics-addr (flag, else environment) and
// checks its form before anything starts.
func (a *app) resolveMetricsAddr(fs *pflag.FlagSet, addr *string) error {
	if err := a.resolve(fs, "metrics-addr", "", EnvMetricsAddr); err != nil {
		return err
	}
	if *addr == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(*addr); err != nil || port == "" {
		return usageError{fmt.Errorf("%s %q%s is not host:port; give for example 127.0.0.1:9187, or :9187 for every interface", a.setting("metrics-addr", "metrics address"), *addr, a.from("metrics-addr"))}
	}
	return nil
}

// startMonitor makes the process's monitor when anything will serve it
// (an address given, or need) and serves it on addr when given; stop
// stops that server.
func (a *app) startMonitor(ctx context.Context, svc *ops.Service, addr string, need bool, queues []config.WorkQueue) (mon *runner.Monitor, stop func(), err error) {
	if addr == "" && !need {
		return nil, func() {}, nil
	}
	mon = runner.NewMonitor(svc, a.log, queues)
	if addr == "" {
		return mon, func() {}, nil
	}
	stop, _, err = mon.Serve(ctx, addr, a.log)
	if err != nil {
		return nil, nil, err
	}
	return mon, stop, nil
}
