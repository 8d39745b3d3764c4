package bouncertest_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestURLReadAgainLogsInWithItsClientCertificate opens a store whose URL is
// read again for each new connection (DATABASE_URL_FILE), through a
// bouncer that lets in only clients with a certificate its CA signed. Each
// new connection presents the certificate the URL names: the first one;
// once the URL names another (the old one's files removed), that one; and
// once that one's files are rewritten in place (a renewal), what they
// hold then.
func TestURLReadAgainLogsInWithItsClientCertificate(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	b := bouncertest.StartWith(t, pgtest.NewDatabase(t), bouncertest.Options{ClientCertificates: true})
	var mu sync.Mutex
	first := b.NewClientCert(t)
	now := b.URLWith(first)
	again := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return now, nil
	}

	// The bouncer turns away a client without a certificate: the test
	// below can tell one presented from one not.
	bare := strings.NewReplacer("sslcert=", "ignored=", "sslkey=", "ignored2=").Replace(b.URL())
	if st, err := store.OpenFrom(ctx, bare, "test", func() (string, error) { return bare, nil }); err == nil {
		st.Close()
		t.Fatal("a connection without a client certificate was let in; want the bouncer to refuse it")
	}

	st, err := store.OpenFrom(ctx, now, "test", again)
	if err != nil {
		t.Fatalf("open a store whose URL names a client certificate: %v", err)
	}
	defer st.Close()
	connect := func() (int, error) {
		st.Pool().Reset() // the next statement makes a new connection
		var n int
		err := st.Pool().QueryRow(ctx, "SELECT 41 + 1").Scan(&n)
		return n, err
	}
	ask := func(when string) {
		t.Helper()
		if n, err := connect(); err != nil || n != 42 {
			t.Fatalf("%s: a statement on a new connection gave %d, %v; want 42, the client certificate presented", when, n, err)
		}
	}
	ask("with the URL's first certificate")

	rotated := b.NewClientCert(t)
	mu.Lock()
	now = b.URLWith(rotated)
	mu.Unlock()
	for _, f := range []string{first.CertFile, first.KeyFile} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	ask("with the certificate the URL names after a rotation, the old one's files removed")

	// Renewed in place: the files are read again for each connection.
	if err := os.WriteFile(rotated.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := connect(); err == nil {
		t.Fatalf("a new connection after the key file was spoiled gave %d; want it to fail, the file read again", n)
	}
	renewed := b.NewClientCert(t)
	for from, to := range map[string]string{renewed.CertFile: rotated.CertFile, renewed.KeyFile: rotated.KeyFile} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ask("with a renewed certificate written over the files the URL names")
}
