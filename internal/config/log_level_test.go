package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
)

// log_level takes what --log-level and PGBUS_LOG_LEVEL take, in any case
// (DEBUG, Warn), so that a level moved from one source to another still
// reads; a word that is no level is refused, naming what is.
func TestLogLevelTakesWhatTheFlagTakes(t *testing.T) {
	for _, level := range []string{"DEBUG", "Warn", "error", "info"} {
		f, err := config.Parse("pgbus.yaml", []byte("log_level: "+level+"\n"))
		if err != nil || f.LogLevel != level {
			t.Errorf("log_level: %s: %+v, %v; want it taken", level, f, err)
		}
	}
	if _, err := config.Parse("pgbus.yaml", []byte("log_level: loud\n")); err == nil || !strings.Contains(err.Error(), `log_level: "loud": use debug, info, warn or error`) {
		t.Errorf("log_level: loud: %v; want it refused, naming the levels", err)
	}
}
