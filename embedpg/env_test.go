//go:build linux

package embedpg

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// The server's environment holds none of ours but what it uses: as root,
// the server runs as another user, who could otherwise read our secrets
// (the MCP token, what alerts expand) from it.
func TestServerEnvironmentHoldsNoSecrets(t *testing.T) {
	const secret = "s3cret-token-of-the-test"
	t.Setenv("PGBUS_MCP_TOKEN", secret)
	t.Setenv("TZ", "UTC")
	dir := tempDataDir(t, "ep-")
	start(t, dir)
	env, err := os.ReadFile("/proc/" + strconv.Itoa(serverPID(t, dir)) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(env, []byte(secret)) {
		t.Errorf("the server's environment holds PGBUS_MCP_TOKEN: %q", env)
	}
	if !bytes.Contains(env, []byte("TZ=UTC\x00")) {
		t.Errorf("the server's environment lost TZ, which it uses: %q", env)
	}
}
