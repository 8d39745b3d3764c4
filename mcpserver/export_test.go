package mcpserver

import "time"

// WithBodyReadTimeout returns cfg with the time to receive a request body
// set to d, so that tests need not wait the default.
func WithBodyReadTimeout(cfg HTTPConfig, d time.Duration) HTTPConfig {
	cfg.bodyReadTimeout = d
	return cfg
}
