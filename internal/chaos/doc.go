// Package chaos holds the chaos soak test of pgbus. It runs the built pgbus
// command as separate processes (workers, an MCP server, CLI repairs) on a
// private PostgreSQL cluster, kills workers and restarts the server under
// them, then accounts for every message sent: exactly once in an archive, a
// DLQ, a DLQ's archive or a live queue.
//
// It is opt-in, because it runs for minutes:
//
//	PGBUS_CHAOS=10m go test -race -timeout 30m -run TestChaosSoak ./internal/chaos/
package chaos
