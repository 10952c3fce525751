package render

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func accessAdapter(grants ...memoryv1alpha1.ServiceAccountAccess) *memoryv1alpha1.MemoryAdapter {
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mem", UID: "uid-1"}}
	if grants != nil {
		ma.Spec.Access = &memoryv1alpha1.AccessSpec{ServiceAccounts: grants}
	}
	return ma
}

// TestPlanTokensWithAccess: each ServiceAccount's token differs from the adapter's and from
// every other's; the token file lists them by digest with their grants, after the adapter's
// own tokens (read-only in the verification sub-scope), and ends with a check token that
// changes with the grants.
func TestPlanTokensWithAccess(t *testing.T) {
	key := []byte(strings.Repeat("k", MinTokenKeyBytes))
	now := time.Unix(1_800_000_000, 0)
	ma := accessAdapter(
		memoryv1alpha1.ServiceAccountAccess{Name: "recaller", Rights: memoryv1alpha1.AccessReadOnly, SubScope: "plans"},
		memoryv1alpha1.ServiceAccountAccess{Name: "planner", Rights: memoryv1alpha1.AccessReadWrite, SubScope: "plans"},
		memoryv1alpha1.ServiceAccountAccess{Name: "scratch", Rights: memoryv1alpha1.AccessReadWrite},
	)
	p := PlanTokens(key, ma, "", false, now)
	if got := []string{p.Access[0].ServiceAccount, p.Access[1].ServiceAccount, p.Access[2].ServiceAccount}; !slices.Equal(got, []string{"planner", "recaller", "scratch"}) {
		t.Fatalf("access tokens in order %v", got)
	}
	seen := map[string]bool{p.Current: true}
	for _, a := range p.Access {
		if seen[a.Token] {
			t.Errorf("%s's token repeats another", a.ServiceAccount)
		}
		seen[a.Token] = true
	}
	digest := func(tok string) string { s := sha256.Sum256([]byte(tok)); return "sha256:" + hex.EncodeToString(s[:]) }
	file := strings.Split(strings.TrimSpace(string(BindingData(ma, p, nil)[AcceptedTokensKey])), "\n")
	want := []string{
		p.Current + " read-only sub-scope=" + VerificationSubScope,
		digest(p.Access[0].Token) + " sub-scope=plans",
		digest(p.Access[1].Token) + " read-only sub-scope=plans",
		digest(p.Access[2].Token),
		p.AccessCheck + " read-only sub-scope=" + VerificationSubScope,
	}
	if !slices.Equal(file, want) {
		t.Errorf("token file\n%s\nwant\n%s", strings.Join(file, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range p.Access {
		if strings.Contains(strings.Join(file, "\n"), a.Token) {
			t.Errorf("the token file holds %s's token itself", a.ServiceAccount)
		}
		d := AccessBindingData(ma, a, nil)
		if string(d["token"]) != a.Token || d[AcceptedTokensKey] != nil {
			t.Errorf("%s's Secret: %v", a.ServiceAccount, d)
		}
	}

	// A rotation renews every ServiceAccount's token with the adapter's: while it is pending
	// the file accepts both rotations' tokens, and the Secrets keep the current one.
	rotating := ma.DeepCopy()
	rotating.Status.Token = p.Status
	rotating.Spec.Token = &memoryv1alpha1.TokenSpec{Rotation: "r2"}
	step := PlanTokens(key, rotating, "", true, now)
	if step.Next == "" || step.Access[0].Token != p.Access[0].Token {
		t.Fatalf("a pending rotation: next %q, planner's token changed %v", step.Next, step.Access[0].Token != p.Access[0].Token)
	}
	r2 := digest(DeriveAccessToken(key, rotating, "r2", "planner")) + " sub-scope=plans"
	if !slices.Contains(step.AccessLines, r2) || !slices.Contains(step.AccessLines, digest(p.Access[0].Token)+" sub-scope=plans") {
		t.Errorf("pending rotation lines %v lack the planner's current or next token", step.AccessLines)
	}
	rotating.Status.Token = step.Status
	switched := PlanTokens(key, rotating, step.Next, true, now)
	if !switched.Switched || switched.Access[0].Token != DeriveAccessToken(key, rotating, "r2", "planner") {
		t.Errorf("after the switch the planner's Secret holds %q", switched.Access[0].Token)
	}

	changed := ma.DeepCopy()
	changed.Spec.Access.ServiceAccounts[0].Rights = memoryv1alpha1.AccessReadWrite
	if q := PlanTokens(key, changed, "", false, now); q.AccessCheck == p.AccessCheck {
		t.Error("the check token did not change with a grant's rights")
	}
	if q := PlanTokens(key, accessAdapter(), "", false, now); q.AccessCheck != "" || q.AccessLines != nil ||
		string(BindingData(accessAdapter(), q, nil)[AcceptedTokensKey]) != q.Current+"\n" {
		t.Errorf("without access: check %q, lines %v", q.AccessCheck, q.AccessLines)
	}
}

func TestGovernanceArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		retention *memoryv1alpha1.RetentionSpec
		quota     *memoryv1alpha1.QuotaSpec
		want      []string
	}{
		"neither":   {want: nil},
		"retention": {retention: &memoryv1alpha1.RetentionSpec{MaxAge: memoryv1alpha1.NewDuration(720 * time.Hour), MaxItems: ptr.To[int64](1000), SweepPeriod: memoryv1alpha1.NewDuration(30 * time.Second)}, want: []string{"--retention-max-age", "720h0m0s", "--retention-max-items", "1000", "--retention-sweep-period", "30s"}},
		"quota": {quota: &memoryv1alpha1.QuotaSpec{MaxItems: ptr.To[int64](5), MaxBytes: ptr.To[int64](1 << 20), WritesPerSecond: ptr.To[int32](10), WriteBurst: ptr.To[int32](20)},
			want: []string{"--quota-max-items", "5", "--quota-max-bytes", "1048576", "--quota-write-rate", "10", "--quota-write-burst", "20"}},
	} {
		t.Run(name, func(t *testing.T) {
			ma := accessAdapter()
			ma.Spec.Retention, ma.Spec.Quota = tc.retention, tc.quota
			if got := GovernanceArgs(ma); !slices.Equal(got, tc.want) {
				t.Errorf("GovernanceArgs = %q, want %q", got, tc.want)
			}
		})
	}
}
