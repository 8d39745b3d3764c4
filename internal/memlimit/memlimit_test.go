package memlimit_test

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/pgbus/pgbus/internal/memlimit"
)

// tree writes files under a new root: path → content.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The limit is read from the files the kernel writes, as a container sees
// them on cgroup v2, v1 and both at once; the lowest of the cgroup and
// those above it counts, and what means no limit, or cannot be read, is
// none.
func TestLimitOfEachCgroupLayout(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	cases := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 in a container, at its mount's root", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 256 * mib},
		{"v2 with the host's path: the pod's limit above the container's none", map[string]string{
			"proc/self/cgroup":                                    "0::/kubepods/burstable/pod1/c1\n",
			"sys/fs/cgroup/memory.max":                            "max\n",
			"sys/fs/cgroup/kubepods/burstable/pod1/memory.max":    "536870912\n",
			"sys/fs/cgroup/kubepods/burstable/pod1/c1/memory.max": "max\n",
		}, 512 * mib},
		{"v2 with a lower limit below a higher one", map[string]string{
			"proc/self/cgroup":             "0::/a/b\n",
			"sys/fs/cgroup/a/memory.max":   "1073741824\n",
			"sys/fs/cgroup/a/b/memory.max": "134217728\n",
		}, 128 * mib},
		{"v2 with no limit anywhere", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0},
		{"v1, its none the largest page multiple", map[string]string{
			"proc/self/cgroup":                                      "12:pids:/\n4:memory:/docker/abc\n1:cpu,cpuacct:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n",
		}, 1024 * mib},
		{"v1 with the host's path not mounted in the container: the mount's root holds it", map[string]string{
			"proc/self/cgroup":                           "4:memory,hugetlb:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "209715200\n",
		}, 200 * mib},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"hybrid: the lower of the two", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "209715200\n",
			"sys/fs/cgroup/memory.max":                   "104857600\n",
		}, 100 * mib},
		{"no cgroup file: not Linux, or no /proc", map[string]string{}, 0},
		{"a cgroup file with no memory controller", map[string]string{
			"proc/self/cgroup": "1:cpu:/\n",
		}, 0},
		{"garbage, negative, zero and overflowing values are none", map[string]string{
			"proc/self/cgroup":                 "garbage line\n0::/a/b/c/d\n",
			"sys/fs/cgroup/a/memory.max":       "12abc\n",
			"sys/fs/cgroup/a/b/memory.max":     "-5\n",
			"sys/fs/cgroup/a/b/c/memory.max":   "0\n",
			"sys/fs/cgroup/a/b/c/d/memory.max": "99999999999999999999999\n",
		}, 0},
		{"a path climbing out of the mount stays in it", map[string]string{
			"proc/self/cgroup":         "0::/../../etc\n",
			"sys/fs/cgroup/memory.max": "67108864\n",
			"etc/memory.max":           "1048576\n",
		}, 64 * mib},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := memlimit.Of(tree(t, c.files)); got != c.want {
				t.Errorf("limit = %d; want %d", got, c.want)
			}
		})
	}
}

// Apply leaves a GOMEMLIMIT the user set alone, and otherwise gives the
// runtime 90% of the limit found here, or none when there is none.
func TestApplyKeepsGOMEMLIMITAndSetsNinetyPercent(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	if got := memlimit.Apply(); got != 0 || debug.SetMemoryLimit(-1) != 1<<30 {
		t.Errorf("with GOMEMLIMIT set, Apply set %d and the runtime's limit is %d; want it left at 1 GiB", got, debug.SetMemoryLimit(-1))
	}
	os.Unsetenv("GOMEMLIMIT")
	debug.SetMemoryLimit(math.MaxInt64)
	limit := memlimit.Of("/")
	got := memlimit.Apply()
	switch {
	case limit == 0 && (got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64):
		t.Errorf("no container limit here, yet Apply set %d (runtime %d)", got, debug.SetMemoryLimit(-1))
	case limit > 0 && (got != int64(float64(limit)*0.9) || debug.SetMemoryLimit(-1) != got):
		t.Errorf("container limit %d: Apply set %d, runtime %d; want 90%%", limit, got, debug.SetMemoryLimit(-1))
	}
}
