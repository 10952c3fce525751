package conformance

// This file holds the wire-rule cases: what only a server judged over the wire can get wrong
// (authentication, a manifest stable across the run and named by the evidence, plain-string
// content, the declared duplicate-id behaviour). They run only when the harness is a
// WireTarget (memory-adapter conformance --target), after the matrix's cases.

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The wire-rule case ids, in run order after the matrix.
const (
	CaseContentKinds   CaseID = "content-kinds"
	CaseDuplicateID    CaseID = "duplicate-id"
	CaseAuthentication CaseID = "authentication"
	CaseManifestStable CaseID = "manifest-stable"
)

// wireCases run after the matrix in a wire run; manifest-stable is last so that it sees
// every manifest read of the run.
var wireCases = []Case{caseContentKinds, caseDuplicateID, caseAuthentication, caseManifestStable}

// WireCases returns the wire-rule cases in run order. The slice is a copy.
func WireCases() []Case {
	out := make([]Case, len(wireCases))
	copy(out, wireCases)
	return out
}

// The duplicate-id behaviours a target can declare (the MemoryAdapter CRD's
// lifecycle.duplicateIdBehaviour values, ADR-0093 D4).
const (
	DuplicateOverwrite = "Overwrite"
	DuplicateReject    = "Reject"
	DuplicateDuplicate = "Duplicate"
)

func (c *caseRun) target() WireTarget { return c.h.(WireTarget) }

var caseContentKinds = Case{
	ID:          CaseContentKinds,
	Title:       "Content kinds",
	Description: "plain-string, object and array content come back exactly from retrieve at every fidelity and in hits at full and native_fields search fidelity",
	Hint:        "the server truncates, re-encodes or summarises plain-string content (search snippets) or only handles object content",
	wire:        true,
	run: func(c *caseRun) {
		long := `conformance plain string ünïcødé ✓ 𝄞 "quoted" \ back\slash` + "\n" + strings.Repeat("0123456789 ", 60)
		str, obj, arr := c.fixture(1), c.fixture(2), c.fixture(3)
		b, _ := json.Marshal(long + str.ID.String())
		str.Content = b
		arr.Content = json.RawMessage(`["conformance",` + bigInt + `,{"nested":[1,"two"]},null,true,0.000001]`)
		items := []memory.Item{str, obj, arr}
		c.mustStore(items...)
		if c.check("content-kinds/exact") {
			for _, it := range items {
				got, err := c.store.Retrieve(c.ctx, it.ID)
				if err != nil || got == nil {
					c.failf("retrieve of an item with %s content returned (%v, %v)", contentKind(it), got != nil, err)
					continue
				}
				for _, p := range fieldProblems(it, *got, memory.FieldContent) {
					c.failf("retrieve of %s content (an anchor at every fidelity): %s", contentKind(it), p)
				}
			}
		}
		hits := c.visible(ids(items))
		if c.m.SearchFidelity == memory.FidelityLossy {
			c.notef("search fidelity is lossy: hit content not compared")
		} else if c.check("content-kinds/exact") {
			for _, it := range items {
				h, ok := findHit(hits, it.ID)
				if !ok {
					c.failf("the %s-content item is missing from the hits", contentKind(it))
					continue
				}
				for _, p := range fieldProblems(it, h, memory.FieldContent) {
					c.failf("hit with %s content at %s search fidelity: %s", contentKind(it), c.m.SearchFidelity, p)
				}
			}
		}
		c.notef("string, object and array content exact on retrieve and at %s search fidelity", c.m.SearchFidelity)
	},
}

func contentKind(it memory.Item) string {
	switch b := strings.TrimSpace(string(it.ContentJSON())); {
	case strings.HasPrefix(b, `"`):
		return "string"
	case strings.HasPrefix(b, `[`):
		return "array"
	default:
		return "object"
	}
}

var caseDuplicateID = Case{
	ID:          CaseDuplicateID,
	Title:       "Duplicate id",
	Description: "a second store under an existing id does what the declared duplicate-id behaviour says (Overwrite, Reject or Duplicate)",
	Hint:        "the declared duplicateIdBehaviour is not what the backend does (an upsert declared Reject, an append declared Overwrite)",
	wire:        true,
	run: func(c *caseRun) {
		declared := c.target().DuplicateIDBehaviour()
		if declared == "" {
			c.lack(CapDuplicateIDBehaviour)
			c.notApplicable("missing harness capability " + string(CapDuplicateIDBehaviour) + ": the target declares no duplicate-id behaviour (capabilities document or --duplicate-id-behaviour)")
		}
		first := c.fixture(1)
		second := first.Clone()
		second.Content = json.RawMessage(`{"second":true}`)
		second.Tags = []string{"second"}
		c.mustStore(first)
		id2, err2 := c.store.Store(c.ctx, second)
		got, rerr := c.store.Retrieve(c.ctx, first.ID)
		if rerr != nil || got == nil {
			c.fatalf("retrieve after two stores under one id returned (%v, %v)", got != nil, rerr)
		}
		hits := c.visible([]uuid.UUID{first.ID})
		n := 0
		for _, h := range hits {
			if h.ID == first.ID {
				n++
			}
		}
		if c.check("duplicate-id/declared-behaviour") {
			switch declared {
			case DuplicateOverwrite:
				if err2 != nil || id2 != first.ID {
					c.failf("declared Overwrite, but the second store returned (%s, %v)", id2, err2)
				}
				if !memory.JSONEqual(got.ContentJSON(), second.ContentJSON()) {
					c.failf("declared Overwrite, but retrieve returned content %s, not the second write's", short(got.ContentJSON()))
				}
				if n != 1 {
					c.failf("declared Overwrite, but search found %d records under the id", n)
				}
			case DuplicateReject:
				if !isAdapterError(err2) || id2 != uuid.Nil {
					c.failf("declared Reject, but the second store returned (%s, %v), want (nil UUID, MemoryAdapterError)", id2, err2)
				}
				if !memory.JSONEqual(got.ContentJSON(), first.ContentJSON()) {
					c.failf("declared Reject, but retrieve returned content %s, not the first write's", short(got.ContentJSON()))
				}
			case DuplicateDuplicate:
				if err2 != nil {
					c.failf("declared Duplicate, but the second store failed: %v", err2)
				}
				if n != 2 {
					c.failf("declared Duplicate, but search found %d records under the id, want 2", n)
				}
			default:
				c.failf("declared duplicate-id behaviour %q is none of Overwrite, Reject, Duplicate", truncateString(declared, 64))
			}
		}
		c.notef("declared %s observed", declared)
	},
}

