// Package bouncertest runs a real PgBouncer in transaction pooling mode
// (or, for a test that asks, session mode) in front of the test database,
// and its tests check that pgbus works through it: migrations, workers,
// retention election and the MCP tools.
//
// In transaction pooling a client holds a server connection only for the
// length of one transaction, so session state (LISTEN, session advisory
// locks, SET, named prepared statements on PgBouncer before 1.21) does not
// carry from one transaction to the next.
//
// A pgbouncer that crashes (PgBouncer 1.18 does on a cancel request whose
// client closed its connection early) is started again on its port, and
// the test's log, and its failure's message, say so (Bouncer.Crashes).
//
// The tests fail, never skip, when the pgbouncer binary is missing: install
// the pgbouncer package (Debian and Ubuntu: apt-get install pgbouncer).
package bouncertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/plural"
)

// SafeExecMode is the connection parameter that makes pgx use no named
// prepared statements, which PgBouncer before 1.21 (or with
// max_prepared_statements = 0) cannot keep across transactions. Its URLs
// carry it as the README says users should.
const SafeExecMode = "default_query_exec_mode=cache_describe"

// Bouncer is a running pgbouncer process.
//
// A pgbouncer that exits on its own, as PgBouncer 1.18 does on a cancel
// request whose client closed its connection before PgBouncer was done
// with it ("FATAL ... disconnect_client(): bad client state"), is started
// again at once on the same port, and the test is told so: in its log at
// once, and again with pgbouncer's last words when it fails (Crashes).
type Bouncer struct {
	// Version is what pgbouncer --version said, e.g. "1.18.0".
	Version string
	port    int
	dbName  string
	log     *pgtest.SyncBuffer
	// bin and args run pgbouncer again (Restart).
	bin  string
	args []string
	tb   testing.TB

	mu sync.Mutex
	// proc is the pgbouncer process started last.
	proc *proc
	// restarted is closed once a restart after a crash is done, nil
	// while none is under way.
	restarted chan struct{}
	// ending is set once the test ends: a crash then is not restarted.
	ending bool
	// crashes says, for each time pgbouncer exited on its own, when and
	// how, with its last lines.
	crashes []string
	// ca signs the client certificates of a bouncer that wants them, and
	// client is the one URL names; ca is nil for one that does not.
	ca     *certAuthority
	client Cert
}

// proc is one pgbouncer process.
type proc struct {
	cmd *exec.Cmd
	// exited is closed once it exited.
	exited chan struct{}
	// stopping is set before the harness stops or kills it: its exit is
	// no crash.
	stopping bool
	// up is set once it listened: an exit before is its start failing,
	// which the start reports, no crash.
	up bool
}

// Restart kills pgbouncer (SIGKILL), as a crash does, and starts it again
// at once on the same port, as a supervisor restarting it does: the
// connections through it break, and new ones are taken again.
func (b *Bouncer) Restart(tb testing.TB) {
	tb.Helper()
	b.Kill(tb)
	b.StartAgain(tb)
}

// StartAgain starts pgbouncer again on the same port after Kill, as a
// supervisor does after a while: until then, connecting to it is refused.
func (b *Bouncer) StartAgain(tb testing.TB) {
	tb.Helper()
	p, err := b.launch()
	if err != nil {
		tb.Fatalf("bouncertest: start pgbouncer again: %v", err)
	}
	if err := b.waitListening(p, 15*time.Second); err != nil {
		tb.Fatalf("bouncertest: start pgbouncer again: %v", err)
	}
}

// launch starts pgbouncer with b's arguments, as b's process from now
// on, and watches it for a crash.
func (b *Bouncer) launch() (*proc, error) {
	cmd := exec.Command(b.bin, b.args...)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	cmd.SysProcAttr = ownGroup() // a Ctrl-C goes to the test, which stops it
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.bin, err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()
	go b.watch(p)
	return p, nil
}

