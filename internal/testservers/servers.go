package testservers

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Postgres returns a postgres:// URL: $MAO_TEST_POSTGRES_URL, else a server started by
// hack/postgres-server.sh and stopped when t ends.
func Postgres(t testing.TB) string {
	t.Helper()
	return start(t, "postgres-server.sh", "MAO_TEST_POSTGRES_URL")
}

// Redis returns a Redis host:port: $MAO_TEST_REDIS_ADDR, else a server started by
// hack/redis-server.sh and stopped when t ends.
func Redis(t testing.TB) string {
	t.Helper()
	return start(t, "redis-server.sh", "MAO_TEST_REDIS_ADDR")
}

// start runs `script start DIR` and returns the value of the VAR=value line it prints.
func start(t testing.TB, script, envVar string) string {
	t.Helper()
	if v := os.Getenv(envVar); v != "" {
		return v
	}
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "hack", script)
	// A directory directly under the temp dir: the script hands it to an unprivileged
	// server user, who cannot traverse t.TempDir's parents.
	dir, err := os.MkdirTemp("", "mao-testservers-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", path, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("%s stop: %v: %s", script, err, out)
		}
		_ = os.RemoveAll(dir)
	})
	var stderr bytes.Buffer
	cmd := exec.Command("bash", path, "start", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s start: %v: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), envVar+"="); ok {
			return v
		}
	}
	t.Fatalf("%s start printed no %s= line", script, envVar)
	return ""
}
