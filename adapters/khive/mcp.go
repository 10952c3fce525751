package khive

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Transport is one bidirectional byte stream to an MCP server: the server's stdout to read
// and its stdin to write. Close ends the stream and whatever serves it (the child process);
// it must make a blocked Read return, and it may be called more than once.
type Transport interface {
	io.Reader
	io.Writer
	io.Closer
}

// Dialer starts an MCP server and returns the stream to it. The store calls it lazily, on
// the first explicit call and on the first call after the previous server died.
type Dialer func(ctx context.Context) (Transport, error)

// mcpProtocolVersion is the MCP revision the adapter asks for in initialize. Pinning it keeps
// the SDK from opening with the newer server/discover exchange, which kkernel's rmcp does
// not know; rmcp negotiates initialize down if it is older.
const mcpProtocolVersion = "2025-06-18"

// codeResponseTooLarge is the JSON-RPC error code of the answer the adapter puts in place of
// a response over MaxResponseBytes. It is in the implementation-defined server range; were
// khive to use it too, only the error's wording would differ, both being MemoryAdapterError.
const codeResponseTooLarge = -32099

// session is one MCP client session over one server (child process).
type session struct {
	t    Transport
	cs   *mcp.ClientSession
	info serverInfo
	done chan struct{} // closed when the session ended, however it ended
}

// dial starts the server and runs the MCP handshake (initialize, notifications/initialized,
// tools/list). Any failure is MemoryAdapterUnavailable: the service cannot be used.
func dial(ctx context.Context, d Dialer, maxResponse int) (*session, error) {
	t, err := d(ctx)
	if err != nil {
		return nil, memory.NewUnavailable("start the khive MCP server", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "memory-adapter-operator", Version: "khive-adapter"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{
		Reader: &lineBound{t: t, br: bufio.NewReaderSize(t, 64<<10), limit: maxResponse},
		Writer: t,
		// lineBound already cut every line to maxResponse; the SDK's own frame cap is the
		// backstop for a value spread over many lines.
		MaxLineLength: maxResponse + 1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: mcpProtocolVersion})
	if err != nil {
		// Connect closed the session, not necessarily the child: a server that answered
		// garbage may still run and must not outlive its connection.
		_ = t.Close()
		return nil, memory.NewUnavailable("MCP initialize", err)
	}
	s := &session{t: t, cs: cs, done: make(chan struct{})}
	go func() {
		_ = cs.Wait()
		close(s.done)
	}()
	if s.info, err = handshake(ctx, cs); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// handshake checks that the server offers the request tool the adapter speaks and records
// what the manifest was verified against.
func handshake(ctx context.Context, cs *mcp.ClientSession) (serverInfo, error) {
	init := cs.InitializeResult()
	if init == nil || init.ProtocolVersion == "" {
		return serverInfo{}, memory.NewUnavailable("MCP initialize: malformed result", nil)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return serverInfo{}, memory.NewUnavailable("MCP tools/list", err)
	}
	i := slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "request" })
	if i < 0 {
		// A server without khive's request tool cannot hold the manifest: the adapter is
		// unavailable, not misconfigured per call.
		return serverInfo{}, memory.NewUnavailable("the MCP server has no \"request\" tool; it is not khive's kkernel", nil)
	}
	schema, err := json.Marshal(tools.Tools[i].InputSchema)
	if err != nil {
		return serverInfo{}, memory.NewUnavailable("MCP tools/list: the request tool's input schema", err)
	}
	sum := sha256.Sum256(schema)
	info := serverInfo{Protocol: init.ProtocolVersion, RequestHash: "sha256:" + hex.EncodeToString(sum[:])}
	if init.ServerInfo != nil {
		info.Name, info.Version = init.ServerInfo.Name, init.ServerInfo.Version
	}
	return info, nil
}

// alive reports whether the session still runs.
func (s *session) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// close ends the child first: the SDK's own Close waits for calls in flight, and a hung
// child would hold it until each caller's deadline. With the stream gone every pending call
// fails at once, as MemoryAdapterUnavailable.
func (s *session) close() error {
	err := s.t.Close()
	_ = s.cs.Close()
	<-s.done
	return err
}

