package mcpserver

import "time"

// WithBodyReadTimeout returns cfg with the time to receive a request body
// set to d, so that tests need not wait the default.
func WithBodyReadTimeout(cfg HTTPConfig, d time.Duration) HTTPConfig {
	cfg.bodyReadTimeout = d
	return cfg
}

// WithSessionIdleTTL returns cfg with Streamable HTTP sessions ending after
// d without a request, so that tests need not wait an hour.
func WithSessionIdleTTL(cfg HTTPConfig, d time.Duration) HTTPConfig {
	cfg.sessionIdleTTL = d
	return cfg
}

// WithWriteTimeout returns cfg with a write to a client that makes no
// progress for d ending its connection, so that tests need not wait the
// default.
func WithWriteTimeout(cfg HTTPConfig, d time.Duration) HTTPConfig {
	cfg.writeTimeout = d
	return cfg
}
