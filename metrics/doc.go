// Package metrics exposes pgbus to Prometheus: counters and histograms of
// the jobs a process runs, gauges of the queues, dead-letter queues,
// circuit breakers and worker processes read from the database at scrape
// time, the MCP tool calls a server answers and the sessions and event
// streams it holds open (WatchMCP); and the /livez and /readyz probes.
//
// pgbus serve and pgbus work serve them on their own; a Go service that
// embeds the engine registers them on its registry:
//
//	m := metrics.New(metrics.Options{Ops: svc})
//	prometheus.MustRegister(m)
//	client, _ := engine.NewClient(st, engine.Config{Observers: []engine.Observer{m}})
//	http.Handle(metrics.PathMetrics, promhttp.Handler())
//	http.Handle(metrics.PathReadyz, metrics.Probes(svc, metrics.ProbeOptions{Queues: []string{"orders"}}))
//
// Every metric is named pgbus_*, counters end in _total and durations are
// in seconds. Labels that come from data stay bounded: at most
// MaxErrorClasses error classes (MaxKinds kinds) have a label value of
// their own, the rest are counted as "other". Values take the free slots
// as they come; once all are taken, a value counted as "other" more than
// twice as often as the least frequent labelled one (both counted since
// the process first saw them) takes its slot, and the series of the value
// that lost it are deleted: they stop, as the series of a restarted
// process would, and rate() and increase() stay right.
package metrics
