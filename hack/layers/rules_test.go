package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestForbidden(t *testing.T) {
	tests := []struct {
		pkg, dep string
		ok       bool
	}{
		{"api/v1alpha1", "api/memory", true},
		{"api/v1alpha1", "conformance", false},
		{"api/memory", "adapters/inmemory", false},
		{"conformance", "api/memory", true},
		{"conformance", "conformance/fake", true},
		{"conformance", "api/v1alpha1", false},
		{"conformance/fake", "adapters/inmemory", false},
		{"adapters/sqlite", "adapters/internal/relstore", true},
		{"adapters/postgres", "adapters/postgres/internal/x", true},
		{"adapters/postgres", "adapters/backend", true},
		{"adapters/backend", "adapters/postgres", false},
		{"adapters/backend", "internal/server", false},
		{"adapters/backend", "conformance", true},
		{"internal/controller/memoryadapter/render", "adapters/backend", true},
		{"adapters/redis", "adapters/inmemory", false},
		{"adapters/storetest", "adapters/inmemory", false},
		{"adapters/storetest", "conformance", true},
		{"adapters/remote", "internal/server", false},
		{"adapters/sqlite", "internal/controller", false},
		{"internal/server", "adapters/inmemory", false},
		{"internal/controller", "api/v1alpha1", true},
		{"internal/controller", "adapters/remote", true},
		{"internal/webhook", "cmd/memory-adapter", false},
		{"cmd", "adapters/sqlite/sqlitedeploy", true},
		{"cmd", "adapters/sqlite", false},
		{"internal/controller/memoryadapter", "adapters/postgres/postgresdeploy", true},
		{"internal/controller/memoryadapter", "adapters/postgres", false},
		{"internal/controller/memoryadapter", "adapters/internal/relstore", false},
		{"internal/controller/memoryadapter", "adapters/redis/sqlitedeploy", false},
		{"internal/webhook", "adapters/khive", false},
		{"cmd/memory-adapter", "adapters/sqlite", true},
		{"internal/server/wireharness", "conformance", true},
		{"cmd/memory-adapter", "adapters/inmemory", true},
		{"hack/perf/wireload", "adapters/inmemory", true},
		{"hack/tools/kal", "adapters/inmemory", false},
		{"cmd/memory-adapter", "internal/server", true},
		{"internal/server", "test/api/manifestcases", false},
		{"test/api/manifestcases", "api/v1alpha1", true},
	}
	for _, tt := range tests {
		t.Run(tt.pkg+"->"+tt.dep, func(t *testing.T) {
			why := forbidden(tt.pkg, tt.dep)
			if tt.ok {
				NewWithT(t).Expect(why).To(BeEmpty())
			} else {
				NewWithT(t).Expect(why).NotTo(BeEmpty())
			}
		})
	}
}

func TestViolationsIgnoreOtherModules(t *testing.T) {
	g := NewWithT(t)
	const mod = "example.com/m"
	g.Expect(violations(mod, "example.com/m/api/memory", []string{"fmt", "example.com/other/cmd", "example.com/m/api/x"})).To(BeEmpty())
	g.Expect(violations(mod, "example.com/m/api/memory", []string{"example.com/m/internal/server"})).To(
		ConsistOf("api/memory imports internal/server: api imports nothing of the module outside api"))
	g.Expect(violations(mod, "example.com/other/api", []string{"example.com/m/cmd"})).To(BeEmpty())
}

func TestContractAndRequirementsStayFreeOfKubernetes(t *testing.T) {
	g := NewWithT(t)
	const mod = "example.com/m"
	g.Expect(violations(mod, "example.com/m/api/requirements", []string{"fmt", "k8s.io/apimachinery/pkg/util/sets"})).To(
		ConsistOf("api/requirements imports k8s.io/apimachinery/pkg/util/sets: the contract and the requirements language import nothing from Kubernetes"))
	g.Expect(violations(mod, "example.com/m/api/memory", []string{"sigs.k8s.io/yaml"})).To(HaveLen(1))
	g.Expect(violations(mod, "example.com/m/api/v1alpha1", []string{"k8s.io/apimachinery/pkg/apis/meta/v1"})).To(BeEmpty())
}

func TestControllerPureRoomsHoldNoClient(t *testing.T) {
	g := NewWithT(t)
	const mod = "example.com/m"
	g.Expect(violations(mod, "example.com/m/internal/controller/memoryadapter/render", []string{"sigs.k8s.io/controller-runtime/pkg/client"})).To(
		ConsistOf("internal/controller/memoryadapter/render imports sigs.k8s.io/controller-runtime/pkg/client: the controller's pure rooms build values; they hold no client and talk to no API server"))
	g.Expect(violations(mod, "example.com/m/internal/controller/memoryadapter/cond", []string{"k8s.io/client-go/kubernetes"})).To(HaveLen(1))
	g.Expect(violations(mod, "example.com/m/internal/controller/memoryadapter/render", []string{"k8s.io/client-go/applyconfigurations/core/v1", "k8s.io/client-go/rest", "sigs.k8s.io/controller-runtime/pkg/scheme"})).To(BeEmpty())
	g.Expect(violations(mod, "example.com/m/internal/controller/memoryadapter/health", []string{"sigs.k8s.io/controller-runtime/pkg/event"})).To(BeEmpty())
}
