package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// cobraWords rewords cobra's errors for a mistyped command line, which say
// what was wrong ("accepts 1 arg(s), received 0") but not what to give:
// the arguments the command takes, the commands there are, where its
// flags are listed. Other errors pass unchanged.
func cobraWords(cmd *cobra.Command, err error) error {
	if err == nil || cmd == nil || !isCobraUsage(err) {
		return err
	}
	msg, path := err.Error(), cmd.CommandPath()
	name := strings.TrimPrefix(path, cmd.Root().Name()+" ") // after "pgbus: "
	switch {
	case strings.HasPrefix(msg, "accepts "), strings.HasPrefix(msg, "requires "):
		return usageError{fmt.Errorf("%s takes %s (%s): %s; see %s --help", name, argumentsOf(cmd), msg, cmd.UseLine(), path)}
	case strings.HasPrefix(msg, "unknown command") && !cmd.HasAvailableSubCommands():
		return usageError{fmt.Errorf("%s takes %s (%s); see %s --help", name, argumentsOf(cmd), msg, path)}
	case strings.HasPrefix(msg, "unknown command") && !cmd.HasParent():
		return usageError{fmt.Errorf("%s; use one of: %s (pgbus --help says what each does)", msg, strings.Join(commandNames(cmd), ", "))}
	case strings.HasPrefix(msg, "unknown flag"), strings.HasPrefix(msg, "unknown shorthand flag"):
		return usageError{fmt.Errorf("%s; %s --help lists the flags it takes", msg, path)}
	}
	return err
}

// argumentsOf says what arguments cmd takes, from its usage line.
func argumentsOf(cmd *cobra.Command) string {
	var args []string
	words := strings.Fields(cmd.Use)[1:]
	for i, w := range words {
		flagValue := i > 0 && strings.HasPrefix(words[i-1], "-")
		if !strings.HasPrefix(w, "[") && !strings.HasPrefix(w, "-") && !flagValue {
			args = append(args, w)
		}
	}
	if len(args) == 0 {
		return "no arguments"
	}
	return strings.Join(args, " ")
}

// commandNames are the names of cmd's commands that a person may use.
func commandNames(cmd *cobra.Command) []string {
	names := []string{}
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}
