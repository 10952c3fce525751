package khivefake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName and Version are what the fake reports in MCP initialize's serverInfo. A harness
// recognises the fake by ServerName and only then uses its state file as a control channel.
const (
	ServerName = "khivefake"
	Version    = "0.1.0"
)

// ErrExit is returned by Run when the ExitOn knob fired: the child process exits at once.
var ErrExit = errors.New("khivefake: exit requested by the ExitOn knob")

// Server answers MCP over one stream, reading and writing State through a Backing.
type Server struct {
	// Backing holds the notes and knobs.
	Backing Backing
	// Namespace is the process namespace (kkernel --namespace): get by key and list read it.
	Namespace string
}

// Run serves MCP on t until the client goes away (nil), the ExitOn knob fires (ErrExit), or
// the backing fails. Requests are handled concurrently, so answers can come back out of
// order, as from a server that runs requests in parallel; a client must route them by id.
// On ErrExit the session is left as it is, unanswered: the caller ends it as the child's
// exit would (the process exits, Pipe closes its pipes).
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	fatal := make(chan error, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: Version}, nil)
	// The raw AddTool, not the typed one: the typed handler validates the arguments against
	// the schema first and answers a mismatch as a tool error (isError), where khive (rmcp)
	// answers argument errors as JSON-RPC invalid_params, data.reason "parse-error".
	srv.AddTool(&mcp.Tool{Name: "request", Description: "khive request DSL (fake)", InputSchema: requestSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := s.toolsCall(ctx, req.Params.Arguments)
			var we *jsonrpc.Error
			if err == nil || errors.As(err, &we) || ctx.Err() != nil {
				return res, err
			}
			select {
			case fatal <- err:
			default:
			}
			// Never answered: the server is going away. The read side's end cancels ctx.
			<-ctx.Done()
			return nil, ctx.Err()
		})
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("khivefake: connect: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("khivefake: session: %w", err)
		}
		return nil
	case err := <-fatal:
		return err
	}
}

// requestSchema mirrors RequestParams (khive-mcp/src/tools/request.rs).
var requestSchema = map[string]any{
	"type":     "object",
	"required": []string{"ops"},
	"properties": map[string]any{
		"ops":                 map[string]any{"type": "string"},
		"presentation":        map[string]any{"type": "string", "enum": []string{"agent", "verbose", "human"}},
		"presentation_per_op": map[string]any{"type": "array"},
		"format":              map[string]any{"type": "string", "enum": []string{"json", "auto", "table"}},
		"format_per_op":       map[string]any{"type": "array"},
		"save_to":             map[string]any{"type": "string"},
		"request_id":          map[string]any{"type": "integer"},
	},
}

// requestArgs are the request tool's arguments the fake reads.
type requestArgs struct {
	Ops          *string `json:"ops"`
	Presentation string  `json:"presentation"`
	Format       string  `json:"format"`
}

// parseError is khive's answer to a request whose arguments or ops do not parse
// (ADR-016: parse errors are JSON-RPC invalid_params, before anything is dispatched).
func parseError(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg, Data: json.RawMessage(`{"reason":"parse-error"}`)}
}

type opIn struct {
	Tool string                     `json:"tool"`
	Args map[string]json.RawMessage `json:"args"`
}

