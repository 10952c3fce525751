package memoryadapter

import (
	"context"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/test/toybackend"
)

// crdName is the MemoryAdapter CRD.
const crdName = "memoryadapters.memory.agentmem.io"

// setBackendTypes rewrites the CRD's enum of spec.backend.type, as the walkthrough's enum line
// and `make manifests` would, and returns the enum it replaced.
func setBackendTypes(ctx context.Context, types func([]any) []any) []any {
	var old []any
	Eventually(func(g Gomega) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		g.Expect(err).NotTo(HaveOccurred())
		path := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "backend", "properties", "type", "enum"}
		for i, v := range versions {
			enum, found, err := unstructured.NestedSlice(v.(map[string]any), path...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue(), "the CRD has no enum of spec.backend.type")
			old = enum
			g.Expect(unstructured.SetNestedSlice(v.(map[string]any), types(slices.Clone(enum)), path...)).To(Succeed())
			versions[i] = v
		}
		g.Expect(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")).To(Succeed())
		g.Expect(k8sClient.Update(ctx, crd)).To(Succeed())
	}, timeout, poll).Should(Succeed())
	return old
}

var _ = Describe("a backend added as docs/development.md walks it", Ordered, func() {
	var (
		ctx      context.Context
		stopMgr  func()
		ns       string
		key      types.NamespacedName
		original []any
	)

	BeforeAll(func() {
		ctx = context.Background()
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-toy-"}}
		Expect(k8sClient.Create(ctx, nsObj)).To(Succeed())
		ns = nsObj.Name
		key = types.NamespacedName{Namespace: ns, Name: "toy"}
		// The toy package registered itself when this test binary started (its import above);
		// the CRD learns its type, and a type no package registered, as the enum line adds them.
		original = setBackendTypes(ctx, func(enum []any) []any { return append(enum, string(toybackend.Type), "Ghost") })
		// The toy's pods never run here: its evidence is the fixed one of a healthy adapter
		// publishing the sample manifest, so the first conformance run starts.
		stopMgr = startManagerWith(rest.CopyConfig(managerCfg), fixedEvidence{})
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
		setBackendTypes(ctx, func([]any) []any { return original })
	})

	It("deploys the toy with its own flags, environment, lifecycle and purge finalizer", func() {
		Eventually(func() error {
			return k8sClient.Create(ctx, sharedServerAdapter(ns, key.Name, toybackend.Type, memoryv1alpha1.DeletionDelete))
		}, timeout, poll).Should(Succeed(), "the API server takes the new type once the CRD lists it")
		Eventually(func(g Gomega) {
			dep := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
			c := dep.Spec.Template.Spec.Containers[0]
			args := strings.Join(c.Args, " ")
			g.Expect(args).To(HavePrefix("serve --backend toy "))
			g.Expect(c.Args).To(ContainElement("--toy-greeting=" + toybackend.Greeting))
			g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "TOY_MODE", Value: "demo"}))
			g.Expect(c.Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.LocalObjectReference.Name", "toy-dsn")), "the connection Secret by reference")
			g.Expect(dep.Spec.Template.Spec.Volumes).NotTo(ContainElement(HaveField("Name", "data")), "the toy keeps no data volume")

			ma := getMA(key)
			g.Expect(ma.Finalizers).To(ContainElement(FinalizerPurgeScope), "the toy has a purge")
			g.Expect(ma.Status.Lifecycle).NotTo(BeNil())
			g.Expect(ma.Status.Lifecycle.RequestTimeout.Or(0).String()).To(Equal("7s"), "status.lifecycle is the toy's documented one")
			g.Expect(ma.Status.Lifecycle.ConnectTimeout.Or(0).String()).To(Equal("11s"))
			g.Expect(conditionOf(ma, memoryv1alpha1.ConditionDeployed).Reason).NotTo(Equal(memoryv1alpha1.ReasonInvalidSpec))
		}, timeout, poll).Should(Succeed())

		markAvailable(ctx, key)
		job := waitForNewJob(ctx, key)
		c := job.Spec.Template.Spec.Containers[0]
		Expect(strings.Join(c.Args, " ")).To(HavePrefix("conformance --backend toy "))
		Expect(c.Args).To(ContainElement("--toy-greeting=" + toybackend.Greeting + "-run"))
		Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "TOY_MODE", Value: "demo"}))
	})

	It("purges the toy's scope with its own purge when the adapter is deleted", func() {
		Expect(k8sClient.Delete(ctx, getMA(key))).To(Succeed())
		job := purgeJob(ctx, key, "")
		Expect(strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")).To(HavePrefix("purge --backend toy --scope agents-toy "))
		finishJob(ctx, job, []byte(`{"backend":"toy","scope":"agents-toy","deleted":0}`), true)
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &memoryv1alpha1.MemoryAdapter{}))).To(BeTrue(), "the adapter is gone")
		}, timeout, poll).Should(Succeed())
	})

	It("refuses a type the API admits but no package registered, naming the ones it has", func() {
		gk := types.NamespacedName{Namespace: ns, Name: "ghost"}
		Eventually(func() error {
			return k8sClient.Create(ctx, sharedServerAdapter(ns, gk.Name, "Ghost", ""))
		}, timeout, poll).Should(Succeed())
		Eventually(func(g Gomega) {
			c := conditionOf(getMA(gk), memoryv1alpha1.ConditionDeployed)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(memoryv1alpha1.ReasonInvalidSpec))
			g.Expect(c.Message).To(ContainSubstring("spec.backend.type Ghost is not a backend this operator is built with"))
			g.Expect(c.Message).To(ContainSubstring("Postgres"))
			g.Expect(c.Message).To(ContainSubstring("Toy"))
		}, timeout, poll).Should(Succeed())
		Expect(k8sClient.Delete(ctx, getMA(gk))).To(Succeed())
	})
})
