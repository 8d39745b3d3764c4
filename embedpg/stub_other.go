//go:build !(linux || darwin)

package embedpg

import (
	"context"
	"errors"
	"runtime"
)

var errUnsupported = errors.New("embedpg: the embedded PostgreSQL needs Linux or macOS (not " + runtime.GOOS +
	"); set DATABASE_URL / --database-url to use a running server")

// Cluster is a running embedded PostgreSQL server; unavailable on this system.
type Cluster struct{}

// Start fails on this system: set DATABASE_URL instead.
func Start(ctx context.Context, opts Options) (*Cluster, error) { return nil, errUnsupported }

// URL returns the connection string of the cluster.
func (c *Cluster) URL() string { return "" }

// DataDir returns the data directory of the cluster.
func (c *Cluster) DataDir() string { return "" }

// Stop stops the cluster.
func (c *Cluster) Stop(ctx context.Context) error { return nil }
