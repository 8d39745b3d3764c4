package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// KnownVariables is knownVariables, for the tests of package cli_test.
var KnownVariables = knownVariables

// RunnableCommands names every command of the tree that runs (not a group
// that only shows its help), each as its words after pgbus.
func RunnableCommands() []string {
	var out []string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && len(path) > 0 {
			out = append(out, strings.Join(path, " "))
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk((&app{}).rootCommand(), nil)
	return out
}
