//go:build !(linux || darwin)

package embedpg

import (
	"context"
	"runtime"
)

var errUnsupported = unsupported(runtime.GOOS)

// Cluster is a running embedded PostgreSQL server; unavailable on this system.
type Cluster struct{}

// Start fails on this system with an *Error: pass the URL of a running
// PostgreSQL server to store.Open instead.
func Start(ctx context.Context, opts Options) (*Cluster, error) { return nil, errUnsupported }

// URL returns the connection string of the cluster.
func (c *Cluster) URL() string { return "" }

// DataDir returns the data directory of the cluster.
func (c *Cluster) DataDir() string { return "" }

// Stop stops the cluster.
func (c *Cluster) Stop(ctx context.Context) error { return nil }
