package author

import (
	"context"
	"os"
	"testing"

	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/wire"
)

// TestAdapterConformance runs the 17-case matrix, and the wire's own cases, against the
// adapter server named by the environment: ADAPTER_URL and ADAPTER_TOKEN for the data
// listener, HARNESS_URL and HARNESS_TOKEN for its harness listener (the disposable scope
// and the faults the suite injects). Every harness capability is required, so a server
// that stops offering one fails here instead of turning a case into a skip.
func TestAdapterConformance(t *testing.T) {
	env := map[string]string{}
	for _, k := range []string{"ADAPTER_URL", "ADAPTER_TOKEN", "HARNESS_URL", "HARNESS_TOKEN"} {
		if env[k] = os.Getenv(k); env[k] == "" {
			t.Fatalf("%s is not set: start your adapter server with its harness listener and export ADAPTER_URL, ADAPTER_TOKEN, HARNESS_URL and HARNESS_TOKEN", k)
		}
	}
	h, err := wire.New(t.Context(), wire.Options{
		TargetURL: env["ADAPTER_URL"], Token: env["ADAPTER_TOKEN"],
		HarnessURL: env["HARNESS_URL"], HarnessToken: env["HARNESS_TOKEN"],
	})
	if err != nil {
		t.Fatalf("wire harness: %v", err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	conformance.Run(t, h, conformance.Options{RequireFullClaim: true})
}
