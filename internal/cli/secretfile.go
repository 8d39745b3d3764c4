package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// fileSuffix names the twin of a secret's variable that holds the path of
// a file with its value, as Docker and Kubernetes mount secrets and
// systemd passes credentials: DATABASE_URL_FILE=/run/secrets/db. The
// value stays out of the environment, which a crash report, a child
// process or /proc/PID/environ can show.
const fileSuffix = "_FILE"

// secretVariables are the variables that may be given by file.
var secretVariables = []string{EnvDatabaseURL, EnvAuthToken}

// maxSecretFile bounds what is read of a secret's file: a URL or a token
// is far smaller, and a path given by mistake (a log, a device) must not
// be read whole.
const maxSecretFile = 64 << 10

// lookupSetting is the value of the environment variable name, or of the
// file its _FILE twin names when name is a secret's variable, and where it
// came from; "" when neither is set. Both set is an error: which one the
// deploy meant is not for pgbus to guess. The file's final line breaks are
// left out (an editor or echo adds one; a token with white space would be
// refused), anything else is kept as it is. again, for a value read from
// a file, reads the file again, for a value that may change while the
// process runs (a rotated secret); nil for a value from the environment.
func lookupSetting(name string) (value, source string, again func() (string, error), err error) {
	value, source = os.Getenv(name), "environment variable "+name
	if !slices.Contains(secretVariables, name) {
		return value, source, nil, nil
	}
	twin := name + fileSuffix
	path, set := os.LookupEnv(twin)
	if !set {
		return value, source, nil, nil
	}
	if _, both := os.LookupEnv(name); both {
		return "", "", nil, fmt.Errorf("environment variables %s and %s are both set: keep one (unset %s to read the file)", name, twin, name)
	}
	if strings.TrimSpace(path) == "" {
		return "", "", nil, fmt.Errorf("environment variable %s is set but empty: give the path of the file holding %s, or unset it", twin, name)
	}
	again = func() (string, error) {
		value, err := readSecretFile(path)
		if err != nil {
			return "", fmt.Errorf("environment variable %s=%q: %w", twin, path, err)
		}
		return value, nil
	}
	value, err = again()
	if err != nil {
		return "", "", nil, err
	}
	return value, "the file " + path + " (environment variable " + twin + ")", again, nil
}

// readSecretFile reads a secret's value from path.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errors.New("no such file: mount the secret there, or correct the path")
		}
		return "", fmt.Errorf("cannot read it (%w): give pgbus's user read access to it", pathCause(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read it (%w): is it a regular file?", pathCause(err))
	}
	if len(data) > maxSecretFile {
		return "", fmt.Errorf("the file is larger than %d KiB, more than a secret holds: is it the secret's file?", maxSecretFile>>10)
	}
	value := strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(value) == "" {
		return "", errors.New("the file is empty: put the value in it, or point at the file that holds it")
	}
	return value, nil
}

// pathCause is err without the operation and path an *os.PathError adds,
// which the caller's message says already.
func pathCause(err error) error {
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
