package render

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func TestPlanTokensStepsThroughARotation(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MinTokenKeyBytes)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	adapter := func(spec *memoryv1alpha1.TokenSpec, st *memoryv1alpha1.TokenStatus) *memoryv1alpha1.MemoryAdapter {
		ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mem", UID: "u1"}}
		ma.Spec.Token, ma.Status.Token = spec, st
		return ma
	}
	base := adapter(nil, nil)
	tok := func(rotation string) string { return DeriveToken(key, base, rotation) }
	rotate := func(r string, grace int32) *memoryv1alpha1.TokenSpec {
		return &memoryv1alpha1.TokenSpec{Rotation: r, GracePeriodSeconds: ptr.To(grace)}
	}

	for name, tc := range map[string]struct {
		ma           *memoryv1alpha1.MemoryAdapter
		nextAccepted string
		serving      bool
		current      string
		accepted     []string
		next         string
		status       memoryv1alpha1.TokenStatus
		switched     bool
		recheck      time.Duration
	}{
		"never rotated: the token the adapter was created with": {
			ma: base, serving: true,
			current: tok(""), accepted: []string{tok("")}, status: memoryv1alpha1.TokenStatus{},
		},
		"created with a rotation: no grace for a token nobody had": {
			ma: adapter(rotate("r1", 600), nil), serving: true,
			current: tok("r1"), accepted: []string{tok("r1")}, status: memoryv1alpha1.TokenStatus{Rotation: "r1"},
		},
		"a rotation asked for: the pods get the next token, the binding keeps the current one": {
			ma: adapter(rotate("r1", 600), &memoryv1alpha1.TokenStatus{}), serving: true,
			current: tok(""), next: tok("r1"), accepted: []string{tok(""), tok("r1")},
			status: memoryv1alpha1.TokenStatus{PendingRotation: "r1"},
		},
		"pending, and a pod still refuses the next token: nothing moves": {
			ma: adapter(rotate("r1", 600), &memoryv1alpha1.TokenStatus{PendingRotation: "r1"}), serving: true, nextAccepted: "",
			current: tok(""), next: tok("r1"), accepted: []string{tok(""), tok("r1")},
			status: memoryv1alpha1.TokenStatus{PendingRotation: "r1"},
		},
		"pending, and the pods accepted another token than this rotation's: nothing moves": {
			ma: adapter(rotate("r2", 600), &memoryv1alpha1.TokenStatus{PendingRotation: "r2"}), serving: true, nextAccepted: tok("r1"),
			current: tok(""), next: tok("r2"), accepted: []string{tok(""), tok("r2")},
			status: memoryv1alpha1.TokenStatus{PendingRotation: "r2"},
		},
		"every pod accepts the next token: the binding switches and the old one is kept for the grace": {
			ma: adapter(rotate("r1", 600), &memoryv1alpha1.TokenStatus{PendingRotation: "r1"}), serving: true, nextAccepted: tok("r1"),
			current: tok("r1"), accepted: []string{tok("r1"), tok("")}, switched: true, recheck: 600 * time.Second,
			status: memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousExpiresAt: at(600 * time.Second), RotatedAt: at(0)},
		},
		"no pod serves: nobody holds a token to lose, the binding switches": {
			ma: adapter(rotate("r1", 600), &memoryv1alpha1.TokenStatus{PendingRotation: "r1"}), serving: false,
			current: tok("r1"), accepted: []string{tok("r1"), tok("")}, switched: true, recheck: 600 * time.Second,
			status: memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousExpiresAt: at(600 * time.Second), RotatedAt: at(0)},
		},
		"a zero grace refuses the old token at once": {
			ma: adapter(rotate("r1", 0), &memoryv1alpha1.TokenStatus{PendingRotation: "r1"}), serving: true, nextAccepted: tok("r1"),
			current: tok("r1"), accepted: []string{tok("r1")}, switched: true,
			status: memoryv1alpha1.TokenStatus{Rotation: "r1", RotatedAt: at(0)},
		},
		"inside the grace: both accepted, a recheck at its end": {
			ma: adapter(rotate("r1", 600), &memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousExpiresAt: at(time.Minute)}), serving: true,
			current: tok("r1"), accepted: []string{tok("r1"), tok("")}, recheck: time.Minute,
			status: memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousExpiresAt: at(time.Minute)},
		},
		"the grace is over: only the new token": {
			ma: adapter(rotate("r1", 600), &memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousRotation: "r0", PreviousExpiresAt: at(0)}), serving: true,
			current: tok("r1"), accepted: []string{tok("r1")},
			status: memoryv1alpha1.TokenStatus{Rotation: "r1"},
		},
		"a rotation taken back before it switched (the field removed): pending dropped": {
			ma: adapter(nil, &memoryv1alpha1.TokenStatus{PendingRotation: "r1"}), serving: true,
			current: tok(""), accepted: []string{tok("")}, status: memoryv1alpha1.TokenStatus{},
		},
		"a second rotation inside the grace of the first: three tokens accepted until it switches": {
			ma: adapter(rotate("r2", 600), &memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousExpiresAt: at(time.Minute)}), serving: true,
			current: tok("r1"), next: tok("r2"), accepted: []string{tok("r1"), tok("r2"), tok("")}, recheck: time.Minute,
			status: memoryv1alpha1.TokenStatus{Rotation: "r1", PendingRotation: "r2", PreviousExpiresAt: at(time.Minute)},
		},
		"back to the previous rotation inside its grace: no token listed twice": {
			ma: adapter(rotate("r0", 600), &memoryv1alpha1.TokenStatus{Rotation: "r1", PreviousRotation: "r0", PreviousExpiresAt: at(time.Minute)}), serving: true,
			current: tok("r1"), next: tok("r0"), accepted: []string{tok("r1"), tok("r0")}, recheck: time.Minute,
			status: memoryv1alpha1.TokenStatus{Rotation: "r1", PendingRotation: "r0", PreviousRotation: "r0", PreviousExpiresAt: at(time.Minute)},
		},
		"the rotation field removed after a rotation: the current token stays": {
			ma: adapter(nil, &memoryv1alpha1.TokenStatus{Rotation: "r1"}), serving: true,
			current: tok("r1"), accepted: []string{tok("r1")}, status: memoryv1alpha1.TokenStatus{Rotation: "r1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := PlanTokens(key, tc.ma, tc.nextAccepted, tc.serving, now)
			if p.Current != tc.current || p.Next != tc.next || p.Switched != tc.switched || p.RecheckAfter != tc.recheck {
				t.Errorf("current %.8s next %.8s switched %v recheck %v; want %.8s %.8s %v %v",
					p.Current, p.Next, p.Switched, p.RecheckAfter, tc.current, tc.next, tc.switched, tc.recheck)
			}
			if len(p.Accepted) != len(tc.accepted) {
				t.Fatalf("accepted %d tokens, want %d", len(p.Accepted), len(tc.accepted))
			}
			for i := range p.Accepted {
				if p.Accepted[i] != tc.accepted[i] {
					t.Errorf("accepted[%d] = %.8s, want %.8s", i, p.Accepted[i], tc.accepted[i])
				}
			}
			if got := *p.Status; !got.PreviousExpiresAt.Equal(tc.status.PreviousExpiresAt) || !got.RotatedAt.Equal(tc.status.RotatedAt) ||
				got.Rotation != tc.status.Rotation || got.PendingRotation != tc.status.PendingRotation || got.PreviousRotation != tc.status.PreviousRotation {
				t.Errorf("status %+v, want %+v", got, tc.status)
			}
		})
	}
}

func TestPlanTokensLeavesTheAdapterUntouched(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MinTokenKeyBytes)
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mem", UID: "u1"}}
	ma.Spec.Token = &memoryv1alpha1.TokenSpec{Rotation: "r1"}
	ma.Status.Token = &memoryv1alpha1.TokenStatus{PendingRotation: "r1"}
	p := PlanTokens(key, ma, DeriveToken(key, ma, "r1"), true, time.Now())
	if !p.Switched || ma.Status.Token.Rotation != "" || ma.Status.Token.PendingRotation != "r1" {
		t.Fatalf("planTokens wrote into the adapter's status: %+v", ma.Status.Token)
	}
}
