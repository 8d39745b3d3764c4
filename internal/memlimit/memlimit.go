// Package memlimit gives the Go runtime a soft memory limit below the
// memory limit of the container (the cgroup) the process runs in, when
// GOMEMLIMIT is not set. The pgbus binary collects garbage at GOGC=400,
// which lets the heap grow to five times what is live: with large
// payloads in flight that can pass a container's limit, and the kernel
// kills the process, its jobs' leases left to expire. With a limit the
// collector works harder as the heap nears it instead.
package memlimit

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// share is the part of the container's limit the runtime is given: the
// rest is for what the runtime does not count (the C library, the
// kernel's pages charged to the process) and for the collector's
// reaction time.
const share = 0.9

// Apply sets the runtime's soft memory limit to 90% of the container's,
// unless GOMEMLIMIT is set or no limit is found, and returns the limit
// it set (0: none).
func Apply() int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit := Of("/")
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * share)
	debug.SetMemoryLimit(soft)
	return soft
}

// Of returns the memory limit of the cgroup the process runs in, and of
// those above it, the lowest, read under root (the file system's root,
// "/"; another for tests): cgroup v2's memory.max, or v1's
// memory.limit_in_bytes. It returns 0 when there is none, or when it
// cannot be read.
func Of(root string) int64 {
	f, err := os.Open(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	defer f.Close()
	var lowest int64
	keep := func(n int64) {
		if n > 0 && (lowest == 0 || n < lowest) {
			lowest = n
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path; v2's is 0::path.
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			keep(walk(filepath.Join(root, "sys/fs/cgroup"), parts[2], "memory.max"))
		case hasController(parts[1], "memory"):
			keep(walk(filepath.Join(root, "sys/fs/cgroup/memory"), parts[2], "memory.limit_in_bytes"))
		}
	}
	return lowest
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// walk returns the lowest limit in file of the cgroup at group under
// mount and of each cgroup above it. In a container the cgroup's path
// is often its host's, not found under the container's own mount, whose
// root is the container's cgroup: its root's file then holds the limit.
func walk(mount, group, file string) int64 {
	var lowest int64
	for dir := path.Clean("/" + group); ; dir = path.Dir(dir) {
		if n := limitIn(filepath.Join(mount, dir, file)); n > 0 && (lowest == 0 || n < lowest) {
			lowest = n
		}
		if dir == "/" {
			return lowest
		}
	}
}

// noLimit is the least value of a cgroup v1 limit that means none: the
// kernel writes the largest multiple of the page size, about 2^63.
const noLimit = 1 << 62

// limitIn reads a limit from a cgroup file: bytes, or "max" (v2) or a
// value near 2^63 (v1) for none, which is 0.
func limitIn(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= noLimit {
		return 0
	}
	return n
}
