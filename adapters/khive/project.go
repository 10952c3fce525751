package khive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// note is the part of a flattened khive note the adapter reads (kg get and list items;
// khive-storage/src/note.rs, khive-pack-kg/src/handlers/common.rs flatten_get_result).
type note struct {
	ID         string
	Kind       string
	Content    string
	Key        *string
	CreatedAt  time.Time
	memoryType *string
	tagList    []string
}

// noteWire keeps every field the adapter checks raw, so a wrong type is detected rather than
// decoded as a zero value.
type noteWire struct {
	ID         json.RawMessage `json:"id"`
	Kind       json.RawMessage `json:"kind"`
	Content    json.RawMessage `json:"content"`
	Key        json.RawMessage `json:"key"`
	CreatedAt  json.RawMessage `json:"created_at"`
	Properties json.RawMessage `json:"properties"`
}

func decodeNote(raw json.RawMessage) (note, error) {
	var w noteWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return note{}, err
	}
	var n note
	if err := str(w.ID, "id", &n.ID); err != nil {
		return note{}, err
	}
	if err := str(w.Kind, "kind", &n.Kind); err != nil {
		return note{}, err
	}
	if n.Kind != memoryKind {
		// Another kind: nothing else is read, so its shape is not the adapter's business.
		return n, nil
	}
	if err := str(w.Content, "content", &n.Content); err != nil {
		return note{}, err
	}
	if len(w.Key) > 0 && !bytes.Equal(bytes.TrimSpace(w.Key), []byte("null")) {
		var k string
		if err := str(w.Key, "key", &k); err != nil {
			return note{}, err
		}
		n.Key = &k
	}
	var err error
	if n.CreatedAt, err = timestamp(w.CreatedAt); err != nil {
		return note{}, err
	}
	if len(w.Properties) > 0 && !bytes.Equal(bytes.TrimSpace(w.Properties), []byte("null")) {
		var p struct {
			MemoryType json.RawMessage `json:"memory_type"`
			Tags       json.RawMessage `json:"tags"`
		}
		if err := json.Unmarshal(w.Properties, &p); err != nil {
			return note{}, fmt.Errorf("properties: %w", err)
		}
		if len(p.MemoryType) > 0 {
			var mt string
			if err := str(p.MemoryType, "properties.memory_type", &mt); err != nil {
				return note{}, err
			}
			n.memoryType = &mt
		}
		if len(p.Tags) > 0 {
			if n.tagList, err = stringArray(p.Tags); err != nil {
				return note{}, fmt.Errorf("properties.tags: %w", err)
			}
		}
	}
	return n, nil
}

// isMemory is ADR-0091's type guard: a note of kind "memory" with a memory_type.
func (n note) isMemory() bool { return n.Kind == memoryKind && n.memoryType != nil }

func (n note) tags() []string {
	if n.tagList == nil {
		return []string{}
	}
	return n.tagList
}

// item projects a memory note. withTags is false for search hits, which never carry tags.
func (n note) item(withTags bool) (memory.Item, error) {
	it, err := project(n.Content, n.CreatedAt)
	if err != nil {
		return memory.Item{}, err
	}
	if withTags {
		it.Tags = slices.Clone(n.tags())
	}
	return it, nil
}

// project builds an item from adapter-written content; created_at is khive's own.
func project(text string, createdAt time.Time) (memory.Item, error) {
	idText, content, err := decodeContent(text)
	if err != nil {
		return memory.Item{}, err
	}
	id, err := memory.ParseID(idText)
	if err != nil {
		return memory.Item{}, fmt.Errorf("content envelope id: %w", err)
	}
	if !json.Valid(content) {
		return memory.Item{}, errors.New("content envelope: content is not JSON")
	}
	return memory.Item{
		ID: id, CreatedAt: memory.Timestamp(createdAt), Metadata: map[string]json.RawMessage{},
		Content: bytes.Clone(content), Tags: []string{},
	}, nil
}

