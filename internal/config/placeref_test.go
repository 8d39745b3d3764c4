package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
)

// ${NAME} in database_url and data_dir is the environment variable NAME,
// as in a handler's url: written so, a password stays out of the file,
// where it was taken as written and the server refused the login.
func TestPlacesTakeVariables(t *testing.T) {
	t.Setenv("PGBUS_TEST_DB_PASSWORD", "s3cret%40pw")
	t.Setenv("PGBUS_TEST_HOME", "/srv/app")
	t.Setenv("PGBUS_TEST_HASH", "pa#ss")
	f, err := config.Parse("pgbus.yaml", []byte("log_level: info\ndatabase_url: postgres://app:${PGBUS_TEST_DB_PASSWORD}@db/app\ndata_dir: ${PGBUS_TEST_HOME}/pgbus\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.Expanded("database_url"); err != nil || got != "postgres://app:s3cret%40pw@db/app" {
		t.Errorf("database_url: %q, %v", got, err)
	}
	if got, err := f.Expanded("data_dir"); err != nil || got != "/srv/app/pgbus" {
		t.Errorf("data_dir: %q, %v", got, err)
	}
	if f.DatabaseURL != "postgres://app:${PGBUS_TEST_DB_PASSWORD}@db/app" {
		t.Errorf("the file as written: %q", f.DatabaseURL)
	}
	for _, c := range []struct{ name, file, want string }{
		{"unset", "\ndatabase_url: postgres://app:${PGBUS_TEST_UNSET}@db/app\n", "pgbus.yaml:2: database_url: uses ${PGBUS_TEST_UNSET}, but the environment variable PGBUS_TEST_UNSET is not set"},
		{"unset dir", "data_dir: ${PGBUS_TEST_UNSET}/pgbus\n", "pgbus.yaml:1: data_dir: uses ${PGBUS_TEST_UNSET}"},
		{"structure", "database_url: postgres://app:${PGBUS_TEST_HASH}@db/app\n", "pgbus.yaml:1: database_url: ${PGBUS_TEST_HASH} brings a # into the url"},
	} {
		f, err := config.Parse("pgbus.yaml", []byte(c.file))
		if err != nil {
			t.Errorf("%s: Parse: %v; want the variable needed only when the value is", c.name, err)
			continue
		}
		key := "database_url"
		if strings.HasPrefix(c.file, "data_dir") {
			key = "data_dir"
		}
		_, err = f.Expanded(key)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pa#ss") {
			t.Errorf("%s: the error quotes the value: %v", c.name, err)
		}
	}
	// A reference that cannot be read is refused with the file, whatever
	// gives the setting.
	if _, err := config.Parse("pgbus.yaml", []byte("database_url: postgres://app:${PW@db/app\n")); err == nil || !strings.Contains(err.Error(), "pgbus.yaml:1: database_url:") {
		t.Errorf("an unclosed ${: %v", err)
	}
	// Keyword/value pairs take a # as it is.
	f, err = config.Parse("pgbus.yaml", []byte("database_url: host=db password=${PGBUS_TEST_HASH}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.Expanded("database_url"); err != nil || got != "host=db password=pa#ss" {
		t.Errorf("keyword/value: %q, %v", got, err)
	}
}
