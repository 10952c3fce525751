package khive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Transport is one bidirectional byte stream to an MCP server: the server's stdout to read
// and its stdin to write. Close ends the stream and whatever serves it (the child process);
// it must make a blocked Read return.
type Transport interface {
	io.Reader
	io.Writer
	io.Closer
}

// Dialer starts an MCP server and returns the stream to it. The store calls it lazily, on
// the first explicit call and on the first call after the previous server died.
type Dialer func(ctx context.Context) (Transport, error)

// rpcError is a JSON-RPC error object. khive answers a request whose ops do not parse with
// one (invalid_params, data.reason "parse-error"; khive-mcp/docs/design.md) before dispatching
// anything, so it is never an availability problem.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	s := fmt.Sprintf("json-rpc error %d: %s", e.Code, truncate(e.Message, 200))
	if len(e.Data) > 0 {
		s += " (data " + truncate(string(e.Data), 200) + ")"
	}
	return s
}

// rpcResponse is one JSON-RPC response line. ID stays raw so a server that answers with an
// id of the wrong type is detected instead of decoded as zero.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// result is what a waiting call receives: the result, or the error that ended it.
type result struct {
	raw json.RawMessage
	err error
}

// client multiplexes JSON-RPC calls over one Transport: writes are serialized, one reader
// goroutine routes each response to its caller by id, so concurrent calls share the child.
type client struct {
	t           Transport
	maxResponse int

	wmu sync.Mutex // serializes whole request lines on the child's stdin

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan result
	dead    error         // set once, when the reader stops; later calls fail with it
	done    chan struct{} // closed when the reader stops
}

func newClient(t Transport, maxResponse int) *client {
	c := &client{t: t, maxResponse: maxResponse, pending: map[int64]chan result{}, done: make(chan struct{})}
	go c.readLoop()
	return c
}

// alive reports whether the reader still runs.
func (c *client) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// close ends the transport; the reader then fails every pending call as unavailable.
func (c *client) close() error {
	err := c.t.Close()
	<-c.done
	return err
}

// idPrefix finds the id of an oversized response in its first bytes: serde writes the
// fields in declaration order, "jsonrpc" then "id" (rmcp's JsonRpcResponse).
var idPrefix = regexp.MustCompile(`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(\d{1,18})`)

// readLoop reads one response per line until the stream ends. A line longer than
// maxResponse is never buffered whole: its head is kept to find the id, the rest discarded,
// and that one call fails with MemoryAdapterError.
func (c *client) readLoop() {
	br := bufio.NewReaderSize(c.t, 64<<10)
	var err error
	for {
		var line []byte
		var oversized bool
		line, oversized, err = readLine(br, c.maxResponse)
		if err != nil {
			break
		}
		if oversized {
			m := idPrefix.FindSubmatch(line)
			if m == nil {
				err = fmt.Errorf("a response line exceeded %d bytes and its id could not be read", c.maxResponse)
				break
			}
			id, _ := strconv.ParseInt(string(m[1]), 10, 64)
			c.deliver(id, result{err: memory.NewAdapterError(fmt.Sprintf("khive response larger than %d bytes", c.maxResponse), nil)})
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var resp rpcResponse
		if derr := json.Unmarshal(line, &resp); derr != nil {
			err = fmt.Errorf("undecodable line from the MCP server: %w", derr)
			break
		}
		if resp.Method != "" && len(resp.ID) == 0 {
			// A server notification (logging, progress): nothing waits for it.
			continue
		}
		if resp.Method != "" {
			// A server-to-client request (sampling, roots): the adapter offers no client
			// capabilities in initialize, so answer "method not found" and go on.
			c.replyMethodNotFound(resp.ID)
			continue
		}
		id, perr := strconv.ParseInt(string(resp.ID), 10, 64)
		if perr != nil {
			err = fmt.Errorf("response with a non-integer id %s", truncate(string(resp.ID), 40))
			break
		}
		if resp.Error != nil {
			c.deliver(id, result{err: resp.Error})
			continue
		}
		if len(resp.Result) == 0 {
			c.deliver(id, result{err: memory.NewAdapterError("JSON-RPC response without result or error", nil)})
			continue
		}
		c.deliver(id, result{raw: resp.Result})
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = errors.New("the khive MCP server closed its output (the child process ended)")
	}
	// Whatever ended the stream, the child is of no more use: a server that wrote garbage
	// may still be running, and must not outlive its connection.
	_ = c.t.Close()
	c.mu.Lock()
	c.dead = err
	for id, ch := range c.pending {
		ch <- result{err: memory.NewUnavailable("khive call lost", err)}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// readLine returns the next line without its newline. A line over limit bytes is returned
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

func (c *client) deliver(id int64, r result) {
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- r
	}
	// A response nobody waits for belongs to a call that timed out: it is dropped.
}

func (c *client) replyMethodNotFound(id json.RawMessage) {
	line, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32601, "message": "method not supported by the memory adapter"},
	})
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.t.Write(append(line, '\n'))
}

// call sends one request and waits for its response, the context's end, or the server's
// death. Transport failures and deadlines are MemoryAdapterUnavailable; a JSON-RPC error is
// returned as *rpcError for the caller to classify.
func (c *client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.dead != nil {
		err := c.dead
		c.mu.Unlock()
		return nil, memory.NewUnavailable("khive MCP server is not running", err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.forget(id)
		return nil, memory.NewAdapterError("encode request", err)
	}
	if err := c.write(line); err != nil {
		c.forget(id)
		return nil, memory.NewUnavailable("write to the khive MCP server", err)
	}
	select {
	case r := <-ch:
		return r.raw, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, memory.NewUnavailable(method+": no response from the khive MCP server in time", ctx.Err())
	}
}

// notify sends a JSON-RPC notification (no id, no response).
func (c *client) notify(method string, params any) error {
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return memory.NewAdapterError("encode notification", err)
	}
	if err := c.write(line); err != nil {
		return memory.NewUnavailable("write to the khive MCP server", err)
	}
	return nil
}

func (c *client) write(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.t.Write(append(line, '\n'))
	return err
}

func (c *client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