// opErr is a failed op's error object (khive-mcp/src/server.rs failure_entry).
type opErr struct {
	Kind    string         `json:"kind"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	reason  string
}

func (e *opErr) Error() string { return e.Message }

func (s *Server) toolsCall(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a requestArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, parseError("invalid params: " + err.Error())
	}
	if a.Ops == nil {
		return nil, parseError("invalid params: missing ops")
	}
	var ops []opIn
	dec := json.NewDecoder(strings.NewReader(*a.Ops))
	dec.UseNumber()
	// The fake speaks only the JSON form; a DSL string is a parse error here, as malformed
	// DSL is for khive.
	if err := dec.Decode(&ops); err != nil {
		return nil, parseError("invalid params: ops: " + err.Error())
	}
	if len(ops) == 0 || len(ops) > 100 {
		return nil, parseError("invalid params: 1 to 100 ops")
	}
	var knobs Knobs
	if err := s.Backing.Update(func(st *State) error { st.Requests++; knobs = st.Knobs; return nil }); err != nil {
		return nil, err
	}
	for _, o := range ops {
		if knobs.ExitOn != "" && o.Tool == knobs.ExitOn {
			return nil, ErrExit
		}
		if knobs.HangOn != "" && o.Tool == knobs.HangOn {
			if knobs.HangMarker != "" {
				_ = os.WriteFile(knobs.HangMarker, []byte("hanging\n"), 0o600)
			}
			<-ctx.Done() // until the process is killed, or the client goes away
			return nil, ctx.Err()
		}
	}
	verbose := a.Presentation == "verbose"
	results := make([]any, 0, len(ops))
	succeeded := 0
	for _, o := range ops {
		res, err := s.dispatch(o)
		if err != nil {
			var oe *opErr
			if !errors.As(err, &oe) {
				return nil, err
			}
			entry := map[string]any{
				"ok": false, "tool": o.Tool, "domain_disposition": "not_committed",
				"error": map[string]any{"kind": oe.Kind, "message": oe.Message, "domain_disposition": "not_committed"},
			}
			if oe.Details != nil {
				entry["error"].(map[string]any)["details"] = oe.Details
			}
			if oe.reason != "" {
				entry["reason"] = oe.reason
			}
			results = append(results, entry)
			continue
		}
		succeeded++
		if !verbose {
			res = agentPresentation(res, "")
		}
		results = append(results, map[string]any{"ok": true, "tool": o.Tool, "result": res})
	}
	status := "ok"
	if succeeded < len(ops) {
		status = "partial"
	}
	env, _ := json.Marshal(map[string]any{
		"results": results,
		"summary": map[string]any{"total": len(ops), "succeeded": succeeded, "failed": len(ops) - succeeded, "aborted": 0},
		"status":  status,
	})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(env)}}, IsError: succeeded == 0}, nil
}

func (s *Server) dispatch(o opIn) (any, error) {
	switch o.Tool {
	case "memory.remember":
		return s.remember(o.Args)
	case "get":
		return s.get(o.Args)
	case "list":
		return s.list(o.Args)
	case "memory.recall":
		return s.recall(o.Args)
	default:
		return nil, &opErr{Kind: "verb_refused", Message: "unknown verb: " + o.Tool, reason: "verb_refused"}
	}
}

// args decodes an op's arguments strictly: khive's param structs use deny_unknown_fields.
func args(raw map[string]json.RawMessage, allowed []string, out any) error {
	for k := range raw {
		if !slices.Contains(allowed, k) {
			return &opErr{Kind: "invalid_input", Message: fmt.Sprintf("invalid input: unknown field `%s`", k)}
		}
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, out); err != nil {
		return &opErr{Kind: "invalid_input", Message: "invalid input: " + err.Error()}
	}
	return nil
}

func notFound(id string) error {
	return &opErr{Kind: "not_found", Message: "not found: " + id}
}

func (s *Server) remember(raw map[string]json.RawMessage) (any, error) {
	var a struct {
		Content    string   `json:"content"`
		MemoryType string   `json:"memory_type"`
		Tags       []string `json:"tags"`
		Namespace  string   `json:"namespace"`
		Key        string   `json:"key"`
	}
	if err := args(raw, []string{"content", "memory_type", "salience", "decay_factor", "decay", "source_id", "tags", "embedding_model", "namespace", "key", "idempotency_key"}, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Content) == "" {
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: content must not be empty"}
	}
	if a.MemoryType == "" {
		a.MemoryType = "episodic"
	}
	if a.MemoryType != "episodic" && a.MemoryType != "semantic" {
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: unknown memory_type " + a.MemoryType}
	}
	ns := a.Namespace
	if ns == "" {
		ns = s.Namespace
	}
	var out map[string]any
	err := s.Backing.Update(func(st *State) error {
		if slices.Contains(st.Knobs.RejectKeys, a.Key) && a.Key != "" {
			return &opErr{Kind: "invalid_input", Message: "invalid input: write refused by the fake's RejectKeys knob"}
		}
		identityless := st.Knobs.IdentitylessNext
		st.Knobs.IdentitylessNext = false
		if a.Key != "" {
			for _, n := range st.Notes {
				if n.Namespace == ns && n.Kind == "memory" && n.Key == a.Key {
					if n.Content != a.Content {
						return &opErr{Kind: "conflict", Message: "idempotency_key_conflict: key already holds other content",
							Details: map[string]any{"reason": "idempotency_key_conflict", "key": a.Key, "existing_id": n.ID}}
					}
					out = rememberResult(n, a.MemoryType)
					out["replayed"] = true
					return nil
				}
			}
		}
		st.ClockUS = max(st.ClockUS+1, time.Now().UnixMicro())
		props := map[string]any{"memory_type": a.MemoryType}
		if len(a.Tags) > 0 {
			props["tags"] = a.Tags
		}
		n := Note{ID: uuid.NewString(), Namespace: ns, Kind: "memory", Content: a.Content, Key: a.Key,
			Properties: props, CreatedAtUS: st.ClockUS, Indexed: !st.Knobs.Eventual}
		st.Notes = append(st.Notes, n)
		out = rememberResult(n, a.MemoryType)
		if identityless {
			delete(out, "id")
		}
		return nil
	})
	return out, err
}

// rememberResult is memory.remember's answer (remember.rs): no tags, no namespace.
func rememberResult(n Note, memoryType string) map[string]any {
	return map[string]any{
		"id": n.ID, "kind": "memory", "salience": 0.5, "decay_factor": 0.005,
		"memory_type": memoryType, "created_at": iso(n.CreatedAtUS),
		"visibility_token": nil, "visibility_token_reason": "visibility_key_unavailable",
	}
}

func (s *Server) get(raw map[string]json.RawMessage) (any, error) {
	var a struct {
		ID       string `json:"id"`
		Key      string `json:"key"`
		Kind     string `json:"kind"`
		NoteKind string `json:"note_kind"`
	}
	if err := args(raw, []string{"id", "key", "kind", "note_kind", "include_deleted", "parse_content"}, &a); err != nil {
		return nil, err
	}
	var st State
	if err := s.Backing.Update(func(s *State) error { st = *s; return nil }); err != nil {
		return nil, err
	}
	switch {
	case a.Key != "" && a.ID != "":
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: get requires exactly one of id or key"}
	case a.Key != "":
		// get.rs: key lookup reads notes of the process namespace; kind narrows it if given.
		kind := a.Kind
		if a.NoteKind != "" {
			kind = a.NoteKind
		}
		for _, n := range st.Notes {
			if n.Namespace == s.Namespace && n.Key == a.Key && (kind == "" || kind == n.Kind) {
				return noteJSON(n, st.Knobs.Malformed), nil
			}
		}
		return nil, notFound(a.Key)
	case a.ID != "":
		if a.Kind != "" || a.NoteKind != "" {
			return nil, &opErr{Kind: "invalid_input", Message: "invalid input: kind and note_kind require key lookup"}
		}
		for _, n := range st.Notes { // by-ID resolution is namespace-agnostic (get.rs)
			if n.ID == a.ID {
				return noteJSON(n, st.Knobs.Malformed), nil
			}
		}
		return nil, notFound(a.ID)
	default:
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: get requires exactly one of id or key"}
	}
}

// noteJSON is the flattened note kg get and list return (note.rs; timestamps as ISO).
func noteJSON(n Note, malformed bool) map[string]any {
	out := map[string]any{
		"id": n.ID, "namespace": n.Namespace, "kind": n.Kind, "status": "active", "name": nil,
		"content": n.Content, "salience": 0.5, "decay_factor": 0.005, "expires_at": nil,
		"properties": n.Properties, "created_at": iso(n.CreatedAtUS), "updated_at": iso(n.CreatedAtUS),
		"deleted_at": nil, "version": 1,
	}
	if n.Key != "" {
		out["key"] = n.Key
	} else {
		out["key"] = nil
	}
	if malformed {
		out["content"] = 42
	}
	return out
}

func (s *Server) list(raw map[string]json.RawMessage) (any, error) {
	var a struct {
		Kind     string   `json:"kind"`
		NoteKind string   `json:"note_kind"`
		Tags     []string `json:"tags"`
		TagMode  string   `json:"tag_mode"`
		Limit    *int     `json:"limit"`
		Offset   int      `json:"offset"`
	}
	if err := args(raw, []string{"kind", "note_kind", "tags", "tag_mode", "created_after", "updated_after", "limit", "offset", "after"}, &a); err != nil {
		return nil, err
	}
	if a.Kind != "note" {
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: the fake lists notes only"}
	}
	limit := 20
	if a.Limit != nil {
		limit = *a.Limit
	}
	clamped := limit > 200
	limit = min(max(limit, 1), 200)
	var st State
	if err := s.Backing.Update(func(s *State) error { st = *s; return nil }); err != nil {
		return nil, err
	}
	var match []Note
	for _, n := range st.Notes {
		if n.Namespace != s.Namespace || (a.NoteKind != "" && n.Kind != a.NoteKind) {
			continue
		}
		// list.rs / note_list.rs: tags match case-insensitively.
		if len(a.Tags) > 0 && !slices.ContainsFunc(a.Tags, func(w string) bool {
			return slices.ContainsFunc(noteTags(n), func(t string) bool { return strings.EqualFold(t, w) })
		}) {
			continue
		}
		match = append(match, n)
	}
	items := []any{}
	for i := a.Offset; i < len(match) && len(items) < limit; i++ {
		items = append(items, noteJSON(match[i], st.Knobs.Malformed))
	}
	return map[string]any{
		"items": items, "requested_limit": limit, "effective_limit": limit, "limit_clamped": clamped,
		"has_more": a.Offset+len(items) < len(match),
	}, nil
}

func noteTags(n Note) []string {
	switch t := n.Properties["tags"].(type) {
	case []string:
		return t
	case []any:
		out := make([]string, 0, len(t))
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

var word = regexp.MustCompile(`[\p{L}\p{N}]+`)

func (s *Server) recall(raw map[string]json.RawMessage) (any, error) {
	var a struct {
		Query       string   `json:"query"`
		Limit       *int     `json:"limit"`
		Tags        []string `json:"tags"`
		TagMode     string   `json:"tag_mode"`
		Namespace   string   `json:"namespace"`
		FullContent *bool    `json:"full_content"`
	}
	if err := args(raw, []string{"query", "limit", "top_k", "memory_type", "min_score", "score_floor", "min_salience", "tags", "tag_mode",
		"exclude_tags", "entity_names", "created_after", "created_before", "namespace", "profile_id", "fusion_strategy",
		"embedding_model", "full_content", "include_breakdown", "include_source_id", "config", "consistency", "visibility_token", "timeout_ms"}, &a); err != nil {
		return nil, err
	}
	q := strings.TrimSpace(a.Query)
	if q == "" {
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: query must not be empty"}
	}
	letters := 0
	for _, r := range q {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if letters < 2 {
		return nil, &opErr{Kind: "invalid_input", Message: "invalid input: query does not contain enough meaningful content"}
	}
	limit := 10
	if a.Limit != nil {
		limit = *a.Limit
	}
	ns := a.Namespace
	if ns == "" {
		ns = s.Namespace
	}
	var st State
	if err := s.Backing.Update(func(s *State) error { st = *s; return nil }); err != nil {
		return nil, err
	}
	terms := word.FindAllString(strings.ToLower(q), -1)
	type scored struct {
		n     Note
		score int
	}
	var hits []scored
	for _, n := range st.Notes {
		if n.Namespace != ns || n.Kind != "memory" || !n.Indexed {
			continue
		}
		// recall.rs: tags match case-sensitively and exactly, any by default.
		if len(a.Tags) > 0 {
			any := slices.ContainsFunc(a.Tags, func(w string) bool { return slices.Contains(noteTags(n), w) })
			all := !slices.ContainsFunc(a.Tags, func(w string) bool { return !slices.Contains(noteTags(n), w) })
			if (a.TagMode == "all" && !all) || (a.TagMode != "all" && !any) {
				continue
			}
		}
		text := strings.ToLower(n.Content)
		score := 0
		for _, t := range terms {
			if strings.Contains(text, t) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, scored{n, score})
		}
	}
	// rank_score descending, id ascending on ties (recall.rs).
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].n.ID < hits[j].n.ID
	})
	out := []any{}
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		sc := float64(h.score) / float64(len(terms))
		hit := map[string]any{
			"id": h.n.ID, "full_id": h.n.ID, "score": sc, "rank_score": sc, "raw_score": sc,
			"content": h.n.Content, "salience": 0.5, "decay_factor": 0.005,
			"memory_type": h.n.Properties["memory_type"], "created_at": iso(h.n.CreatedAtUS),
			"serve_attribution": "fake",
		}
		if st.Knobs.Malformed {
			hit["content"] = 42
		}
		out = append(out, hit)
	}
	if len(out) == 0 && st.Knobs.Eventual {
		// recall.rs: an empty answer while the ANN leg is degraded is an object.
		return map[string]any{"results": out, "degraded": true, "degraded_reason": "ann_unavailable"}, nil
	}
	return out, nil
}

// MakeVisible indexes every note, ending the Eventual lag.
func MakeVisible(b Backing) error {
	return b.Update(func(st *State) error {
		for i := range st.Notes {
			st.Notes[i].Indexed = true
		}
		return nil
	})
}

// iso is khive's micros_to_iso: RFC 3339, six fractional digits, Z (presentation.rs).
func iso(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// agentPresentation is khive's default "agent" presentation (presentation.rs): UUIDs in id
// and *_id fields cut to 8 characters, null, empty strings, arrays and objects dropped.
func agentPresentation(v any, key string) any {
	b, _ := json.Marshal(v)
	var g any
	_ = json.Unmarshal(b, &g)
	return agentValue(g, key)
}

func agentValue(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			e = agentValue(e, k)
			if empty(e) {
				continue
			}
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			out = append(out, agentValue(e, key))
		}
		return out
	case string:
		if (key == "id" || strings.HasSuffix(key, "_id")) && uuidRE.MatchString(t) {
			return t[:8]
		}
		return t
	default:
		return v
	}
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}
