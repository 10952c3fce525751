package khivefake

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// call sends one tools/call of the request tool and returns the JSON-RPC response.
func call(t *testing.T, conn io.ReadWriteCloser, r *bufio.Reader, args map[string]any) map[string]any {
	t.Helper()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "request", "arguments": args}})
	if _, err := conn.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	resp, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func envelopeOf(t *testing.T, resp map[string]any) (map[string]any, bool) {
	t.Helper()
	res := resp["result"].(map[string]any)
	var env map[string]any
	if err := json.Unmarshal([]byte(res["content"].([]any)[0].(map[string]any)["text"].(string)), &env); err != nil {
		t.Fatal(err)
	}
	return env, res["isError"].(bool)
}

func ops(o ...map[string]any) string { b, _ := json.Marshal(o); return string(b) }

// TestDocumentedShapes replays the wire shapes the adapter relies on: agent presentation
// shortens ids unless verbose is asked for, a batch with one failure is partial with
// isError false, all failing is isError true, and unparsable ops are a JSON-RPC error.
func TestDocumentedShapes(t *testing.T) {
	conn := Pipe(&Server{Backing: &Memory{}, Namespace: "ns"})
	defer func() { _ = conn.Close() }()
	r := bufio.NewReader(conn)
	remember := map[string]any{"tool": "memory.remember", "args": map[string]any{"content": "x", "key": "k"}}
	get := map[string]any{"tool": "get", "args": map[string]any{"key": "k"}}

	env, _ := envelopeOf(t, call(t, conn, r, map[string]any{"ops": ops(remember)}))
	id := env["results"].([]any)[0].(map[string]any)["result"].(map[string]any)["id"].(string)
	if len(id) != 8 {
		t.Fatalf("agent presentation kept the id %q whole", id)
	}
	env, _ = envelopeOf(t, call(t, conn, r, map[string]any{"ops": ops(get), "presentation": "verbose"}))
	note := env["results"].([]any)[0].(map[string]any)["result"].(map[string]any)
	if len(note["id"].(string)) != 36 || note["deleted_at"] != nil {
		t.Fatalf("verbose note: %v", note)
	}
	if _, ok := note["deleted_at"]; !ok {
		t.Fatal("verbose presentation dropped a null field")
	}

	missing := map[string]any{"tool": "get", "args": map[string]any{"key": "nope"}}
	env, isErr := envelopeOf(t, call(t, conn, r, map[string]any{"ops": ops(get, missing), "presentation": "verbose"}))
	if env["status"] != "partial" || isErr {
		t.Fatalf("one failure of two: status %v isError %v", env["status"], isErr)
	}
	failed := env["results"].([]any)[1].(map[string]any)
	if failed["ok"] != false || !strings.HasPrefix(failed["error"].(map[string]any)["message"].(string), "not found") {
		t.Fatalf("failed entry: %v", failed)
	}
	_, isErr = envelopeOf(t, call(t, conn, r, map[string]any{"ops": ops(missing), "presentation": "verbose"}))
	if !isErr {
		t.Fatal("isError must be true when no op succeeded")
	}

	resp := call(t, conn, r, map[string]any{"ops": `memory.recall(query="x")`})
	e, ok := resp["error"].(map[string]any)
	if !ok || e["code"].(float64) != -32602 || e["data"].(map[string]any)["reason"] != "parse-error" {
		t.Fatalf("DSL ops: %v, want invalid_params with reason parse-error", resp)
	}
}