// watch starts pgbouncer again when p exits on its own (a crash), unless
// the harness stopped it or the test ends.
func (b *Bouncer) watch(p *proc) {
	<-p.exited
	b.mu.Lock()
	if !p.up || p.stopping || b.ending || b.proc != p {
		b.mu.Unlock()
		return
	}
	crash := fmt.Sprintf("PgBouncer %s exited at %s (%v), not stopped by the harness: a crash, such as PgBouncer 1.18's on a cancel request whose client closed its connection early (\"disconnect_client(): bad client state\"); its last lines:\n%s",
		b.Version, time.Now().Format("15:04:05.000"), p.cmd.ProcessState, lastLines(b.log.String(), 10))
	b.crashes = append(b.crashes, crash)
	done := make(chan struct{})
	b.restarted = done
	b.tb.Logf("bouncertest: %s\nbouncertest: starting it again on port %d; connections through it broke", crash, b.port)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.restarted = nil
		b.mu.Unlock()
		close(done)
	}()
	again, err := b.launch()
	if err == nil {
		err = b.waitListening(again, 15*time.Second)
	}
	if err != nil {
		b.mu.Lock()
		b.crashes = append(b.crashes, fmt.Sprintf("starting it again after the crash failed: %v", err))
		b.mu.Unlock()
	}
}

// Crashes says, for each time pgbouncer exited on its own since it was
// started (a crash, which the harness started it again after), when and
// how, with pgbouncer's last lines; none when it did not.
func (b *Bouncer) Crashes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.crashes)
}

// CrashWords says that pgbouncer crashed, and how, when it did (Crashes),
// for the message of a test's failure through it: "" when it did not.
func (b *Bouncer) CrashWords() string {
	crashes := b.Crashes()
	if len(crashes) == 0 {
		return ""
	}
	return fmt.Sprintf("\nbouncertest: PgBouncer itself crashed %s during the test, and was started again after each: a failure then is the crash's, not pgbus's:\n%s",
		plural.Count(len(crashes), "time", "times"), strings.Join(crashes, "\n"))
}

// AwaitUp returns once pgbouncer listens on its port, waiting for a
// restart after a crash to be done, or fails the test within 30s.
func (b *Bouncer) AwaitUp(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.mu.Lock()
		restarted := b.restarted
		b.mu.Unlock()
		if restarted != nil {
			<-restarted
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)), time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("bouncertest: pgbouncer does not listen on port %d: %v%s", b.port, err, b.CrashWords())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitListening waits until pgbouncer, started as p, listens on its port.
func (b *Bouncer) waitListening(p *proc, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("pgbouncer exited at start: %s", lastLines(b.log.String(), 10))
		default:
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)), time.Second)
		if err == nil {
			_ = c.Close()
			b.mu.Lock()
			p.up = true
			b.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgbouncer did not listen on port %d within %s: %s", b.port, within, lastLines(b.log.String(), 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// current returns pgbouncer's process, once a restart after a crash under
// way is done, marked as stopping by the harness: its exit is no crash.
func (b *Bouncer) current() *proc {
	for {
		b.mu.Lock()
		restarted := b.restarted
		if restarted == nil {
			p := b.proc
			p.stopping = true
			b.mu.Unlock()
			return p
		}
		b.mu.Unlock()
		<-restarted
	}
}

// stop stops pgbouncer (SIGTERM, then SIGKILL after 10s) at the end of
// the test: a crash after is not restarted.
func (b *Bouncer) stop() {
	b.mu.Lock()
	b.ending = true
	b.mu.Unlock()
	p := b.current()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Kill kills pgbouncer (SIGKILL), as a crash or the restart of its host
// does, and waits for it to exit: the connections through it break.
func (b *Bouncer) Kill(tb testing.TB) {
	tb.Helper()
	p := b.current()
	if err := p.cmd.Process.Kill(); err != nil {
		tb.Fatalf("bouncertest: kill pgbouncer: %v", err)
	}
	<-p.exited
}

// URL returns a connection string for the database through the bouncer,
// with SafeExecMode.
func (b *Bouncer) URL() string {
	if b.ca != nil {
		return b.URLWith(b.client)
	}
	return fmt.Sprintf("postgres://pgbus@127.0.0.1:%d/%s?sslmode=disable&%s", b.port, url.PathEscape(b.dbName), SafeExecMode)
}

// URLWith is URL logging in with client certificate c, over TLS that
// checks the bouncer's certificate, for a bouncer started with
// Options.ClientCertificates.
func (b *Bouncer) URLWith(c Cert) string {
	q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {b.ca.file}, "sslcert": {c.CertFile}, "sslkey": {c.KeyFile}}
	return fmt.Sprintf("postgres://pgbus@127.0.0.1:%d/%s?%s&%s", b.port, url.PathEscape(b.dbName), q.Encode(), SafeExecMode)
}

// NewClientCert signs another client certificate for user pgbus, as a
// rotation of the one URL names, for a bouncer started with
// Options.ClientCertificates.
func (b *Bouncer) NewClientCert(tb testing.TB) Cert {
	tb.Helper()
	c, err := b.ca.issue("pgbus", false)
	if err != nil {
		tb.Fatalf("bouncertest: sign a client certificate: %v", err)
	}
	return c
}

// clientTLS makes a CA in dir, the bouncer's server certificate and a
// client certificate, and writes the settings that take clients over TLS
// only, each with a certificate the CA signed, to ini.
func clientTLS(dir string, ini *strings.Builder) (*certAuthority, Cert, error) {
	// PgBouncer started as root reads its files as the user it switches to.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, Cert{}, err
	}
	ca, err := newCertAuthority(dir)
	if err != nil {
		return nil, Cert{}, fmt.Errorf("make a certificate authority: %w", err)
	}
	server, err := ca.issue("127.0.0.1", true)
	if err != nil {
		return nil, Cert{}, fmt.Errorf("sign the bouncer's certificate: %w", err)
	}
	client, err := ca.issue("pgbus", false)
	if err != nil {
		return nil, Cert{}, fmt.Errorf("sign a client certificate: %w", err)
	}
	fmt.Fprintf(ini, "client_tls_sslmode = verify-full\nclient_tls_ca_file = %s\nclient_tls_cert_file = %s\nclient_tls_key_file = %s\n", ca.file, server.CertFile, server.KeyFile)
	return ca, client, nil
}

