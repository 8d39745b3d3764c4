package engine

// HoldHeartbeat makes the visibility heartbeat of a client made with cfg
// skip its extensions while held reports true.
func HoldHeartbeat(cfg *Config, held func() bool) { cfg.heartbeatHeld = held }
