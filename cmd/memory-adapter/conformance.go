package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/conformance"
	"github.com/agentmem/memory-adapter-operator/internal/server/wireharness"
)

type conformanceFlags struct {
	backend          backendConfig
	serverURL        string
	serverTokenFile  string
	serverCAFile     string
	expectedManifest string
	reportFile       string
	terminationLog   string
	direct           bool
	caseTimeout      time.Duration
	timeout          time.Duration
	progress         bool
	// requireFull fails a partial claim (--require-full-claim).
	requireFull bool
	target      targetFlags
	// governanceFlags govern the matrix's servers as the deployed one is governed, so the
	// run publishes (and its profiles check) the same governance/v1 claim.
	governanceFlags
}

func newConformanceCommand() *cobra.Command {
	var f conformanceFlags
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the ADR-0093 conformance matrix live against a backend, and check a deployed server",
		Long: `Runs the conformance matrix against the configured backend in a disposable scope (SQLite: a
disposable database file with this build), through this build's HTTP server and remote client
unless --direct. With --server-url it also checks the deployed server through the wire: its
published manifest equals the expected one, its evidence is valid and names the same manifest
hash, and the service version it reports.

With --target the matrix and four wire-rule cases judge the server at that URL (any
implementation of api/memory/openapi.yaml) through a raw client, using the harness protocol
of --harness-url for its disposable scope; --server-url may then name the production
instance, which gets the same read-only checks against the target's manifest.

Writes the full JSON report to --report-file, the compact form to --termination-log, and a
table to stdout. Exit code 0 when the run passed, 1 when it failed, 2 on a usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.backend.resolve(cmd.Flags()); err != nil {
				return err
			}
			if err := f.target.resolve(cmd.Flags()); err != nil {
				return err
			}
			if err := f.checkGovernor(); err != nil {
				return err
			}
			if f.wireGovernance() != nil && (f.direct || f.target.url != "") {
				// Neither run starts this build's server, so nothing would enforce them.
				return usageError("the retention, quota and access-control flags govern this build's server: they exclude --direct and --target")
			}
			return runConformance(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fs := cmd.Flags()
	f.backend.addFlags(fs, "disposable scope for the matrix (default: a fresh random scope)")
	fs.StringVar(&f.serverURL, "server-url", "", "also check the deployed adapter server at this URL")
	fs.StringVar(&f.serverTokenFile, "server-token-file", "", "file holding the deployed server's bearer token")
	fs.StringVar(&f.serverCAFile, "server-ca-file", "", "PEM CA bundle the deployed https server's certificate must chain to (a binding's ca.crt)")
	fs.StringVar(&f.expectedManifest, "expected-manifest-file", "", "JSON manifest the adapter must publish (default: the manifest this backend configuration publishes)")
	fs.StringVar(&f.reportFile, "report-file", filepath.Join(os.TempDir(), "memory-adapter-conformance.json"), "where to write the full JSON report (empty: do not write)")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "where to write the compact report (empty: do not write)")
	fs.BoolVar(&f.direct, "direct", false, "run the matrix on the backend store directly instead of through this build's HTTP server and client")
	fs.DurationVar(&f.caseTimeout, "case-timeout", conformance.DefaultCaseTimeout, "bound on one case")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	fs.BoolVar(&f.progress, "progress", false, "print one line per finished case to stderr")
	fs.BoolVar(&f.requireFull, "require-full-claim", false, "fail a run whose claim is partial (a case not applicable for want of a harness capability)")
	f.target.addFlags(fs)
	addGovernorFlags(fs, &f.governanceFlags)
	return cmd
}

func runConformance(parent context.Context, stdout, stderr io.Writer, f *conformanceFlags) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	var expected *memory.Manifest
	if f.expectedManifest != "" {
		m, err := readManifestFile(f.expectedManifest)
		if err != nil {
			return usageError("--expected-manifest-file: %v", err)
		}
		expected = &m
	}
	var serverToken string
	if f.serverTokenFile != "" {
		s, err := readSecretFile(f.serverTokenFile)
		if err != nil {
			return usageError("--server-token-file: %v", err)
		}
		serverToken = s
	}
	var serverCA []byte
	if f.serverCAFile != "" {
		b, err := readCAFile(f.serverCAFile)
		if err != nil {
			return usageError("--server-ca-file: %v", err)
		}
		serverCA = b
	}

	// With --target the matrix judges that server (a disposable harness-mode instance); the
	// deployed-server checks below then compare the production instance with it.
	var r *conformance.Report
	if f.target.url != "" {
		r = runTarget(ctx, f, expected)
	} else {
		r = runMatrix(ctx, f)
		if expected != nil && r.Manifest != nil && !expected.Equal(*r.Manifest) {
			addRunError(r, fmt.Sprintf("this backend configuration publishes manifest %s, not the expected %s; it differs in %s", r.ManifestHash, expected.Hash(), strings.Join(r.Manifest.Diff(*expected), "; ")))
		}
	}
	var checks []wireCheck
	if f.serverURL != "" {
		want := expected
		if want == nil && r.Manifest != nil {
			want = r.Manifest
		}
		var sv string
		checks, sv = checkDeployed(ctx, remote.Options{BaseURL: f.serverURL, Token: serverToken, CACert: serverCA}, want, r.ServiceVersion)
		if r.ServiceVersion == "" {
			r.ServiceVersion = sv
		}
		var failed []string
		for _, c := range checks {
			if !c.OK {
				failed = append(failed, c.Name+": "+c.Detail)
			}
		}
		if len(failed) > 0 {
			addRunError(r, "deployed server: "+strings.Join(failed, "; "))
		}
	}

	return writeReports(stdout, stderr, f, r, checks, f.target.url != "")
}

// writeReports writes the table, the report file and the termination message, and turns the
// verdict into the exit code. A --target run exits 1 unless it passed with the full claim.
func writeReports(stdout, stderr io.Writer, f *conformanceFlags, r *conformance.Report, checks []wireCheck, target bool) error {
	var errs []error
	if err := r.WriteTable(stdout); err != nil {
		errs = append(errs, err)
	}
	if len(checks) > 0 {
		writeChecks(stdout, f.serverURL, checks)
	}
	if f.reportFile != "" {
		b, err := r.JSON()
		if err == nil {
			err = os.WriteFile(f.reportFile, append(b, '\n'), 0o644)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("writing the report: %w", err))
		} else {
			fmt.Fprintf(stdout, "report: %s\n", f.reportFile)
		}
	}
	if f.terminationLog != "" {
		b, err := r.Compact()
		if err == nil {
			err = os.WriteFile(f.terminationLog, b, 0o644)
		}
		if err != nil {
			// Outside a pod the default path may not be writable; the table and the report
			// file still carry the verdict.
			fmt.Fprintf(stderr, "memory-adapter: warning: writing the termination message: %v\n", err)
		}
	}
	if len(errs) > 0 {
		return &exitError{code: 1, err: errors.Join(errs...)}
	}
	if r.Result != conformance.Passed {
		return &exitError{code: 1, err: failedRunError(r)}
	}
	if target && !r.FullClaim() {
		return &exitError{code: 1, err: fmt.Errorf("conformance %s", r.Summary())}
	}
	return nil
}

// runMatrix builds the backend's live harness, wraps it in the wire harness unless --direct,
// and runs the matrix. A harness that cannot be built is a failed run, not a usage error:
// the Job must still report.
func runMatrix(ctx context.Context, f *conformanceFlags) *conformance.Report {
	opts := conformance.Options{CaseTimeout: f.caseTimeout, AdapterVersion: adapterVersion(), RequireFullClaim: f.requireFull}
	if f.progress {
		opts.Progress = os.Stderr
	}
	inner, err := buildHarness(ctx, func(ctx context.Context) (conformance.Harness, error) {
		return f.backend.chosen().Harness(ctx, f.backend.config())
	}, harnessRetryPauses, os.Stderr)
	if err != nil {
		r := conformance.Execute(ctx, nil, opts)
		r.Error = fmt.Sprintf("building the %s harness: %v", f.backend.Backend, err)
		return r
	}
	h := inner
	if !f.direct {
		h = wireharness.New(inner, wireharness.Options{AdapterVersion: adapterVersion(), Token: uuid.NewString(), Governance: f.wireGovernance()})
	}
	defer func() { _ = h.Close(context.WithoutCancel(ctx)) }()
	return conformance.Execute(ctx, h, opts)
}

// addRunError records a run-level failure; the report's result follows.
func addRunError(r *conformance.Report, msg string) {
	if r.Error != "" {
		r.Error += "; "
	}
	r.Error += msg
	r.Result = conformance.Failed
	r.Claim = conformance.ClaimPartial
}

func readManifestFile(path string) (memory.Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return memory.Manifest{}, err
	}
	var m memory.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return memory.Manifest{}, err
	}
	if err := m.Validate(); err != nil {
		return memory.Manifest{}, err
	}
	return m.Normalize(), nil
}

// wireCheck is one check of a deployed server.
type wireCheck struct {
	Name   string
	OK     bool
	Detail string
}

// checkDeployed checks a deployed server through the wire with read-only requests: the
// deployed instance's scope is not disposable, so it writes nothing there.
func checkDeployed(ctx context.Context, server remote.Options, expected *memory.Manifest, matrixVersion string) ([]wireCheck, string) {
	var out []wireCheck
	add := func(name string, ok bool, detail string) { out = append(out, wireCheck{name, ok, detail}) }
	rs, err := remote.New(ctx, server)
	if err != nil {
		add("manifest", false, err.Error())
		return out, ""
	}
	defer func() { _ = rs.Close() }()
	published := rs.Manifest()
	switch {
	case expected == nil:
		add("manifest", false, "no expected manifest: the matrix could not build one and none was given")
	case published.Equal(*expected):
		add("manifest", true, "published manifest equals the expected one ("+published.Hash()+")")
	default:
		add("manifest", false, fmt.Sprintf("published %s differs from the expected %s in %s", published.Hash(), expected.Hash(), strings.Join(published.Diff(*expected), "; ")))
	}
	var sv string
	// stale is an instance that started on another service version and, as it must, refuses
	// data calls since the service moved to the one this run verified: its typed 503 on the
	// data checks below is that refusal, not a verdict on the new version.
	stale := false
	ev, err := rs.Evidence(ctx)
	switch {
	case err != nil:
		add("evidence", false, err.Error())
	case ev.ManifestHash != published.Hash():
		add("evidence", false, fmt.Sprintf("evidence names manifest %s but the server publishes %s", ev.ManifestHash, published.Hash()))
	case !ev.ManifestValid && versionMovedTo(ev, matrixVersion):
		// The instance started on another service version and invalidated itself when the
		// service moved, as it must (the invalidation is sticky). The matrix has just verified
		// the version the service runs now, so the operator restarts the instance.
		sv, stale = ev.ServiceVersion, true
		add("evidence", true, fmt.Sprintf("the instance started on service version %q and now sees %q, which this run verified; it needs a restart to publish again", ev.InitialServiceVersion, ev.ServiceVersion))
	case !ev.ManifestValid:
		add("evidence", false, "the server considers its manifest invalid: "+ev.Reason)
	default:
		sv = ev.ServiceVersion
		add("evidence", true, fmt.Sprintf("valid; service version %q, adapter version %q", ev.ServiceVersion, ev.AdapterVersion))
	}
	if sv != "" && matrixVersion != "" && sv != matrixVersion {
		add("service-version", false, fmt.Sprintf("the matrix ran against %q but the deployed adapter reports %q", matrixVersion, sv))
	}
	got, err := rs.Retrieve(ctx, uuid.New())
	switch {
	case err != nil && stale && errors.Is(err, memory.ErrUnavailable):
		add("unknown-id", true, "the stale instance refuses data calls with a typed unavailable until it is restarted, as it must: "+err.Error())
	case err != nil:
		add("unknown-id", false, err.Error())
	case got != nil:
		add("unknown-id", false, "a random id returned an item")
	default:
		add("unknown-id", true, "a random id is not found (404 → None)")
	}
	add(checkUnsupportedFilter(ctx, rs.HTTPClient(), server.BaseURL, server.Token, published, stale))
	return out, sv
}

// versionMovedTo reports whether the evidence is invalid only because the service version
// changed since the instance started, to the version the matrix ran against.
func versionMovedTo(ev memory.EvidenceReport, matrixVersion string) bool {
	if ev.InitialServiceVersion == "" || ev.InitialServiceVersion == ev.ServiceVersion || ev.ServiceVersion != matrixVersion {
		return false
	}
	for _, p := range ev.Probes {
		if !p.OK {
			return false
		}
	}
	return true
}

// checkUnsupportedFilter sends a query with a key outside the manifest straight to the
// server (the remote client would reject it locally) and expects 422 naming the key; a stale
// instance (see checkDeployed) may answer 503 unavailable instead.
func checkUnsupportedFilter(ctx context.Context, client *http.Client, baseURL, token string, m memory.Manifest, stale bool) (string, bool, string) {
	key := "conformance-unsupported-" + uuid.NewString()[:8]
	for m.SupportsFilter(key) {
		key += "x"
	}
	body, _ := json.Marshal(map[string]any{"filters": map[string]any{key: 1}, "limit": 1})
	cctx, cancel := context.WithTimeout(ctx, remote.DefaultTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, strings.TrimRight(baseURL, "/")+"/v1/search", bytes.NewReader(body))
	if err != nil {
		return "unsupported-filter", false, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "unsupported-filter", false, "transport: " + err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	var p memory.Problem
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&p); err != nil {
		return "unsupported-filter", false, fmt.Sprintf("HTTP %d with an undecodable body", resp.StatusCode)
	}
	if stale && resp.StatusCode == http.StatusServiceUnavailable && p.Type == memory.ProblemUnavailable {
		return "unsupported-filter", true, "the stale instance refuses data calls with 503 unavailable until it is restarted, as it must"
	}
	if resp.StatusCode != http.StatusUnprocessableEntity || p.Type != memory.ProblemUnsupportedQuery || len(p.RejectedKeys) != 1 || p.RejectedKeys[0] != key {
		return "unsupported-filter", false, fmt.Sprintf("HTTP %d %q rejected_keys %q, want 422 unsupported_query [%s]", resp.StatusCode, p.Type, p.RejectedKeys, key)
	}
	return "unsupported-filter", true, "a key outside the manifest is rejected by the server with 422"
}

func writeChecks(w io.Writer, url string, checks []wireCheck) {
	fmt.Fprintf(w, "\ndeployed server %s\n", url)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOK\tDETAIL")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%t\t%s\n", c.Name, c.OK, c.Detail)
	}
	_ = tw.Flush()
}

// failedRunError says why a run did not pass: the failing cases by id, or, when no case failed
// ("Failed (0 failed)" told a user nothing), the run-level error or what kept the run from
// being complete.
func failedRunError(r *conformance.Report) error {
	if failed := r.FailedIDs(); len(failed) > 0 {
		return fmt.Errorf("conformance %s: %d failed: %v", r.Result, len(failed), failed)
	}
	if r.Error != "" {
		return fmt.Errorf("conformance %s: no case failed, the run did: %s", r.Result, r.Error)
	}
	n := r.Counts.Passed + r.Counts.NotApplicable
	return fmt.Errorf("conformance %s: no case failed, but only %d cases have an outcome: the run ended before the matrix did", r.Result, n)
}

// readCAFile reads a PEM CA bundle, bounded like a binding's ca.crt.
func readCAFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, remote.CABundleLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > remote.CABundleLimit {
		return nil, fmt.Errorf("longer than %d bytes", remote.CABundleLimit)
	}
	return b, nil
}

// harnessRetryPauses are the pauses between attempts to build a harness whose backend was
// unavailable: a run that starts while its backend is slow to accept a connection (a loaded
// node, a server finishing its start) is not a verdict on the adapter, and a broken run is
// only retried a minute later by the operator.
var harnessRetryPauses = []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}

// buildHarness calls build, again after each pause while it fails with
// MemoryAdapterUnavailable and ctx lasts; any other error (a configuration the backend
// refuses) is returned at once. Each retry is said on log.
func buildHarness(ctx context.Context, build func(context.Context) (conformance.Harness, error), pauses []time.Duration, log io.Writer) (conformance.Harness, error) {
	h, err := build(ctx)
	for _, pause := range pauses {
		if err == nil || !errors.Is(err, memory.ErrUnavailable) {
			return h, err
		}
		_, _ = fmt.Fprintf(log, "conformance: the backend is unavailable (%v); building the harness again in %s\n", err, pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		h, err = build(ctx)
	}
	return h, err
}