// Admin runs command (PAUSE, RESUME, RECONNECT ...) on the bouncer's admin
// console, and fails the test if
// the console refuses it. Pause makes the bouncer accept clients but
// answer none of their statements until Resume.
func (b *Bouncer) Admin(tb testing.TB, command string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://pgbouncer@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", b.port))
	if err != nil {
		tb.Fatalf("bouncertest: connect to the admin console: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, command); err != nil {
		tb.Fatalf("bouncertest: %s on the admin console: %v", command, err)
	}
}

// Pause pauses the test database on the bouncer (PAUSE), until Resume or
// the test's end: the bouncer takes connections, and holds every
// statement sent on them unanswered (up to its query_wait_timeout, after
// which it ends the connection).
func (b *Bouncer) Pause(tb testing.TB) {
	tb.Helper()
	b.Admin(tb, "PAUSE "+b.dbName)
	tb.Cleanup(func() { b.Resume(tb) })
}

// Resume resumes the test database after Pause (RESUME); resuming one not
// paused does nothing.
func (b *Bouncer) Resume(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://pgbouncer@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", b.port))
	if err != nil {
		return // stopped already
	}
	defer c.Close(context.Background())
	_, _ = c.Exec(ctx, "RESUME "+b.dbName) // an error when it is not paused
}

// AwaitServerDown returns once the bouncer refuses new clients at login
// because its last connection to PostgreSQL failed (its fast fail), after
// PostgreSQL was stopped. Until the bouncer has tried PostgreSQL, a
// statement sent on a client it has already taken waits for a server
// connection until its query_wait_timeout, and goes on waiting through
// the bouncer's later failed tries; so the tests of what a client meets
// once the bouncer knows, first make it try with a statement of their
// own, given up after a second, and wait for a login it refuses.
func (b *Bouncer) AwaitServerDown(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := b.tryStatement()
		if err != nil && (strings.Contains(err.Error(), "cannot connect to server") || strings.Contains(err.Error(), "server login has been failing")) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("bouncertest: the bouncer still takes clients a minute after PostgreSQL stopped (last: %v)\n%s", err, lastLines(b.Log(), 20))
		}
	}
}

