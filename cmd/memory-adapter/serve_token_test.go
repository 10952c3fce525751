package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/internal/server/tokentest"
)

// TestServeFollowsARotatedTokenFile rotates the token file under a running `serve`: the new
// token is accepted next to the old one, then the old one is refused, without a restart. The
// server looks at the file once a second, so the test polls each step to a deadline.
func TestServeFollowsARotatedTokenFile(t *testing.T) {
	tok := writeFile(t, t.TempDir(), "token", "token-a\n")
	addr := storetest.ClosedAddr(t)
	startServe(t, addr, "--backend", "inmemory", "--token-file", tok, "--log-level", "error")
	status := func(token string) int {
		t.Helper()
		return tokentest.Status(t, nil, "http://"+addr, "Bearer "+token)
	}
	if a, b := status("token-a"), status("token-b"); a != http.StatusOK || b != http.StatusUnauthorized {
		t.Fatalf("before the rotation: token-a %d, token-b %d", a, b)
	}
	tokentest.ReplaceFile(t, tok, "token-a\ntoken-b\n")
	tokentest.Eventually(t, "token-b accepted", func() bool { return status("token-b") == http.StatusOK })
	if got := status("token-a"); got != http.StatusOK {
		t.Fatalf("token-a answered %d during the grace period", got)
	}
	tokentest.ReplaceFile(t, tok, "token-b\n")
	tokentest.Eventually(t, "token-a refused", func() bool { return status("token-a") == http.StatusUnauthorized })
	if got := status("token-b"); got != http.StatusOK {
		t.Fatalf("token-b answered %d after the rotation", got)
	}
}

func TestServeRefusesATokenFileWithoutAcceptableTokens(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":             "",
		"blank lines":       "\n  \n",
		"257 tokens":        strings.Repeat("a\n", 257),
		"a token too big":   strings.Repeat("t", 513) + "\n",
		"an unknown option": "a read-write\n",
	} {
		t.Run(name, func(t *testing.T) {
			f := writeFile(t, dir, strings.ReplaceAll(name, " ", "-"), content)
			_, _, err := execute(t, "serve", "--backend", "inmemory", "--listen", "127.0.0.1:0", "--token-file", f)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--token-file") {
				t.Fatalf("got %v, want a --token-file usage error (exit code 2)", err)
			}
		})
	}
}

// TestHarnessTokenDiffersFromEveryDataToken: during a rotation the data file holds two
// tokens, and the harness token must be neither.
func TestHarnessTokenDiffersFromEveryDataToken(t *testing.T) {
	dir := t.TempDir()
	htok := writeFile(t, dir, "harness-token", "harness\n")
	for name, data := range map[string]string{
		"the only token": "harness\n",
		"the first":      "harness\ncurrent\n",
		"the second":     "current\n\nharness\n",
	} {
		t.Run(name, func(t *testing.T) {
			tok := writeFile(t, dir, "token", data)
			// Bounded, so that a server that wrongly starts ends the test instead of hanging it.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := executeCtx(ctx, "serve", "--backend", "inmemory", "--listen", "127.0.0.1:0", "--token-file", tok,
				"--harness", "--harness-listen", "127.0.0.1:0", "--harness-token-file", htok)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "must hold another token than --token-file") {
				t.Fatalf("got %v, want the harness token refused", err)
			}
		})
	}
}
