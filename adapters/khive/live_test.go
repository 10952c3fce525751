package khive

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
)

// TestLiveKkernel runs the matrix against a real kkernel (embedding-free, no daemon). It is
// opt-in: it runs when MAO_TEST_KKERNEL names the binary or kkernel is on PATH.
func TestLiveKkernel(t *testing.T) {
	bin := os.Getenv("MAO_TEST_KKERNEL")
	if bin == "" {
		p, err := exec.LookPath("kkernel")
		if err != nil {
			t.Skip("live khive check skipped: set MAO_TEST_KKERNEL to a kkernel binary or put kkernel on PATH")
		}
		bin = p
	}
	h, err := NewHarness(context.Background(), HarnessOptions{Command: bin, Args: []string{"mcp", "--no-embed"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("NewHarness against %s: %v", bin, err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	r := conformance.Run(t, h)
	t.Logf("live kkernel %s: %s", r.ServiceVersion, r.Result)
}
