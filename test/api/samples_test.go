package apitest

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/agentmem/memory-adapter-operator/api/requirements"
	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

var _ = Describe("config/samples", func() {
	samplesDir := filepath.Join("..", "..", "config", "samples")

	// sampleFiles reads the kustomization, so a sample missing from it (and so from
	// `kubectl apply -k`) is noticed too.
	sampleFiles := func() []string {
		b, err := os.ReadFile(filepath.Join(samplesDir, "Kustomization"))
		Expect(err).NotTo(HaveOccurred())
		var k struct {
			APIVersion string   `json:"apiVersion"`
			Kind       string   `json:"kind"`
			Resources  []string `json:"resources"`
		}
		Expect(yaml.UnmarshalStrict(b, &k, yaml.DisallowUnknownFields)).To(Succeed())
		onDisk, err := filepath.Glob(filepath.Join(samplesDir, "memory_v1alpha1_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var listed []string
		for _, r := range k.Resources {
			listed = append(listed, filepath.Join(samplesDir, r))
		}
		Expect(listed).To(ConsistOf(onDisk), "the Kustomization must list every sample")
		extra, err := filepath.Glob(filepath.Join(samplesDir, "extra", "memory_v1alpha1_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		return append(listed, extra...)
	}

	It("has one sample per backend type, each passing a server-side dry-run", func() {
		ns := newNamespace()
		types := map[string]bool{}
		for _, f := range sampleFiles() {
			b, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b)).To(MatchRegexp(`(?m)^#`), "%s must explain itself in comments", f)

			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(b, &u.Object)).To(Succeed(), f)
			Expect(u.GroupVersionKind()).To(Equal(v1alpha1.GroupVersion.WithKind("MemoryAdapter")), f)
			u.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))).To(Succeed(), f)

			// The sample must also decode into the Go types and carry a coherent manifest.
			typed := &v1alpha1.MemoryAdapter{}
			Expect(yaml.UnmarshalStrict(b, typed)).To(Succeed(), f)
			Expect(typed.Spec.Manifest.Validate()).To(Succeed(), f)
			types[string(typed.Spec.Backend.Type)] = true
		}
		Expect(types).To(Equal(map[string]bool{
			string(v1alpha1.BackendSQLite): true, string(v1alpha1.BackendPostgres): true, string(v1alpha1.BackendRedis): true,
			string(v1alpha1.BackendKhive): true, string(v1alpha1.BackendExternal): true,
		}))
	})

	It("applies as a folder with kubectl apply -f and -k (server-side dry-run)", func() {
		for _, args := range [][]string{{"-f", samplesDir}, {"-k", samplesDir}} {
			out, err := kubectl(append([]string{"apply", "--dry-run=server", "-n", newNamespace()}, args...)...)
			Expect(err).NotTo(HaveOccurred(), "kubectl apply %v:\n%s", args, out)
			Expect(out).To(ContainSubstring("memoryadapter.memory.agentmem.io/sqlite-memory created (server dry run)"), "kubectl apply %v", args)
		}
	})

	It("has a gated agent Job whose pod names the SQLite sample and states parseable requirements it meets", func() {
		f := filepath.Join(samplesDir, "agent_gated_job.yaml")
		b, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(MatchRegexp(`(?m)^#`), "%s must explain itself in comments", f)
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(b, &u.Object)).To(Succeed())
		u.SetNamespace(newNamespace())
		Expect(k8sClient.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))).To(Succeed())

		job := &batchv1.Job{}
		Expect(yaml.UnmarshalStrict(b, job)).To(Succeed())
		adapter := job.Spec.Template.Labels["memory.agentmem.io/adapter"]
		Expect(adapter).To(Equal("sqlite-memory"))
		reqs, err := requirements.Parse(job.Spec.Template.Annotations[requirements.AnnotationRequires])
		Expect(err).NotTo(HaveOccurred())
		sqlite := &v1alpha1.MemoryAdapter{}
		sb, err := os.ReadFile(filepath.Join(samplesDir, "memory_v1alpha1_memoryadapter_sqlite.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.UnmarshalStrict(sb, sqlite)).To(Succeed())
		Expect(sqlite.Name).To(Equal(adapter))
		Expect(reqs.Unmet(sqlite.Spec.Manifest.ToMemory())).To(BeEmpty(), "the sample agent must be releasable by the SQLite sample")
	})
})
