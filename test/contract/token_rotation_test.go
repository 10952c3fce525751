package contract

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance/wire/wiretest"
	"github.com/agentmem/memory-adapter-operator/internal/server/tokentest"
)

// TestPythonExampleFollowsARotatedTokenFile rotates the Python example's token file the way
// the operator does (the current and the next token, then the next alone, each version
// renamed into place) and checks that the running server follows it. It looks at the file at
// most once a second, so each step is polled to a deadline.
func TestPythonExampleFollowsARotatedTokenFile(t *testing.T) {
	py := wiretest.StartPython(t, "")
	const next = "next-token"
	status := func(token string) int {
		t.Helper()
		return tokentest.Status(t, nil, py.URL, "Bearer "+token)
	}
	if cur, nxt := status(py.Token), status(next); cur != http.StatusOK || nxt != http.StatusUnauthorized {
		t.Fatalf("before the rotation: the current token %d, the next %d", cur, nxt)
	}
	tokentest.ReplaceFile(t, py.TokenFile, py.Token+"\n"+next+"\n")
	tokentest.Eventually(t, "the next token accepted", func() bool { return status(next) == http.StatusOK })
	if got := status(py.Token); got != http.StatusOK {
		t.Fatalf("the current token answered %d during the grace period", got)
	}
	tokentest.ReplaceFile(t, py.TokenFile, next+"\n")
	tokentest.Eventually(t, "the old token refused", func() bool { return status(py.Token) == http.StatusUnauthorized })
	if got := status(next); got != http.StatusOK {
		t.Fatalf("the next token answered %d after the rotation", got)
	}
}

// TestPythonExampleTokenFileUnits runs the example's own unit tests of its token file
// (examples/python-adapter/test_tokens.py: the parsing table and the reload on an injected
// clock, which the test above cannot show without waiting, a refused version keeping the
// set) and of its governance (test_governance.py: grants, sub-scopes, retention by store
// time, quotas and hostile harness bodies).
func TestPythonExampleTokenFileUnits(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), wiretest.Interpreter(t), "-m", "unittest", "-v", "test_tokens", "test_governance")
	cmd.Dir = filepath.Dir(wiretest.ServerPath())
	// No __pycache__ in the checkout.
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest test_tokens test_governance: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
