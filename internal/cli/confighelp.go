package cli

import (
	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/config"
)

func configHelpTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "The configuration file and the order of settings (flags > env > file > defaults)",
		Long:  config.Help(),
	}
}
