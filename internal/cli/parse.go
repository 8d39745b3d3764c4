package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/ops"
)

// parseID reads a message id argument.
func parseID(s string) (int64, error) {
	id, err := ops.ParseID(s)
	if err != nil && s != "" && s[0] != '0' && strings.Trim(s, "0123456789") == "" {
		return 0, usageError{err} // written right, too large
	}
	if err != nil {
		shown := s // as given, blanks included: they are what is wrong
		if r := []rune(s); len(r) > 40 {
			shown = string(r[:39]) + "…"
		}
		return 0, usageError{fmt.Errorf("message id %q is not an id: ids are positive whole numbers in decimal digits alone (no sign, leading zero, space or separator), as pgbus dlq list shows them", shown)}
	}
	return id, nil
}

// idArgs is the annotation of commands whose arguments are message ids.
const idArgs = "pgbus_id_args"

// negativeIDError recognises the error pflag gives a negative number among
// a command's arguments, which it reads as a bundle of shorthand flags
// (-1 as flag "1"): for a command taking ids it returns the same error as
// any other bad id, otherwise nil.
func negativeIDError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if cmd == nil || cmd.Annotations[idArgs] == "" || !errors.As(err, &unknown) {
		return nil
	}
	short := unknown.GetSpecifiedShortnames()
	if short == "" || short[0] < '0' || short[0] > '9' {
		return nil
	}
	_, idErr := parseID("-" + short)
	return idErr
}

func parseIDs(args []string) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := parseID(a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// distinct counts the different ids of ids: one given twice is one
// message.
func distinct(ids []int64) int {
	return len(slices.Compact(slices.Sorted(slices.Values(ids))))
}

// checkDuration rejects values of a duration flag below lo or above hi
// (hi 0: no bound); why says what a value below lo would do.
func checkDuration(flag string, d, lo, hi time.Duration, why string) error {
	if d < lo {
		return usageError{fmt.Errorf("--%s %s is too short (%s); give %s or more", flag, d, why, lo)}
	}
	if hi > 0 && d > hi {
		return usageError{fmt.Errorf("--%s %s is too long; at most %s", flag, ops.FormatAge(d), ops.FormatAge(hi))}
	}
	return nil
}

// parseHeaders reads repeated --header key=value flags.
func parseHeaders(values []string) (map[string]any, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(values))
	for i, v := range values {
		k, val, ok := strings.Cut(v, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// Not quoted: without its =, nothing tells a header's name
			// from its value, which may be a token.
			return nil, usageError{fmt.Errorf("--header number %d is not key=value: write each as key=value, such as --header tenant=acme", i+1)}
		}
		if _, dup := out[k]; dup {
			return nil, usageError{fmt.Errorf("--header %q is given twice; give each key once", k)}
		}
		out[k] = val
	}
	return out, nil
}

// readPayload reads a message payload from exactly one source: the
// argument (inline JSON, @FILE, or - for stdin) or --file. It must be JSON.
func readPayload(arg string, hasArg bool, file string, stdin io.Reader) (json.RawMessage, error) {
	if hasArg && file != "" {
		return nil, usageError{errors.New("give the payload once: as an argument or with --file, not both")}
	}
	var (
		data []byte
		err  error
		from string
	)
	switch {
	case file != "":
		data, err = readLimited(file, nil)
		from = "file " + file
	case !hasArg:
		return nil, usageError{errors.New("missing payload: pass JSON as the second argument, @FILE, - for stdin, or --file FILE")}
	case arg == "-":
		data, err = readLimited("", stdin)
		from = "stdin"
	case arg == "@":
		return nil, usageError{errors.New("payload @ names no file: write @FILE, e.g. @order.json, or - to read stdin")}
	case strings.HasPrefix(arg, "@"):
		data, err = readLimited(arg[1:], nil)
		from = "file " + arg[1:]
	default:
		data, from = []byte(arg), "the argument"
	}
	if err != nil {
		return nil, err
	}
	data = jsonText(data)
	if len(data) == 0 {
		return nil, usageError{fmt.Errorf("payload from %s is empty; send any JSON value, for example {} or null", from)}
	}
	if jerr := ops.JSONError(data); jerr != nil {
		fix := `quote it for the shell, e.g. '{"order_id": 42}'`
		if from != "the argument" {
			fix = `it must hold one JSON value, e.g. {"order_id": 42}`
		}
		return nil, usageError{fmt.Errorf("payload from %s is not valid JSON: %v; %s", from, jerr, fix)}
	}
	return data, nil
}

