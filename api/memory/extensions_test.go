package memory

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const baseWire = `"adapter":"a","native_item_fields":["id","created_at","metadata","content","tags"],` +
	`"dropped_item_fields":[],"supported_filters":[],"search_consistency":"immediate",` +
	`"retrieve_fidelity":"full","search_fidelity":"full","search_returns_tags":true,"preserves_metadata":true`

func TestExtensionsDecodeStrictly(t *testing.T) {
	gov := func(s string) string { return `{` + baseWire + `,"extensions":{"governance/v1":` + s + `}}` }
	tests := []struct {
		name, wire, wantErr string
	}{
		{"no extensions", `{` + baseWire + `}`, ""},
		{"empty extensions", `{` + baseWire + `,"extensions":{}}`, ""},
		{"claims", gov(`{"read_only":true,"isolation":false,"quota":{"max_items":6,"max_bytes":0,"writes_per_second":2,"write_burst":4}}`), ""},
		{"null extensions", `{` + baseWire + `,"extensions":null}`, "must be an object"},
		{"unknown extension", `{` + baseWire + `,"extensions":{"governance/v2":{}}}`, `unknown extension "governance/v2"`},
		{"unknown member", gov(`{"read_only":true,"isolation":true,"owner":"x"}`), "unknown field"},
		{"missing isolation", gov(`{"read_only":true}`), "read_only and isolation are required"},
		{"retention member missing", gov(`{"read_only":false,"isolation":false,"retention":{"max_age_seconds":5,"max_items":0}}`), "are required"},
		{"float", gov(`{"read_only":false,"isolation":false,"quota":{"max_items":1.5,"max_bytes":0,"writes_per_second":0,"write_burst":0}}`), "cannot unmarshal"},
		{"string bool", gov(`{"read_only":"yes","isolation":false}`), "cannot unmarshal"},
		{"null governance", gov(`null`), "must be an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var m Manifest
			err := json.Unmarshal([]byte(tc.wire), &m)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(m.Validate()).To(Succeed())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

func TestGovernanceNormalizesAwayWhatClaimsNothing(t *testing.T) {
	g := NewWithT(t)
	base := fullManifest()
	empty := base.WithGovernance(&GovernanceV1{Retention: &GovernanceRetention{SweepPeriodSeconds: 60}, Quota: &GovernanceQuota{}})
	g.Expect(empty.Extensions).To(BeNil())
	g.Expect(base.WithGovernance(nil).Hash()).To(Equal(base.Hash()))
	// An extension object the decoder accepted but that claims nothing hashes as the base.
	zero := base
	zero.Extensions = &Extensions{Governance: &GovernanceV1{Quota: &GovernanceQuota{}}}
	g.Expect(zero.Hash()).To(Equal(base.Hash()))
	g.Expect(zero.Equal(base)).To(BeTrue())

	ro := base.WithGovernance(&GovernanceV1{ReadOnly: true})
	g.Expect(ro.Hash()).NotTo(Equal(base.Hash()))
	g.Expect(ro.Equal(base)).To(BeFalse())
	g.Expect(ro.Diff(base)).To(ConsistOf(ContainSubstring("extensions:")))
	b, err := json.Marshal(ro)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(HaveSuffix(`"preserves_metadata":true,"extensions":{"governance/v1":{"read_only":true,"isolation":false}}}`))
	quota := base.WithGovernance(&GovernanceV1{Quota: &GovernanceQuota{MaxItems: 6}})
	g.Expect(quota.Equal(base.WithGovernance(&GovernanceV1{Quota: &GovernanceQuota{MaxItems: 7}}))).To(BeFalse())
	g.Expect(quota.Governance().Quota.MaxItems).To(Equal(int64(6)))
	g.Expect(base.Governance()).To(BeNil())
}

func TestGovernanceValidateBounds(t *testing.T) {
	g := NewWithT(t)
	bad := fullManifest().WithGovernance(&GovernanceV1{Quota: &GovernanceQuota{MaxItems: -1, WriteBurst: 3}})
	err := bad.Validate()
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Count(err.Error(), "governance/v1")).To(Equal(2), err.Error())
	g.Expect(err.Error()).To(ContainSubstring("write_burst: needs writes_per_second"))
	tooOld := fullManifest().WithGovernance(&GovernanceV1{Retention: &GovernanceRetention{MaxAgeSeconds: MaxGovernanceSeconds + 1}})
	g.Expect(tooOld.Validate()).To(MatchError(ContainSubstring("max_age_seconds: must be 0 to")))
}