// tryStatement logs in to the bouncer anew and runs a statement, each
// given up after a second.
func (b *Bouncer) tryStatement() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, b.URL())
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "SELECT 1")
	return err
}

// Log returns what pgbouncer has logged so far.
func (b *Bouncer) Log() string { return b.log.String() }

// Binary finds the pgbouncer executable: on PATH, or where Debian installs
// it (/usr/sbin is not on every user's PATH).
func Binary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer", "/usr/local/bin/pgbouncer"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("pgbouncer is not installed: these tests run pgbus through a real PgBouncer; " +
		"install it (Debian/Ubuntu: apt-get install pgbouncer; macOS: brew install pgbouncer), as .ci/run does")
}

var versionRE = regexp.MustCompile(`PgBouncer (\d+)\.(\d+)(\.\d+)?`)

// version runs pgbouncer --version and returns e.g. "1.18.0", 1, 18.
func version(bin string) (string, int, int, error) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", 0, 0, fmt.Errorf("%s --version: %v: %s", bin, err, bytes.TrimSpace(out))
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return "", 0, 0, fmt.Errorf("%s --version printed no version: %s", bin, bytes.TrimSpace(out))
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	return strings.TrimPrefix(string(m[0]), "PgBouncer "), major, minor, nil
}

// Start starts pgbouncer on a free local TCP port in front of the server of
// dbURL (pgtest.URL or a database of the test's own), in transaction pooling
// mode, and stops it when the test ends. Clients authenticate with any name;
// pgbouncer logs in to the server as dbURL's user. It fails the test when
// pgbouncer is missing or does not start.
func Start(tb testing.TB, dbURL string) *Bouncer {
	tb.Helper()
	return StartPool(tb, dbURL, 20)
}

// StartPool is Start with at most poolSize server connections for each
// database (default_pool_size): with one, every transaction meets what
// the one before it left on the server connection.
func StartPool(tb testing.TB, dbURL string, poolSize int) *Bouncer {
	tb.Helper()
	return StartWith(tb, dbURL, Options{PoolSize: poolSize})
}

// Options are the settings of a bouncer that StartWith starts.
type Options struct {
	// PoolSize is default_pool_size, the server connections of each
	// database; 20 when 0.
	PoolSize int
	// QueryWaitTimeout is query_wait_timeout, how long a client's
	// statement waits for a server connection before the bouncer ends the
	// client's connection; PgBouncer's default (two minutes) when 0.
	QueryWaitTimeout time.Duration
	// PoolMode is pool_mode: "transaction" when "", or "session", in
	// which a client keeps one server connection for as long as it is
	// connected.
	PoolMode string
	// ClientCertificates has the bouncer take its clients over TLS only,
	// each logging in with a client certificate its CA signed whose
	// common name is the user (auth_type = cert); URL then names one.
	ClientCertificates bool
}

// StartWith is Start with opts.
func StartWith(tb testing.TB, dbURL string, opts Options) *Bouncer {
	tb.Helper()
	if opts.PoolSize == 0 {
		opts.PoolSize = 20
	}
	if opts.PoolMode == "" {
		opts.PoolMode = "transaction"
	}
	bin, err := Binary()
	if err != nil {
		tb.Fatal("bouncertest: ", err)
	}
	ver, major, minor, err := version(bin)
	if err != nil {
		tb.Fatal("bouncertest: ", err)
	}
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		tb.Fatalf("bouncertest: parse the database URL: %v", err)
	}
	var lastErr error
	for range 3 { // a free port may be taken by someone else before pgbouncer binds it
		b, err := start(tb, bin, ver, cfg, major, minor, opts)
		if err == nil {
			tb.Logf("bouncertest: PgBouncer %s in %s mode on 127.0.0.1:%d", ver, opts.PoolMode, b.port)
			return b
		}
		lastErr = err
	}
	tb.Fatalf("bouncertest: %v", lastErr)
	return nil
}