// authProbe is one data endpoint request that must be refused without the right token. The
// store request carries an invalid item, so that a server that does not check the token
// answers 400 and writes nothing.
type authProbe struct {
	method, path string
	body         []byte
}

var caseAuthentication = Case{
	ID:          CaseAuthentication,
	Title:       "Authentication",
	Description: "every data endpoint answers 401 unauthorized (problem+json) to a request without a token and to one with a wrong token",
	Hint:        "a route is registered outside the token check, or the token comparison accepts any or no Authorization header",
	wire:        true,
	readOnly:    true,
	run: func(c *caseRun) {
		w := c.target()
		if !w.HasToken() {
			c.lack(CapToken)
			c.notApplicable("missing " + string(CapToken) + ": the run was given no token for the target (--token-file), so an open server cannot be told from a checking one")
		}
		probes := []authProbe{
			{http.MethodGet, "/v1/manifest", nil},
			{http.MethodPost, "/v1/items", []byte(`{}`)},
			{http.MethodGet, "/v1/items/" + uuid.NewString(), nil},
			{http.MethodPost, "/v1/search", []byte(`{"limit":1}`)},
			{http.MethodGet, "/v1/evidence", nil},
		}
		if c.check("authentication/unauthorized") {
			if status, _, _, err := w.Exchange(c.ctx, http.MethodGet, "/v1/manifest", nil, "token"); err != nil || status != http.StatusOK {
				c.fatalf("control: GET /v1/manifest with the token answered %d (%v), want 200", status, err)
			}
			for _, p := range probes {
				for _, auth := range []string{"none", "wrong"} {
					status, mt, body, err := w.Exchange(c.ctx, p.method, p.path, p.body, auth)
					if err != nil {
						c.failf("%s %s with %s token: %v", p.method, p.path, auth, err)
						continue
					}
					var prob memory.Problem
					perr := json.Unmarshal(body, &prob)
					if status != http.StatusUnauthorized || !isProblemJSON(mt) || perr != nil || prob.Type != memory.ProblemUnauthorized {
						c.failf("%s %s with %s token answered %d %s type %q, want 401 application/problem+json unauthorized", p.method, p.path, auth, status, mt, prob.Type)
					}
				}
			}
		}
		c.notef("%d data endpoints answer 401 without a token and with a wrong one", len(probes))
	},
}

func isProblemJSON(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	return err == nil && mt == "application/problem+json"
}

var caseManifestStable = Case{
	ID:          CaseManifestStable,
	Title:       "Manifest stable",
	Description: "every GET /v1/manifest of the run returns the same manifest, and the evidence names its manifest_hash in the canonical form",
	Hint:        "the server rebuilds its manifest per request or after a change of configuration, or computes manifest_hash over another serialisation than the canonical one",
	wire:        true,
	readOnly:    true,
	run: func(c *caseRun) {
		w := c.target()
		if c.check("manifest-stable/identical-reads") {
			if _, _, _, err := w.Exchange(c.ctx, http.MethodGet, "/v1/manifest", nil, "token"); err != nil {
				c.fatalf("GET /v1/manifest: %v", err)
			}
			reads := w.ManifestReads()
			for i, b := range reads {
				var m memory.Manifest
				if err := json.Unmarshal(b, &m); err != nil {
					c.failf("manifest read %d of %d does not decode: %v", i+1, len(reads), err)
					continue
				}
				if !m.Normalize().Equal(c.m) {
					c.failf("manifest read %d of %d is %s, not the %s the run started with", i+1, len(reads), m.Normalize().Hash(), c.m.Hash())
					break
				}
			}
			c.notef("%d manifest reads across the run are identical", len(reads))
		}
		if c.check("manifest-stable/evidence-hash") {
			status, _, body, err := w.Exchange(c.ctx, http.MethodGet, "/v1/evidence", nil, "token")
			var ev memory.EvidenceReport
			switch {
			case err != nil:
				c.failf("GET /v1/evidence: %v", err)
			case status != http.StatusOK:
				c.failf("GET /v1/evidence answered %d", status)
			case json.Unmarshal(body, &ev) != nil:
				c.failf("GET /v1/evidence answered an undecodable body %s", short(body))
			case ev.ManifestHash != c.m.Hash() || ev.Adapter != c.m.Adapter:
				c.failf("the evidence names adapter %q manifest_hash %q, but the canonical hash of the published manifest is %s (adapter %q)",
					truncateString(ev.Adapter, 64), truncateString(ev.ManifestHash, 80), c.m.Hash(), c.m.Adapter)
			default:
				c.notef("the evidence names %s", fmt.Sprint(c.m.Hash()))
			}
		}
	},
}
