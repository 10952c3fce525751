package khive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// op is one entry of the request tool's JSON-form batch (ADR-016-request-dsl.md): the form
// needs no DSL string escaping, which makes it the safe one for arbitrary content.
type op struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// envelope is the request tool's answer (khive-mcp/src/server.rs): one result per op.
type envelope struct {
	Results []opResult `json:"results"`
	Status  string     `json:"status"`
}

// opResult is one op's outcome: ok with a result, or ok:false with an error.
type opResult struct {
	OK                *bool           `json:"ok"`
	Tool              string          `json:"tool"`
	Result            json.RawMessage `json:"result"`
	Error             *opError        `json:"error"`
	Reason            string          `json:"reason"`
	DomainDisposition string          `json:"domain_disposition"`
	Aborted           bool            `json:"aborted"`
}

// opError is the error object of a failed op (server.rs failure_entry and
// error_with_disposition; a plain string error becomes {kind:"runtime_error", message}).
type opError struct {
	Kind              string          `json:"kind"`
	Message           string          `json:"message"`
	DomainDisposition string          `json:"domain_disposition"`
	Details           json.RawMessage `json:"details"`
	Retryable         *bool           `json:"retryable"`
}

// opFailure is an ok:false op, classified.
type opFailure struct {
	tool   string
	reason string
	err    opError
}

func (f *opFailure) Error() string {
	s := fmt.Sprintf("khive %s failed: %s: %s", f.tool, f.err.Kind, truncate(f.err.Message, 300))
	if f.reason != "" {
		s += " (reason " + f.reason + ")"
	}
	if f.err.DomainDisposition != "" {
		s += " (disposition " + f.err.DomainDisposition + ")"
	}
	return s
}

// notFound reports khive's RuntimeError::NotFound, whose wire message is "not found: <id>"
// (khive-runtime/src/error.rs). The error.kind vocabulary was not enumerated from source, so
// both the kind and the message prefix are accepted.
func (f *opFailure) notFound() bool {
	k := strings.ToLower(f.err.Kind)
	return k == "not_found" || k == "notfound" || strings.HasPrefix(strings.ToLower(f.err.Message), "not found")
}

// unavailable reports a failure khive itself marks as an availability problem: its
// Unavailable error (freshness_unmet, retryable) or a recall deadline.
func (f *opFailure) unavailable() bool {
	k := strings.ToLower(f.err.Kind)
	if k == "unavailable" || k == "deadline_exceeded" || k == "deadlineexceeded" || k == "timeout" {
		return true
	}
	return f.err.Retryable != nil && *f.err.Retryable
}

// typed maps a failed op to the contract's error types.
func (f *opFailure) typed() error {
	if f.unavailable() {
		return memory.NewUnavailable("", f)
	}
	return memory.NewAdapterError("", f)
}

// request sends one op through the request tool, always asking for the verbose
// presentation: the default ("agent") shortens ids to 8 characters, rounds scores and drops
// empty fields (khive-runtime/src/presentation.rs). It returns the op's result, or an
// *opFailure for ok:false, or a typed error for everything else.
func (s *Store) request(ctx context.Context, o op) (json.RawMessage, error) {
	c, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	ops, err := json.Marshal([]op{o})
	if err != nil {
		return nil, memory.NewAdapterError("encode ops", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	res, lost, err := c.callTool(ctx, &mcp.CallToolParams{
		Name: "request",
		Arguments: map[string]any{
			"ops":          string(ops),
			"presentation": "verbose",
			"format":       "json",
		},
	})
	if lost {
		s.drop(c)
	}
	if err != nil {
		return nil, err
	}
	return decodeEnvelope(res, o.Tool)
}

// decodeEnvelope unwraps the tools/call result (the envelope is the text of content[0];
// khive-mcp/src/server/request_result_error_tests.rs) and the envelope of exactly one op.
func decodeEnvelope(tr *mcp.CallToolResult, tool string) (json.RawMessage, error) {
	if tr == nil || len(tr.Content) == 0 {
		return nil, memory.NewAdapterError("tools/call result without a text content block", nil)
	}
	text, ok := tr.Content[0].(*mcp.TextContent)
	if !ok || text == nil {
		return nil, memory.NewAdapterError("tools/call result without a text content block", nil)
	}
	var env envelope
	dec := json.NewDecoder(strings.NewReader(text.Text))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil {
		if tr.IsError {
			return nil, memory.NewAdapterError("khive reported an error: "+truncate(text.Text, 300), nil)
		}
		return nil, memory.NewAdapterError("malformed request envelope", err)
	}
	if len(env.Results) != 1 {
		return nil, memory.NewAdapterError(fmt.Sprintf("request envelope holds %d results for one op", len(env.Results)), nil)
	}
	r := env.Results[0]
	if r.OK == nil {
		return nil, memory.NewAdapterError("request envelope result without \"ok\"", nil)
	}
	if !*r.OK {
		f := &opFailure{tool: tool, reason: r.Reason}
		if r.Error != nil {
			f.err = *r.Error
		} else {
			f.err = opError{Kind: "unknown", Message: "ok:false without an error object"}
		}
		if r.Aborted {
			f.err.Kind = "aborted"
		}
		return nil, f
	}
	if tr.IsError {
		// isError is true only when no op succeeded (request_result_error_tests.rs); an ok
		// result under it is a contradiction, not a success.
		return nil, memory.NewAdapterError("khive marked the call failed but its only op ok", nil)
	}
	if len(bytes.TrimSpace(r.Result)) == 0 {
		return nil, memory.NewAdapterError("ok op without a result", nil)
	}
	return r.Result, nil
}

// envelopeMarker is the key that marks note content written by this adapter.
const envelopeMarker = "memory_adapter"

// contentEnvelope is the note content the adapter writes: khive content is a string
// (khive-storage/src/note.rs), and recall hits carry no key, so the item's id and its JSON
// content travel together in the text (docs/adapters/khive.md, L3 content_envelope).
type contentEnvelope struct {
	Marker  *int            `json:"memory_adapter"`
	ID      *string         `json:"id"`
	Content json.RawMessage `json:"content"`
}

// encodeContent returns the note content for an item: compact JSON whose number literals
// are kept verbatim (json.Compact never reformats numbers).
func encodeContent(id string, content json.RawMessage) (string, error) {
	var b bytes.Buffer
	b.WriteString(`{"` + envelopeMarker + `":1,"id":"` + id + `","content":`)
	if err := json.Compact(&b, content); err != nil {
		return "", err
	}
	b.WriteByte('}')
	return b.String(), nil
}

// errForeign marks note content this adapter did not write.
var errForeign = errors.New("not written by the memory adapter")

// decodeContent parses note content. Content without the marker is errForeign; content
// with the marker but not the envelope's shape is malformed.
func decodeContent(text string) (id string, content json.RawMessage, err error) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") || !strings.Contains(t, `"`+envelopeMarker+`"`) {
		return "", nil, errForeign
	}
	var env contentEnvelope
	dec := json.NewDecoder(strings.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return "", nil, fmt.Errorf("content envelope: %w", err)
	}
	if dec.More() {
		return "", nil, errors.New("content envelope: trailing data")
	}
	if env.Marker == nil || *env.Marker != 1 {
		return "", nil, errors.New("content envelope: unknown version")
	}
	if env.ID == nil || len(env.Content) == 0 {
		return "", nil, errors.New("content envelope: missing id or content")
	}
	return *env.ID, env.Content, nil
}
