package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeLogsFollowTheConvention runs serve briefly and checks every line it logs against
// the convention both binaries share (newLogger): lower-case level, numeric ts, a constant
// capitalized message without a trailing period, lowerCamel keys.
func TestServeLogsFollowTheConvention(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := captureStderr(t, func() {
		cmd := newRootCommand()
		cmd.SetArgs([]string{"serve", "--backend", "inmemory", "--listen", "127.0.0.1:0", "--insecure-no-token"})
		time.AfterFunc(time.Second, cancel)
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	key := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON log line: %q", line)
			continue
		}
		msg, _ := rec["msg"].(string)
		msgs = append(msgs, msg)
		if msg == "" || msg[:1] != strings.ToUpper(msg[:1]) || strings.HasSuffix(msg, ".") {
			t.Errorf("message %q: want a capitalized message without a trailing period", msg)
		}
		if lvl, _ := rec["level"].(string); lvl == "" || lvl != strings.ToLower(lvl) {
			t.Errorf("%q: level %v, want lower case", msg, rec["level"])
		}
		if _, ok := rec["ts"].(float64); !ok {
			t.Errorf("%q: ts %v, want seconds since the epoch", msg, rec["ts"])
		}
		for k := range rec {
			if !key.MatchString(k) {
				t.Errorf("%q: key %q is not lowerCamel", msg, k)
			}
		}
	}
	for _, want := range []string{"Serving without a bearer token", "Serving", "Stopped"} {
		found := false
		for _, m := range msgs {
			found = found || m == want
		}
		if !found {
			t.Errorf("no %q line in %v", want, msgs)
		}
	}
}
