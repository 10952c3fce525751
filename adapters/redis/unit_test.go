package redis

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestCanonicalJSONMatchesJSONEqual(t *testing.T) {
	pairs := []struct {
		a, b string
	}{
		{`1`, `1.0`}, {`1`, `1e0`}, {`10`, `1e1`}, {`9007199254740993`, `9007199254740993`},
		{`9007199254740993`, `9007199254740992`}, {`{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`},
		{`[1,2]`, `[2,1]`}, {`"a"`, `"\u0061"`}, {`"a\u0000"`, `"a"`}, {`null`, `false`},
		{`1e99999`, `1e99999`}, {`1e99999`, `1E99999`}, {`0.1`, `1e-1`}, {`{"a":null}`, `{}`},
		{`"1"`, `1`}, {`-0`, `0`},
	}
	for _, p := range pairs {
		ca, err := canonicalJSON(json.RawMessage(p.a))
		if err != nil {
			t.Fatalf("%s: %v", p.a, err)
		}
		cb, err := canonicalJSON(json.RawMessage(p.b))
		if err != nil {
			t.Fatalf("%s: %v", p.b, err)
		}
		if got, want := ca == cb, memory.JSONEqual([]byte(p.a), []byte(p.b)); got != want {
			t.Errorf("%s vs %s: canonical equal %v (%q, %q), JSONEqual %v", p.a, p.b, got, ca, cb, want)
		}
	}
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	if _, err := canonicalJSON(json.RawMessage(deep)); err == nil {
		t.Error("300-deep JSON canonicalised; want a depth error")
	}
}

func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"7.0.15", true}, {"6.2.0", true}, {"6.0.9", false}, {"5.0.0", false}, {"10.1", true},
		{"6", false}, {"x.y", false}, {"", false},
	} {
		if got := atLeast(tc.v, 6, 2); got != tc.want {
			t.Errorf("atLeast(%q, 6, 2) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err         error
		unavailable bool
	}{
		{io.EOF, true},
		{replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{replyErr("OOM command not allowed when used memory > 'maxmemory'"), false},
		{replyErr("LOADING Redis is loading the dataset in memory"), true},
		{replyErr("WRONGPASS invalid username-password pair"), true},
	} {
		err := classify("op", tc.err)
		if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) != tc.unavailable || !errors.Is(err, tc.err) {
			t.Errorf("classify(%v) = %v; want unavailable=%v with the cause chained", tc.err, err, tc.unavailable)
		}
	}
}

func TestPersistenceCrashLoss(t *testing.T) {
	for _, tc := range []struct {
		p    Persistence
		want string
	}{
		{Persistence{Known: true, AppendOnly: true, AppendFsync: "always"}, "none"},
		{Persistence{Known: true, AppendOnly: true, AppendFsync: "everysec"}, "one second"},
		{Persistence{Known: true, AppendOnly: true, AppendFsync: "no"}, "not yet flushed"},
		{Persistence{Known: true, Save: "3600 1"}, "since the last RDB snapshot"},
		{Persistence{Known: true}, "nothing is persisted"},
		{Persistence{}, "unknown"},
	} {
		if got := tc.p.CrashLoss(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want it to mention %q", tc.p, got, tc.want)
		}
	}
}

// replyErr stands in for a server error reply: go-redis recognises those by the RedisError
// method.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// FuzzCanonicalJSON checks the property the filter index relies on: values that
// memory.JSONEqual considers equal canonicalise to the same string (so the index set of one
// finds the other), and different canonical strings never belong to equal values.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range [][2]string{
		{`1`, `1.0`}, {`{"a":[1,{"b":null}]}`, `{"a":[1e0,{"b":null}]}`}, {`"\u0000"`, `"\u0000"`},
		{`1e99999`, `1e99999`}, {`-0.0`, `0`}, {`[1,2]`, `[2,1]`}, {`"\xff"`, `"\ufffd"`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, errA := canonicalJSON(json.RawMessage(a))
		cb, errB := canonicalJSON(json.RawMessage(b))
		if errA != nil || errB != nil {
			return // invalid or too deep: never indexed, and JSONEqual is false for invalid JSON
		}
		if eq := memory.JSONEqual([]byte(a), []byte(b)); eq != (ca == cb) {
			t.Fatalf("JSONEqual(%q, %q) = %v but canonical forms %q and %q", a, b, eq, ca, cb)
		}
	})
}
