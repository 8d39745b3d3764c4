package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
)

// A file that ends with a document separator, as files put together from
// templates often do, holds one document with something in it: it is
// read, where it was refused as holding two. A second document that holds
// anything is still refused.
func TestTrailingEmptyDocuments(t *testing.T) {
	for _, text := range []string{
		"log_level: debug\n---\n",
		"---\nlog_level: debug\n---\n# nothing more\n",
		"log_level: debug\n---\n...\n---\n",
	} {
		f, err := config.Parse("pgbus.yaml", []byte(text))
		if err != nil {
			t.Errorf("%q: %v; want it read", text, err)
		} else if f.LogLevel != "debug" {
			t.Errorf("%q: log level %q; want debug", text, f.LogLevel)
		}
	}
	for _, text := range []string{
		"log_level: info\n---\nlog_level: debug\n",
		"log_level: info\n---\n---\nlog_level: debug\n",
		"log_level: info\n---\nnull\n",
	} {
		if _, err := config.Parse("pgbus.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), "more than one YAML document") {
			t.Errorf("%q: %v; want it refused as more than one document", text, err)
		}
	}
}
