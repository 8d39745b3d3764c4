package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every text flag of every command given an empty or blank value, as a
// script's unset variable gives it, is refused: read as the flag left out,
// it would quietly mean something else (--database-url "" the embedded
// database instead of DATABASE_URL's). --cursor alone takes one: a paging
// loop starts with it empty.
func TestEveryTextFlagRefusesAnEmptyValue(t *testing.T) {
	t.Parallel()
	checked, cursors := 0, 0
	for _, path := range commandPaths() {
		for _, name := range textFlags(t, path) {
			for _, value := range []string{"", "  "} {
				cmd := commandAt(t, path)
				if err := cmd.ParseFlags([]string{"--" + name + "=" + value}); err != nil {
					t.Fatalf("pgbus %s --%s=%q: %v", strings.Join(path, " "), name, value, err)
				}
				err := refuseEmpty(cmd.Flags())
				if name == "cursor" {
					if err != nil {
						t.Fatalf("pgbus %s --cursor=%q refused: %v; want the first page", strings.Join(path, " "), value, err)
					}
					cursors++
					continue
				}
				if _, usage := err.(usageError); !usage || !strings.Contains(err.Error(), "--"+name+" is empty") {
					t.Fatalf("pgbus %s --%s=%q: %v; want a usage error naming the flag", strings.Join(path, " "), name, value, err)
				}
				checked++
			}
		}
	}
	if checked < 100 || cursors == 0 {
		t.Fatalf("checked %d empty flags and %d cursors; the walk missed the commands", checked, cursors)
	}
}

// commandPaths are the paths of every command, the root ([]) included.
func commandPaths() [][]string {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk((&app{}).rootCommand(), nil)
	return paths
}

// commandAt returns the command at path of a new command tree.
func commandAt(t *testing.T, path []string) *cobra.Command {
	t.Helper()
	cmd, _, err := (&app{}).rootCommand().Find(path)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

// textFlags names the text flags of the command at path, its parents'
// persistent ones included.
func textFlags(t *testing.T, path []string) []string {
	t.Helper()
	cmd := commandAt(t, path)
	if err := cmd.ParseFlags(nil); err != nil { // merges the persistent flags
		t.Fatal(err)
	}
	var names []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Value.Type() == "string" {
			names = append(names, fl.Name)
		}
	})
	return names
}

// An empty --database-url stops the command before anything starts: the
// embedded database is not made in the data directory.
func TestEmptyDatabaseURLStartsNothing(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"queue", "create", "lost", "--database-url", "", "--data-dir", dataDir}, strings.NewReader(""), &stdout, &stderr)
	if code != ExitUsage || !strings.Contains(stderr.String(), "--database-url is empty: give a value, or leave the flag out") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --database-url", code, stderr.String())
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Fatalf("data directory holds %v (%v); want nothing started", entries, err)
	}
}

// Every text flag of every command given twice is refused, naming both
// values: pflag kept the last and dropped the first without a word.
func TestEveryTextFlagRefusesASecondValue(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, path := range commandPaths() {
		for _, name := range textFlags(t, path) {
			cmd := commandAt(t, path)
			err := cmd.ParseFlags([]string{"--" + name + "=first", "--" + name + "=second"})
			if err == nil || !strings.Contains(err.Error(), "--"+name+` was given twice ("first", then "second"): give it once`) {
				t.Fatalf("pgbus %s --%s twice: %v; want it refused", strings.Join(path, " "), name, err)
			}
			once := commandAt(t, path)
			if err := once.ParseFlags([]string{"--" + name + "=only"}); err != nil || once.Flags().Lookup(name).Value.String() != "only" {
				t.Fatalf("pgbus %s --%s once: %v", strings.Join(path, " "), name, err)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d flags; the walk missed the commands", checked)
	}
}

// Every list flag (--trusted-proxies, --safe-fields, --queue, --header,
// ...) given an empty or blank value is refused as a text flag's is: the
// flag counts as given, so an empty --trusted-proxies "$PROXIES", with
// PROXIES unset, would drop PGBUS_TRUSTED_PROXIES without a word, and the
// login throttle would count every client behind the proxy as one.
func TestEveryListFlagRefusesAnEmptyValue(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, path := range commandPaths() {
		cmd := commandAt(t, path)
		if err := cmd.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		var names []string
		cmd.Flags().VisitAll(func(fl *pflag.Flag) {
			if _, list := fl.Value.(pflag.SliceValue); list {
				names = append(names, fl.Name)
			}
		})
		for _, name := range names {
			for _, value := range []string{"", "  "} {
				cmd := commandAt(t, path)
				if err := cmd.ParseFlags([]string{"--" + name + "=" + value}); err != nil {
					t.Fatalf("pgbus %s --%s=%q: %v", strings.Join(path, " "), name, value, err)
				}
				err := refuseEmpty(cmd.Flags())
				if _, usage := err.(usageError); !usage || !strings.Contains(err.Error(), "--"+name+" is empty") {
					t.Fatalf("pgbus %s --%s=%q: %v; want a usage error naming the flag", strings.Join(path, " "), name, value, err)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d empty list flags; the walk missed the commands", checked)
	}
}

// An empty --trusted-proxies stops the dashboard at start, rather than
// serving it with the proxies PGBUS_TRUSTED_PROXIES names dropped.
func TestEmptyTrustedProxiesFlagIsRefused(t *testing.T) {
	t.Setenv(EnvTrustedProxies, "10.0.0.0/8")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"dashboard", "--trusted-proxies", "", "--no-embedded", "--addr", "127.0.0.1:1"}, strings.NewReader(""), &stdout, &stderr)
	if code != ExitUsage || !strings.Contains(stderr.String(), "--trusted-proxies is empty: give a value, or leave the flag out") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --trusted-proxies", code, stderr.String())
	}
}
