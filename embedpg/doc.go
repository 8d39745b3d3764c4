// Package embedpg runs a private PostgreSQL cluster from the server binaries
// installed on the machine (initdb, postgres), for when no DATABASE_URL is
// given.
//
// The cluster lives in a data directory (see DefaultDataDir) and listens only
// on a Unix socket, never on TCP. Several processes may use the same data
// directory at once: the first Start starts the server, later ones adopt it,
// and only the last Stop shuts it down. Two files coordinate this:
//
//   - pgbus.lock: an exclusive flock held around every start and stop;
//   - pgbus.users: every live Cluster holds a shared flock on it, so a Stop
//     that can take it exclusively knows nobody else is using the server
//     (it tries for a second: a process this one is starting holds a copy
//     of the flock until its program runs).
//
// flock locks vanish with the process that holds them, so a killed pgbus
// leaves the server running without a holder: the next Start adopts it and
// the last Stop stops it. A server that was itself killed leaves a stale
// postmaster.pid, which the next Start clears; while a Cluster is in use it
// looks at the server every 10 seconds and starts it again once it has been
// gone at two looks in a row (also one shut down by hand, which the log
// explains), unless its cluster went with it: then it tries again less and
// less often, and never creates a new empty one. A server whose Unix socket
// was deleted is restarted, which makes it again.
//
// The server writes its log through its logging collector to postgres.log
// in the data directory. Every Cluster, until Stop, keeps it under about
// 10 MB: past that, it is moved to postgres.log.1 and the collector opens a
// new one. postgres.log.1 keeps the newest 10 MB of what was moved there,
// so the two files hold at most about 20 MB.
//
// As root, PostgreSQL refuses to run, so initdb and postgres run as the
// unprivileged user "postgres" (or "pgbus", created when missing) and the data
// directory is handed to that user. initdb and postgres get only the
// variables of the environment they use (locale, time zone, library paths),
// never secrets such as the MCP token, which that user could read.
package embedpg