// recallHit is the part of a memory.recall hit the adapter reads (khive-pack-memory
// recall.rs): no tags, namespace, properties or key appear in a hit.
type recallHit struct {
	Content   string
	CreatedAt time.Time
	Truncated bool
}

func (h recallHit) item() (memory.Item, error) { return project(h.Content, h.CreatedAt) }

// decodeRecall accepts the bare array and the {results: […], degraded|truncated…} object
// forms of a recall answer (recall.rs; L10 envelope_polymorphism).
func decodeRecall(raw json.RawMessage) ([]recallHit, error) {
	t := bytes.TrimSpace(raw)
	var items []json.RawMessage
	switch {
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(t, &items); err != nil {
			return nil, err
		}
	case len(t) > 0 && t[0] == '{':
		var obj struct {
			Results *[]json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal(t, &obj); err != nil {
			return nil, err
		}
		if obj.Results == nil {
			return nil, errors.New("recall object without results")
		}
		items = *obj.Results
	default:
		return nil, errors.New("recall result is neither an array nor an object")
	}
	out := make([]recallHit, 0, len(items))
	for i, raw := range items {
		var w struct {
			ID        json.RawMessage `json:"id"`
			Content   json.RawMessage `json:"content"`
			CreatedAt json.RawMessage `json:"created_at"`
			Truncated json.RawMessage `json:"truncated"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("hit %d: %w", i, err)
		}
		var h recallHit
		var id string
		if err := str(w.ID, "id", &id); err != nil {
			return nil, fmt.Errorf("hit %d: %w", i, err)
		}
		if err := str(w.Content, "content", &h.Content); err != nil {
			return nil, fmt.Errorf("hit %d: %w", i, err)
		}
		var err error
		if h.CreatedAt, err = timestamp(w.CreatedAt); err != nil {
			return nil, fmt.Errorf("hit %d: %w", i, err)
		}
		h.Truncated = bytes.Equal(bytes.TrimSpace(w.Truncated), []byte("true"))
		out = append(out, h)
	}
	return out, nil
}

// listPage is kg list's offset-mode answer (khive-pack-kg/src/handlers/list.rs).
type listPage struct {
	Items   []note
	HasMore bool
}

func decodeList(raw json.RawMessage) (listPage, error) {
	var w struct {
		Items   *[]json.RawMessage `json:"items"`
		HasMore *bool              `json:"has_more"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return listPage{}, err
	}
	if w.Items == nil || w.HasMore == nil {
		return listPage{}, errors.New("list result without items or has_more")
	}
	p := listPage{HasMore: *w.HasMore}
	for i, raw := range *w.Items {
		n, err := decodeNote(raw)
		if err != nil {
			return listPage{}, fmt.Errorf("item %d: %w", i, err)
		}
		p.Items = append(p.Items, n)
	}
	return p, nil
}

func str(raw json.RawMessage, name string, out *string) error {
	if len(raw) == 0 {
		return fmt.Errorf("missing %s", name)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: not a string", name)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("%s: null", name)
	}
	return nil
}

func stringArray(raw json.RawMessage) ([]string, error) {
	var ptrs []*string
	if err := json.Unmarshal(raw, &ptrs); err != nil {
		return nil, errors.New("not an array of strings")
	}
	out := make([]string, len(ptrs))
	for i, p := range ptrs {
		if p == nil {
			return nil, fmt.Errorf("element %d is null", i)
		}
		out[i] = *p
	}
	return out, nil
}

// timestamp parses khive's wire timestamps: RFC 3339 with six fractional digits and Z
// (micros_to_iso, khive-runtime/src/presentation.rs).
func timestamp(raw json.RawMessage) (time.Time, error) {
	var s string
	if err := str(raw, "created_at", &s); err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("created_at %q: %w", truncate(s, 40), err)
	}
	return t.UTC().Truncate(time.Microsecond), nil
}
