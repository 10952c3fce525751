// Package tokentest drives a running adapter's bearer tokens from tests, over the wire: what
// /v1 answers a given Authorization header, a token file replaced the way the kubelet
// replaces a mounted Secret's file, and a wait for a server that follows the file (it looks
// at most once a second) to catch up.
package tokentest

import (
	"net/http"
	"os"
	"testing"
	"time"
)

// Wait bounds Eventually: a server re-reads its token file within about a second, so this is
// slack for a loaded machine, not an expected delay.
const Wait = 10 * time.Second

// Status returns the HTTP status of GET baseURL/v1/manifest sent with the Authorization
// header (none when empty), on client (http.DefaultClient when nil).
func Status(t testing.TB, client *http.Client, baseURL, authorization string) int {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, baseURL+"/v1/manifest", nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// ReplaceFile writes content to path in one step (a new file renamed over the old one), so a
// reader sees the old content or the new, never a mix, as with a kubelet update.
func ReplaceFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// Eventually polls done until it holds, failing t naming what did not happen within Wait.
func Eventually(t testing.TB, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(Wait); !done(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", Wait, what)
		}
	}
}
