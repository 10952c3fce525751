package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/conformance/wire"
)

// targetFlags are conformance's --target flags: the matrix and the wire-rule cases against
// any server over the wire, with a raw client (conformance/wire).
type targetFlags struct {
	url              string
	harnessURL       string
	tokenFile        string
	harnessTokenFile string
	duplicateID      string
	wait             time.Duration
	token            string
	harnessToken     string
}

func (t *targetFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.url, "target", "", "judge the server at this URL over the wire (any implementation of api/memory/openapi.yaml) instead of a backend of this build")
	fs.StringVar(&t.harnessURL, "harness-url", "", "with --target: the server's harness listener (serve --harness); without it every case needing a harness capability is NotApplicable")
	fs.StringVar(&t.tokenFile, "token-file", "", "with --target: file holding the server's data bearer token")
	fs.StringVar(&t.harnessTokenFile, "harness-token-file", "", "with --target: file holding the harness listener's bearer token")
	fs.StringVar(&t.duplicateID, "duplicate-id-behaviour", "", "with --target: the declared duplicate-id behaviour (Overwrite, Reject, Duplicate) when the harness declares none; must agree when it does")
	fs.DurationVar(&t.wait, "target-wait", 0, "with --target: wait up to this long for the target's /readyz (and the harness's capabilities) to answer 200 before the run, for a target starting beside this command")
}

// targetConflicts are the flags that configure this build's own backend; with --target they
// would be silently ignored, so they are refused. (--server-url keeps its meaning: the
// production instance, checked read-only against the target's manifest.)
var targetConflicts = []string{"backend", "scope", "sqlite-path", "connection-file", "supported-filters", "direct"}

func (t *targetFlags) resolve(fs *pflag.FlagSet) error {
	if t.url == "" {
		for _, n := range []string{"harness-url", "token-file", "harness-token-file", "duplicate-id-behaviour", "target-wait"} {
			if fs.Changed(n) {
				return usageError("--%s needs --target", n)
			}
		}
		return nil
	}
	for _, n := range targetConflicts {
		if fs.Changed(n) {
			return usageError("--%s does not apply to --target (the target's own configuration is judged)", n)
		}
	}
	if t.harnessTokenFile != "" && t.harnessURL == "" {
		return usageError("--harness-token-file needs --harness-url")
	}
	if t.duplicateID != "" && !slices.Contains([]string{conformance.DuplicateOverwrite, conformance.DuplicateReject, conformance.DuplicateDuplicate}, t.duplicateID) {
		return usageError("--duplicate-id-behaviour must be Overwrite, Reject or Duplicate")
	}
	var err error
	if t.tokenFile != "" {
		if t.token, err = readSecretFile(t.tokenFile); err != nil {
			return usageError("--token-file: %v", err)
		}
	}
	if t.harnessTokenFile != "" {
		if t.harnessToken, err = readSecretFile(t.harnessTokenFile); err != nil {
			return usageError("--harness-token-file: %v", err)
		}
	}
	return nil
}

// runTarget runs the matrix and the wire-rule cases against --target. A target that cannot
// be reached, or whose harness disagrees with the flags, is a failed run with the reason:
// the report is still written.
func runTarget(ctx context.Context, f *conformanceFlags, expected *memory.Manifest) *conformance.Report {
	opts := conformance.Options{CaseTimeout: f.caseTimeout, RequireFullClaim: f.requireFull}
	if f.progress {
		opts.Progress = os.Stderr
	}
	t := f.target
	err := waitForTarget(ctx, t)
	var h *wire.Harness
	if err == nil {
		h, err = wire.New(ctx, wire.Options{
			TargetURL: t.url, Token: t.token, HarnessURL: t.harnessURL, HarnessToken: t.harnessToken,
			DuplicateIDBehaviour: t.duplicateID,
		})
	}
	if err != nil {
		r := conformance.Execute(ctx, nil, opts)
		r.Target = t.url
		r.Error = ""
		addRunError(r, err.Error())
		return r
	}
	defer func() { _ = h.Close(context.WithoutCancel(ctx)) }()
	r := conformance.Execute(ctx, h, opts)
	// --adapter-id names the adapter the caller means to judge; a target publishing another
	// one is the wrong target, never a silent pass.
	if id := f.backend.AdapterID; id != "" && r.Manifest != nil && r.AdapterID != id {
		addRunError(r, fmt.Sprintf("--adapter-id %q, but the target publishes adapter %q", id, r.AdapterID))
	}
	if expected != nil && r.Manifest != nil && !expected.Equal(*r.Manifest) {
		addRunError(r, fmt.Sprintf("the target publishes manifest %s, not the expected %s; it differs in %s", r.ManifestHash, expected.Hash(), strings.Join(r.Manifest.Diff(*expected), "; ")))
	}
	return r
}

// waitForTarget polls the target's /readyz, and the harness's capabilities when there is a
// harness, until both answer 200 or --target-wait passes. The operator's conformance Job
// starts the External server beside this command on loopback, where no kubelet probe can
// tell when it listens; waiting here keeps that instance unreachable from outside the pod.
func waitForTarget(ctx context.Context, t targetFlags) error {
	if t.wait <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.wait)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	ready := func(url, token string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s answered HTTP %d", url, resp.StatusCode)
		}
		return nil
	}
	for {
		err := ready(strings.TrimSuffix(t.url, "/")+"/readyz", "")
		if err == nil && t.harnessURL != "" {
			err = ready(strings.TrimSuffix(t.harnessURL, "/")+wire.PathCapabilities, t.harnessToken)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the target was not ready within --target-wait %s: %w", t.wait, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