func start(tb testing.TB, bin, ver string, cfg *pgconn.Config, major, minor int, opts Options) (*Bouncer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := tb.TempDir()
	server := fmt.Sprintf("host=%s port=%d user=%s", quote(cfg.Host), cfg.Port, quote(cfg.User))
	if cfg.Password != "" {
		server += " password=" + quote(cfg.Password)
	}
	var ini strings.Builder
	fmt.Fprintf(&ini, "[databases]\n* = %s\n\n[pgbouncer]\n", server)
	fmt.Fprintf(&ini, "listen_addr = 127.0.0.1\nlisten_port = %d\nunix_socket_dir =\n", port)
	// Clients may give any name: every database logs in as the server's
	// user. User pgbouncer may use the admin console (Admin).
	authType := "any"
	var ca *certAuthority
	var client Cert
	if opts.ClientCertificates {
		if ca, client, err = clientTLS(dir, &ini); err != nil {
			return nil, err
		}
		authType = "cert"
	}
	ini.WriteString("auth_type = " + authType + "\nauth_file = " + filepath.Join(dir, "userlist.txt") + "\nadmin_users = pgbouncer\n")
	fmt.Fprintf(&ini, "pool_mode = %s\nmax_client_conn = 400\ndefault_pool_size = %d\n", opts.PoolMode, opts.PoolSize)
	if opts.QueryWaitTimeout > 0 {
		fmt.Fprintf(&ini, "query_wait_timeout = %d\n", max(1, int(opts.QueryWaitTimeout.Seconds())))
	}
	ini.WriteString("server_tls_sslmode = disable\nlogfile =\npidfile =\n")
	if major > 1 || minor >= 21 {
		// PgBouncer 1.21+ could keep named prepared statements; turn that off
		// so that the tests check the exec mode the README asks for on every
		// version.
		ini.WriteString("max_prepared_statements = 0\n")
	}
	iniPath := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(iniPath, []byte(ini.String()), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(`"`+cfg.User+`" ""`+"\n"), 0o600); err != nil {
		return nil, err
	}
	args := []string{iniPath}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root. It reads its files first, then
		// switches to the user that owns the server's socket directory (the
		// only one besides root that may use a socket of the embedded
		// server), or else postgres or nobody.
		name, err := unprivilegedUser(cfg.Host)
		if err != nil {
			return nil, err
		}
		args = []string{"-u", name, iniPath}
	}
	b := &Bouncer{Version: ver, port: port, dbName: cfg.Database, log: &pgtest.SyncBuffer{}, bin: bin, args: args, tb: tb, ca: ca, client: client}
	p, err := b.launch()
	if err != nil {
		return nil, err
	}
	if err := b.waitListening(p, 15*time.Second); err != nil {
		b.stop()
		return nil, err
	}
	if err := checkConnect(b); err != nil {
		b.stop()
		return nil, err
	}
	tb.Cleanup(func() {
		b.stop()
		if tb.Failed() {
			tb.Logf("pgbouncer's log:\n%s%s", lastLines(b.log.String(), 40), b.CrashWords())
		}
	})
	return b, nil
}

// checkConnect makes one connection through the bouncer, so that a bad
// server address fails here with pgbouncer's words and not in a test.
func checkConnect(b *Bouncer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, b.URL())
	if err == nil {
		_, err = c.Exec(ctx, "SELECT 1")
		_ = c.Close(ctx)
	}
	if err != nil {
		return fmt.Errorf("connect through pgbouncer: %w; its log: %s", err, lastLines(b.log.String(), 10))
	}
	return nil
}

// unprivilegedUser names the user pgbouncer switches to when started as
// root.
func unprivilegedUser(host string) (string, error) {
	if st, err := os.Stat(host); err == nil && st.IsDir() {
		if uid, ok := ownerUID(st); ok && uid != 0 {
			if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
				return u.Username, nil
			}
		}
	}
	for _, name := range []string{"postgres", "nobody"} {
		if _, err := user.Lookup(name); err == nil {
			return name, nil
		}
	}
	return "", errors.New("pgbouncer refuses to run as root and there is no user postgres or nobody to run it as; create one or run the tests as a normal user")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// quote quotes a value of a pgbouncer connection string.
func quote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
