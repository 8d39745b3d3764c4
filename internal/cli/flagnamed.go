package cli

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/ops"
)

// flagNamed names the command's flag in an operation's error about one
// request field (--error-class for error_class), as the person typed it.
// Other errors, and fields the command takes as arguments rather than
// flags, pass unchanged.
func flagNamed(cmd *cobra.Command, err error) error {
	var oe *ops.Error
	if cmd == nil || !errors.As(err, &oe) || oe.Field == "" || !strings.HasPrefix(oe.Msg, oe.Field+" ") {
		return err
	}
	flag := strings.ReplaceAll(oe.Field, "_", "-")
	if cmd.Flags().Lookup(flag) == nil {
		return err
	}
	named := *oe
	named.Msg = "--" + flag + strings.TrimPrefix(oe.Msg, oe.Field)
	return &named
}
