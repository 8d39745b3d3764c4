package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pgbus/pgbus/ops"
)

// ndjsonInput is the input of send --ndjson, newline-delimited JSON, one
// payload a line, as the ops.PayloadSource that SendMany reads twice, to
// check every line, then to send them: a file read again from its start,
// or stdin (or a pipe named as the file) copied to a temporary file as it
// is read the first time, and read again from there. It keeps no payload:
// the line of each, to name them in errors.
type ndjsonInput struct {
	// from names the input in errors: "stdin" or "file PATH".
	from     string
	fromLine int
	// file is the input read again from its start: the file named, or the
	// copy of a stream once the stream was read to its end.
	file *os.File
	// stream is the input that can be read only once, until it was read
	// to its end; opened is it when this input opened it.
	stream io.Reader
	opened *os.File
	// copy is the temporary file stream is copied to as it is read, and
	// copyName its name while it is left to Close to remove.
	copy     *os.File
	copyName string
	// lines are the line (from 1) of each payload, as the first read to
	// the input's end found them; read tells that one did, and count how
	// many lines it read. started tells that a read started.
	lines   []int
	count   int
	read    bool
	started bool
	buf     []byte
}

// openNDJSON opens the input of send --ndjson: the file at path, or stdin
// for "-", to be read from line fromLine (from 1). A file that cannot be
// opened is a usage error. Close removes the copy it made.
func openNDJSON(path string, stdin io.Reader, fromLine int) (*ndjsonInput, error) {
	in := &ndjsonInput{from: "stdin", fromLine: fromLine}
	if path == "-" {
		in.stream = stdin
		return in, nil
	}
	f, err := openInput("--ndjson file", path)
	if err != nil {
		return nil, err
	}
	in.from = "file " + path
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		in.file = f
		return in, nil
	}
	// A pipe, as <(jq -c ...) names one, can be read once, as stdin.
	in.stream, in.opened = f, f
	return in, nil
}

// Close closes the input and removes the copy of a stream.
func (in *ndjsonInput) Close() error {
	for _, f := range []*os.File{in.opened, in.copy, in.file} {
		if f != nil {
			f.Close()
		}
	}
	if in.copyName != "" {
		return os.Remove(in.copyName)
	}
	return nil
}

// Each reads the input from its start, giving yield each payload from line
// fromLine on, and its line; blank lines are skipped. A line longer than
// a message may carry stops it, as does an error of reading.
func (in *ndjsonInput) Each(yield func(json.RawMessage, int) error) error {
	in.started = true
	r, err := in.reader()
	if err != nil {
		return err
	}
	if in.buf == nil {
		in.buf = make([]byte, 0, 64<<10)
	}
	sc := bufio.NewScanner(r)
	// A line may hold the largest payload, and its line end.
	sc.Buffer(in.buf, ops.MaxPayloadBytes+2)
	first := !in.read
	if first {
		in.lines = in.lines[:0]
	}
	line := 0
	for sc.Scan() {
		line++
		// A file of lines joined from files (cat a.ndjson b.ndjson) has
		// each file's byte order mark at the start of a line.
		data := jsonText(sc.Bytes())
		if line < in.fromLine || len(data) == 0 {
			continue
		}
		if first {
			in.lines = append(in.lines, line)
		}
		if err := yield(data, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		var ce copyError
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			return usageError{fmt.Errorf("line %d of %s is longer than %d bytes, the most a message may carry; store large data elsewhere and send a reference", line+1, in.from, ops.MaxPayloadBytes)}
		case errors.As(err, &ce):
			return ce
		}
		return fmt.Errorf("read %s: %w", in.from, err)
	}
	in.count = line
	if in.stream != nil {
		// Read to its end, and copied: read again from the copy.
		in.file, in.copy, in.stream = in.copy, nil, nil
	}
	in.read = true
	return nil
}

// reader is the input from its start: the file, or the stream, copied to
// a temporary file as it is read, the first time.
func (in *ndjsonInput) reader() (io.Reader, error) {
	if in.stream == nil {
		if _, err := in.file.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("read %s again from its start: %w", in.from, err)
		}
		return in.file, nil
	}
	if in.copy != nil {
		return nil, fmt.Errorf("%s was not read to its end the first time, so it cannot be read again: send it again", in.from)
	}
	f, err := os.CreateTemp("", "pgbus-send-*.ndjson")
	if err != nil {
		return nil, copyError{from: in.from, err: err}
	}
	// Removed now where the system lets an open file go, its space freed
	// once it is closed, even if this process is killed; else at Close.
	if os.Remove(f.Name()) != nil {
		in.copyName = f.Name()
	}
	in.copy = f
	return io.TeeReader(in.stream, copyWriter{in.from, f}), nil
}

// copyWriter writes the copy of a stream, its errors a copyError.
type copyWriter struct {
	from string
	f    *os.File
}

func (w copyWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = copyError{from: w.from, err: err}
	}
	return n, err
}

// copyError is a failure to copy stdin (or a pipe) to a temporary file,
// which send --ndjson reads again to send what it checked.
type copyError struct {
	from string
	err  error
}

func (e copyError) Error() string {
	return fmt.Sprintf("copy %s to a temporary file, to read it again once checked: %v; set TMPDIR to a directory with room for it, or name a file with --ndjson", e.from, e.err)
}

func (e copyError) Unwrap() error { return e.err }
