package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/exectest"
)

// readmeSection returns the shell blocks of one "## " section of the
// README, in order.
func readmeSection(t *testing.T, heading string) [][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	var blocks [][]string
	for {
		_, after, found := strings.Cut(rest, "```sh\n")
		if !found {
			return blocks
		}
		body, next, _ := strings.Cut(after, "```")
		blocks = append(blocks, commandLines(body))
		rest = next
	}
}

// commandLines splits a shell block into commands: one a line, lines
// ending in a backslash joined, blank lines and comment lines dropped.
func commandLines(body string) []string {
	var out []string
	cur := ""
	for _, line := range strings.Split(body, "\n") {
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line = cur + line
		cur = ""
		if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out
}

// Every command of the README's command-line section works when a newcomer
// copies them in order on a fresh database: each exits 0.
func TestREADMECommandLine(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	blocks := readmeSection(t, "Command line")
	if len(blocks) == 0 {
		t.Fatal("the command-line section has no shell block")
	}
	bin := pgbusOnPath(t)
	n := 0
	for _, block := range blocks {
		for _, line := range block {
			n++
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
			cmd.Dir = dir
			cmd.Env = append(baseEnv(), d.env...)
			cmd.Env = append(cmd.Env, "PATH="+bin+":"+os.Getenv("PATH"), "PGBUS_LOG_LEVEL=warn")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			cancel()
			if err != nil {
				t.Fatalf("README command %d failed: %s\n%v\n%s", n, line, err, out.String())
			}
		}
	}
	if n < 20 {
		t.Fatalf("the command-line section has %d commands; expected the whole walk-through", n)
	}
}

// pgbusOnPath returns a directory for PATH whose pgbus runs the race
// binary for the commands of raceCommands (or a command line that starts
// with a flag) and the quick one for the rest, as binaryFor picks them.
func pgbusOnPath(t *testing.T) string {
	t.Helper()
	race := slices.Sorted(maps.Keys(raceCommands))
	script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in\n%s|-*) exec '%s' \"$@\" ;;\nesac\nexec '%s' \"$@\"\n",
		strings.Join(race, "|"), binary, quickBinary)
	dir := t.TempDir()
	exectest.WriteFile(t, filepath.Join(dir, "pgbus"), script, 0o755)
	return dir
}