// callTool runs one tools/call. A JSON-RPC error is MemoryAdapterError (the request never
// ran); a deadline or a lost server is MemoryAdapterUnavailable; a result that does not
// decode is MemoryAdapterError. lost reports that the session is of no more use.
func (s *session) callTool(ctx context.Context, params *mcp.CallToolParams) (res *mcp.CallToolResult, lost bool, err error) {
	res, err = s.cs.CallTool(ctx, params)
	if err == nil {
		return res, false, nil
	}
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && we.Code == codeResponseTooLarge:
		return nil, false, memory.NewAdapterError(we.Message, nil)
	case errors.As(err, &we):
		// khive answers ops that do not parse with invalid_params, data.reason
		// "parse-error" (khive-mcp/docs/design.md), before dispatching anything.
		return nil, false, memory.NewAdapterError("khive rejected the request", we)
	case ctx.Err() != nil:
		// The SDK retired the call; a late answer is dropped and the child goes on serving.
		return nil, false, memory.NewUnavailable(params.Name+": no response from the khive MCP server in time", err)
	case errors.Is(err, mcp.ErrConnectionClosed) || !s.alive() || !s.answers(ctx):
		return nil, true, memory.NewUnavailable("khive call lost", err)
	default:
		return nil, false, memory.NewAdapterError("malformed tools/call result", err)
	}
}

// answers tells a result that did not decode from a call the SDK failed because the stream
// broke: both arrive as a plain error. The SDK marks a broken connection before it fails the
// calls on it, so a ping sent after the failure is refused if, and only if, the stream is
// gone. Any answer, even a JSON-RPC error, means the server still reads its input.
func (s *session) answers(ctx context.Context) bool {
	err := s.cs.Ping(ctx, nil)
	var we *jsonrpc.Error
	return err == nil || errors.As(err, &we)
}

// idPrefix finds the id of an oversized response in its first bytes: serde writes the
// fields in declaration order, "jsonrpc" then "id" (rmcp's JsonRpcResponse).
var idPrefix = regexp.MustCompile(`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(\d{1,18})`)

// lineBound is the read side of the stream as the SDK sees it: line by line, no line longer
// than limit ever buffered whole. The SDK would end the whole session on an oversized
// frame; khive answers are one line each, so an oversized line whose id can be read becomes
// a JSON-RPC error for that one call (MemoryAdapterError) and the session goes on.
type lineBound struct {
	t       Transport
	br      *bufio.Reader
	limit   int
	pending []byte
}

func (l *lineBound) Read(p []byte) (int, error) {
	if len(l.pending) == 0 {
		line, oversized, err := readLine(l.br, l.limit)
		if err != nil {
			return 0, err
		}
		if oversized {
			m := idPrefix.FindSubmatch(line)
			if m == nil {
				return 0, fmt.Errorf("a response line exceeded %d bytes and its id could not be read", l.limit)
			}
			line, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m[1]), "error": map[string]any{
				"code": codeResponseTooLarge, "message": fmt.Sprintf("khive response larger than %d bytes", l.limit),
			}})
		}
		l.pending = append(line, '\n')
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// Close ends the stream (the SDK closes its reader when the session ends).
func (l *lineBound) Close() error { return l.t.Close() }

// readLine returns the next line with its newline cut. A line over limit bytes is returned
// truncated to its first 256 bytes with oversized set; the rest is consumed and dropped.
func readLine(br *bufio.Reader, limit int) ([]byte, bool, error) {
	var buf []byte
	oversized := false
	for {
		frag, err := br.ReadSlice('\n')
		if !oversized {
			if len(buf)+len(frag) > limit {
				oversized = true
				buf = append(buf, frag[:min(len(frag), max(0, 256-len(buf)))]...)
			} else {
				buf = append(buf, frag...)
			}
		}
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), oversized, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, false, err
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
