package render

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func TestDeriveToken(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MinTokenKeyBytes)
	other := bytes.Repeat([]byte{8}, MinTokenKeyBytes)
	ma := func(ns, name, uid string) *memoryv1alpha1.MemoryAdapter {
		return &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	}
	base := DeriveToken(key, ma("ns", "mem", "u1"), "")
	if len(base) != 64 {
		t.Fatalf("token has %d characters, want 64 hex", len(base))
	}
	if again := DeriveToken(key, ma("ns", "mem", "u1"), ""); again != base {
		t.Fatalf("the same adapter got two tokens")
	}
	for name, tc := range map[string]struct {
		key []byte
		ma  *memoryv1alpha1.MemoryAdapter
	}{
		"recreated adapter (new UID)": {key, ma("ns", "mem", "u2")},
		"other namespace":             {key, ma("ns2", "mem", "u1")},
		"other name":                  {key, ma("ns", "mem2", "u1")},
		"name and namespace shifted":  {key, ma("n", "smem", "u1")},
		"other operator key":          {other, ma("ns", "mem", "u1")},
	} {
		if got := DeriveToken(tc.key, tc.ma, ""); got == base {
			t.Errorf("%s: same token as the base adapter", name)
		}
	}
	if DeriveToken(key, ma("ns", "mem", "u1"), "r1") == base {
		t.Error("a rotation kept the token")
	}
	if DeriveToken(key, ma("ns", "mem", "u1"), "r1") == DeriveToken(key, ma("ns", "mem", "u1"), "r2") {
		t.Error("two rotations share a token")
	}
}

func TestBindingDigestFollowsContent(t *testing.T) {
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mem", UID: "u1"}}
	ca := []byte("ca one")
	t1 := TokenPlan{Current: "t1", Accepted: []string{"t1"}}
	t2 := TokenPlan{Current: "t2", Accepted: []string{"t2"}}
	d := BindingDigest(ma, t1, ca)
	if BindingDigest(ma, t1, ca) != d {
		t.Fatal("digest is not stable")
	}
	if BindingDigest(ma, t2, ca) == d {
		t.Fatal("a new token must be applied again")
	}
	if BindingDigest(ma, TokenPlan{Current: "t1", Accepted: []string{"t1", "t2"}}, ca) == d {
		t.Fatal("a token the adapter must accept too must be applied again")
	}
	if BindingDigest(ma, t1, []byte("ca two")) == d {
		t.Fatal("a new CA must be applied again")
	}
	moved := ma.DeepCopy()
	moved.UID = "u2"
	if BindingDigest(moved, t1, ca) == d {
		t.Fatal("a recreated adapter must be applied again")
	}
	plain := ma.DeepCopy()
	plain.Spec.TLS = &memoryv1alpha1.TLSSpec{Mode: memoryv1alpha1.TLSDisabled}
	if BindingDigest(plain, t1, ca) == d {
		t.Fatal("opting out of TLS changes the URL and drops ca.crt: it must be applied again")
	}
}

func TestBindingDataFollowsTheTLSMode(t *testing.T) {
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mem"}}
	d := BindingData(ma, TokenPlan{Current: "tok", Accepted: []string{"tok"}}, []byte("PEM"))
	if string(d["url"]) != "https://mem.team.svc:8080" || string(d["ca.crt"]) != "PEM" {
		t.Fatalf("TLS by default: url %q, ca.crt %q", d["url"], d["ca.crt"])
	}
	ma.Spec.TLS = &memoryv1alpha1.TLSSpec{Mode: memoryv1alpha1.TLSDisabled}
	d = BindingData(ma, TokenPlan{Current: "tok", Accepted: []string{"tok"}}, []byte("PEM"))
	if _, has := d["ca.crt"]; has || string(d["url"]) != "http://mem.team.svc:8080" {
		t.Fatalf("TLS disabled: url %q, ca.crt present %v", d["url"], has)
	}
}
