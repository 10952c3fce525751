package postgres

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testURL is the server every test uses: MAO_TEST_POSTGRES_URL when set, otherwise a
// throwaway server TestMain starts with hack/postgres-server.sh. Tests never skip: without a
// server the whole package fails.
var testURL string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if u := os.Getenv("MAO_TEST_POSTGRES_URL"); u != "" {
		testURL = u
		return m.Run()
	}
	srv, err := startServer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: cannot start a throwaway PostgreSQL server (set MAO_TEST_POSTGRES_URL to use an existing one): %v\n", err)
		return 1
	}
	defer srv.stop()
	testURL = srv.url
	return m.Run()
}

// server is a throwaway PostgreSQL server managed by hack/postgres-server.sh.
type server struct {
	dir string
	url string
}

// scriptPath finds the script relative to the package directory, which is go test's working
// directory, falling back to this file's compile-time location.
func scriptPath() string {
	rel := filepath.Join("..", "..", "hack", "postgres-server.sh")
	if _, err := os.Stat(rel); err == nil {
		return rel
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), rel)
}

func script(args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{scriptPath()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("postgres-server.sh %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func startServer() (*server, error) {
	// os.MkdirTemp makes a directory directly under the temp dir, which the script can hand
	// to the unprivileged server user (t.TempDir's parents are not traversable by it).
	dir, err := os.MkdirTemp("", "mao-pg-")
	if err != nil {
		return nil, err
	}
	out, err := script("start", dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "MAO_TEST_POSTGRES_URL="); ok {
			return &server{dir: dir, url: u}, nil
		}
	}
	_, _ = script("stop", dir)
	_ = os.RemoveAll(dir)
	return nil, errors.New("postgres-server.sh start printed no MAO_TEST_POSTGRES_URL line")
}

func (s *server) crash() error  { _, err := script("crash", s.dir); return err }
func (s *server) resume() error { _, err := script("resume", s.dir); return err }

func (s *server) stop() {
	if _, err := script("stop", s.dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	_ = os.RemoveAll(s.dir)
}
