package khivefake

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect opens an MCP client session to an in-process fake over Pipe.
func connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	conn := Pipe(&Server{Backing: &Memory{}, Namespace: "ns"})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "khivefake-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call sends one tools/call of the request tool.
func call(cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request", Arguments: args})
}

// envelopeOf calls the request tool and returns the envelope (the text of content[0]) and
// isError.
func envelopeOf(t *testing.T, cs *mcp.ClientSession, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := call(cs, args)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env, res.IsError
}

func ops(o ...map[string]any) string { b, _ := json.Marshal(o); return string(b) }

// TestDocumentedShapes replays the wire shapes the adapter relies on: agent presentation
// shortens ids unless verbose is asked for, a batch with one failure is partial with
// isError false, all failing is isError true, and unparsable ops are a JSON-RPC error.
func TestDocumentedShapes(t *testing.T) {
	cs := connect(t)
	remember := map[string]any{"tool": "memory.remember", "args": map[string]any{"content": "x", "key": "k"}}
	get := map[string]any{"tool": "get", "args": map[string]any{"key": "k"}}

	env, _ := envelopeOf(t, cs, map[string]any{"ops": ops(remember)})
	id := env["results"].([]any)[0].(map[string]any)["result"].(map[string]any)["id"].(string)
	if len(id) != 8 {
		t.Fatalf("agent presentation kept the id %q whole", id)
	}
	env, _ = envelopeOf(t, cs, map[string]any{"ops": ops(get), "presentation": "verbose"})
	note := env["results"].([]any)[0].(map[string]any)["result"].(map[string]any)
	if len(note["id"].(string)) != 36 || note["deleted_at"] != nil {
		t.Fatalf("verbose note: %v", note)
	}
	if _, ok := note["deleted_at"]; !ok {
		t.Fatal("verbose presentation dropped a null field")
	}

	missing := map[string]any{"tool": "get", "args": map[string]any{"key": "nope"}}
	env, isErr := envelopeOf(t, cs, map[string]any{"ops": ops(get, missing), "presentation": "verbose"})
	if env["status"] != "partial" || isErr {
		t.Fatalf("one failure of two: status %v isError %v", env["status"], isErr)
	}
	failed := env["results"].([]any)[1].(map[string]any)
	if failed["ok"] != false || !strings.HasPrefix(failed["error"].(map[string]any)["message"].(string), "not found") {
		t.Fatalf("failed entry: %v", failed)
	}
	_, isErr = envelopeOf(t, cs, map[string]any{"ops": ops(missing), "presentation": "verbose"})
	if !isErr {
		t.Fatal("isError must be true when no op succeeded")
	}

	for _, args := range []map[string]any{
		{"ops": `memory.recall(query="x")`}, // the DSL form, which the fake does not speak
		{"presentation": "verbose"},         // no ops at all
		{"ops": 42},                         // ops of the wrong type
	} {
		res, err := call(cs, args)
		var we *jsonrpc.Error
		var data struct {
			Reason string `json:"reason"`
		}
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || json.Unmarshal(we.Data, &data) != nil || data.Reason != "parse-error" {
			t.Fatalf("arguments %v: (%v, %v), want invalid_params with reason parse-error", args, res, err)
		}
	}
	// The session survives a rejected request.
	if _, isErr := envelopeOf(t, cs, map[string]any{"ops": ops(get), "presentation": "verbose"}); isErr {
		t.Fatal("get after the rejected requests failed")
	}
}
