package remote

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// answerCases are search and store answers the direct paths must decode exactly as the
// strict envelope decoder does, or leave to it.
var answerCases = []string{
	`{"items":[]}`, ` { "items" : [ ] } `, `{"items":null}`, `{}`, `[]`, `null`, ``, `{"items":[]`,
	`{"items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1,"tags":["a"]}]}`,
	`{"items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1},{"id":"7f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":2.5,"metadata":{"k":{"a":"}"}}}]}`,
	`{"items":[],"items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1}]}`,
	`{"items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1}],"extra":1}`,
	`{"Items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1}]}`,
	`{"items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f"}]}`,
	`{"items":[null]}`, `{"items":[1]}`, `{"items":[]} x`, `{"items":[]}}`, "{\"items\":[\"\xff\"]}",
	`{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f"}`, `{"id":"6F1C1B1E-8D2A-4C3B-9E1F-0A1B2C3D4E5F"}`,
	`{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5\""}`, `{"id": "6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f"}`,
	`{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","id":"x"}`, `{"id":null}`, `{"id":"x"}`,
}

// checkAnswers fails t unless searchAnswer and storeAnswer decode data as the strict
// envelope decoder does: same value (reflect.DeepEqual), same error text.
func checkAnswers(t *testing.T, data []byte) {
	t.Helper()
	var gotS searchAnswer
	var wantS searchFields
	errS, wantErrS := gotS.UnmarshalJSON(data), decodeFields(data, &wantS)
	if fmt.Sprint(errS) != fmt.Sprint(wantErrS) || (errS == nil && !reflect.DeepEqual(searchFields(gotS), wantS)) {
		t.Fatalf("%q: search answer %v %#v, strict decoder %v %#v", data, errS, gotS, wantErrS, wantS)
	}
	var gotID storeAnswer
	var wantID storeFields
	errID, wantErrID := gotID.UnmarshalJSON(data), decodeFields(data, &wantID)
	if fmt.Sprint(errID) != fmt.Sprint(wantErrID) || (errID == nil && !reflect.DeepEqual(storeFields(gotID), wantID)) {
		t.Fatalf("%q: store answer %v %#v, strict decoder %v %#v", data, errID, gotID, wantErrID, wantID)
	}
	// Store reads an answer of the server's shape straight to an id: the strict decoder must
	// give a string that parses to the same id.
	if id, ok := storeAnswerID(data); ok {
		if wantErrID != nil || wantID.ID == nil {
			t.Fatalf("%q: the direct id path accepted what the strict decoder refuses (%v)", data, wantErrID)
		}
		if want, err := memory.ParseID(*wantID.ID); err != nil || want != id {
			t.Fatalf("%q: the direct id path read %s, the strict decoder %q (%v)", data, id, *wantID.ID, err)
		}
	}
}

// TestAnswersAgreeWithStrictDecoder pins the direct answer paths to the strict decoder, and
// checks that the server's own shapes take them.
func TestAnswersAgreeWithStrictDecoder(t *testing.T) {
	for _, in := range answerCases {
		checkAnswers(t, []byte(in))
	}
	if _, ok := storeAnswerID([]byte(`{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f"}`)); !ok {
		t.Error("the direct id path declined the server's shape")
	}
	for _, in := range answerCases[8:10] {
		if _, ok := itemsArray([]byte(in)); !ok {
			t.Errorf("%q: the direct path declined the server's shape", in)
		}
	}
}

// FuzzAnswers holds the direct answer paths to the strict decoder on any input.
func FuzzAnswers(f *testing.F) {
	for _, s := range answerCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkAnswers(t, data) })
}
