// Package e2e runs pgbus end to end with real clients against the built
// binary: the official MCP TypeScript SDK (agent.test.mjs, under Node.js's
// test runner) over stdio, and mcp-go's client over every transport.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

var binary string

func TestMain(m *testing.M) { os.Exit(pgtest.MainWithBinary(m, &binary)) }

// The TypeScript SDK's client drives pgbus serve over stdio. npm installs
// the SDK from package-lock.json when node_modules lacks it; if that fails,
// the test fails with npm's output.
func TestTypeScriptSDKAgent(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: this test needs Node.js 20 or later and npm (%v)", tool, err)
		}
	}
	installSDK(t)

	url := pgtest.NewDatabase(t)
	queue := "billing"
	ids := seed(t, url, queue)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=tap", "agent.test.mjs")
	cmd.Env = append(os.Environ(),
		"PGBUS_BINARY="+binary,
		"PGBUS_E2E_DATABASE_URL="+url,
		"PGBUS_E2E_QUEUE="+queue,
		"PGBUS_E2E_IDS="+joinIDs(ids),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	report := out.String()
	if err != nil {
		t.Fatalf("node --test agent.test.mjs failed (%v):\n%s", err, report)
	}
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindStringSubmatch(report)
	fail := regexp.MustCompile(`(?m)^# fail (\d+)$`).FindStringSubmatch(report)
	if pass == nil || fail == nil || fail[1] != "0" {
		t.Fatalf("node's test report has no clean pass/fail count:\n%s", report)
	}
	if n, _ := strconv.Atoi(pass[1]); n < 6 {
		t.Fatalf("only %d node tests passed, want 6:\n%s", n, report)
	}
	t.Logf("node --test: %s tests passed", pass[1])
}

// installSDK runs npm ci when the SDK is not installed yet.
func installSDK(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("npm ci could not install the MCP TypeScript SDK (%v); this test needs it and the npm registry:\n%s", err, out.String())
	}
}

// seed dead-letters three messages of queue, the first with a secret in
// its payload, and returns their DLQ ids, oldest first.
func seed(t *testing.T, url, queue string) []int64 {
	t.Helper()
	s := pgtest.OpenStore(t, url)
	pgtest.CreateQueue(t, s, queue)
	var specs []pgtest.DeadSpec
	for i, p := range []string{`{"invoice":1,"card":{"password":"hunter2"}}`, `{"invoice":2}`, `{"invoice":3}`} {
		specs = append(specs, pgtest.DeadSpec{
			Kind: "charge", Reason: store.ReasonNonRetryable, Class: "CardDeclined", Attempt: 1,
			Message: "card declined: insufficient funds", Trace: "billing.charge\n\tbilling.go:42",
			Payload: p, Headers: fmt.Sprintf(`{"pgbus_kind":"charge","n":%d}`, i),
		})
	}
	return pgtest.DeadLetter(t, s, queue, specs...)
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}