// utf8BOM is the byte order mark that Windows editors and PowerShell put
// before the text of a UTF-8 file.
var utf8BOM = []byte("\uFEFF")

// jsonText is the JSON text of a payload as read: without a byte order mark
// before it (JSON allows a reader to ignore one, and a file saved by many
// Windows tools has one), nor the blanks and line ends around it.
func jsonText(data []byte) []byte {
	return bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(data), utf8BOM))
}

// openInput opens the file at path that a command reads its input from
// (what, such as "payload file", names it in errors). A file that cannot
// be opened, or a directory, is a usage error: the command line named the
// wrong thing, and nothing was done.
func openInput(what, path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, usageError{fmt.Errorf("%s %q: %v", what, path, err)}
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, usageError{fmt.Errorf("%s %q is a directory: name a file", what, path)}
	}
	return f, nil
}

// readLimited reads a file (or r when path is "") up to the payload limit.
func readLimited(path string, r io.Reader) ([]byte, error) {
	if path != "" {
		f, err := openInput("payload file", path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, ops.MaxPayloadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	if len(data) > ops.MaxPayloadBytes {
		return nil, usageError{fmt.Errorf("payload is larger than %d bytes; store large data elsewhere and send a reference", ops.MaxPayloadBytes)}
	}
	return data, nil
}

// refuseEmpty refuses every text flag given explicitly with an empty or
// blank value, as a script's unset variable gives it (--kind "$K" with K
// unset, --database-url "$URL" with URL unset): read as the flag left out,
// it would quietly change what the command does (every DLQ instead of one,
// the embedded database instead of DATABASE_URL's, no deadline), so the
// person is told to give a value or leave the flag out. --cursor is the
// exception: a paging loop starts with an empty one, the first page. A
// list flag (--trusted-proxies, --safe-fields, --queue, --header) given
// nothing but blanks is refused too: given, it hides the environment
// variable that would have set it (--trusted-proxies "$P" with P unset
// would drop PGBUS_TRUSTED_PROXIES).
func refuseEmpty(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err == nil && fl.Name != "cursor" && emptyValue(fl.Value) {
			err = usageError{fmt.Errorf("--%s is empty: give a value, or leave the flag out", fl.Name)}
		}
	})
	return err
}

// emptyValue reports whether a text flag's value is blank, or a list
// flag's holds no item that is not.
func emptyValue(v pflag.Value) bool {
	if list, ok := v.(pflag.SliceValue); ok {
		for _, item := range list.GetSlice() {
			if strings.TrimSpace(item) != "" {
				return false
			}
		}
		return true
	}
	return v.Type() == "string" && strings.TrimSpace(v.String()) == ""
}

// changed reports whether any of the flags was given.
func changed(fs *pflag.FlagSet, names ...string) bool {
	for _, n := range names {
		if fs.Changed(n) {
			return true
		}
	}
	return false
}

// optionalName is the name args give a command that takes one or none
// (pgbus queues [QUEUE]): an empty one is refused, since a script whose
// variable was unset ("$Q") would otherwise read every one, which leaving
// it out asks for (all).
func optionalName(args []string, what, all string) (string, error) {
	if len(args) == 0 {
		return "", nil
	}
	if strings.TrimSpace(args[0]) == "" {
		return "", usageError{fmt.Errorf("the %s name is empty: give one, or leave it out for %s", what, all)}
	}
	return args[0], nil
}
