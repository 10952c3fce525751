package apitest

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/conformance"
)

var _ = Describe("MemoryAdapter status", func() {
	It("uses the conformance suite's case ids and outcomes", func() {
		var suiteIDs []v1alpha1.ConformanceCaseID
		for _, id := range conformance.CaseIDs() {
			suiteIDs = append(suiteIDs, v1alpha1.ConformanceCaseID(id))
		}
		Expect(v1alpha1.AllConformanceCaseIDs).To(Equal(suiteIDs))
		Expect([]v1alpha1.ConformanceOutcome{v1alpha1.OutcomePassed, v1alpha1.OutcomeFailed, v1alpha1.OutcomeNotApplicable}).To(Equal(
			[]v1alpha1.ConformanceOutcome{v1alpha1.ConformanceOutcome(conformance.Passed), v1alpha1.ConformanceOutcome(conformance.Failed), v1alpha1.ConformanceOutcome(conformance.NotApplicable)}))
	})

	It("holds a full conformance result and evidence, and rejects an unknown case id", func() {
		ns := newNamespace()
		a := newAdapter(ns, fullManifest())
		Expect(k8sClient.Create(ctx, a)).To(Succeed())

		now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		result := &v1alpha1.ConformanceResult{
			JobName:        "madp-conformance-0123456789",
			ManifestHash:   a.Spec.Manifest.Hash(),
			ServiceVersion: "3.46.1",
			AdapterVersion: "v0.1.0",
			CompletionTime: now,
		}
		for i, id := range v1alpha1.AllConformanceCaseIDs {
			c := v1alpha1.ConformanceCaseResult{ID: id, Outcome: v1alpha1.OutcomePassed}
			switch {
			case id == v1alpha1.CaseWrongNativeKind:
				c.Outcome, c.Message = v1alpha1.OutcomeNotApplicable, "One record kind"
				result.NotApplicable++
			case i == 3:
				c.Outcome, c.Message = v1alpha1.OutcomeFailed, "Retrieve of an unknown id returned an empty item"
				result.Failed++
			default:
				result.Passed++
			}
			result.Cases = append(result.Cases, c)
		}
		for _, id := range v1alpha1.AllConformanceProfileIDs {
			result.Profiles = append(result.Profiles, v1alpha1.ConformanceProfileResult{ID: id, Outcome: v1alpha1.OutcomePassed})
		}
		a.Status = v1alpha1.MemoryAdapterStatus{
			ObservedGeneration: a.Generation,
			ServiceVersion:     "3.46.1",
			AdapterVersion:     "v0.1.0",
			ManifestHash:       a.Spec.Manifest.Hash(),
			Conformance:        result,
			Evidence: &v1alpha1.EvidenceStatus{
				ObservedTime:   now,
				Verdict:        v1alpha1.EvidenceInvalid,
				ServiceVersion: "3.47.0",
				ManifestHash:   a.Spec.Manifest.Hash(),
				IndexLag:       ptr.To[int64](1500),
				FailedProbes:   []string{"search-index"},
				Message:        "Service version changed since the passing run",
				QuotaUsage: []v1alpha1.ScopeQuotaUsage{
					{Scope: "agents", ItemsPercent: ptr.To[int32](100), BytesPercent: ptr.To[int32](3)},
					{Scope: "agents~plans", ItemsPercent: ptr.To[int32](40)},
				},
			},
		}
		Expect(k8sClient.Status().Update(ctx, a)).To(Succeed())
		got := &v1alpha1.MemoryAdapter{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), got)).To(Succeed())
		Expect(got.Status).To(Equal(a.Status))
		Expect(got.Status.Conformance.Cases).To(HaveLen(17))

		bad := got.DeepCopy()
		bad.Status.Conformance.Cases[0].ID = "made-up"
		err := k8sClient.Status().Update(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`Unsupported value: "made-up"`))

		bad = got.DeepCopy()
		bad.Status.Conformance.Profiles[0].ID = "made-up-profile"
		err = k8sClient.Status().Update(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`Unsupported value: "made-up-profile"`))

		bad = got.DeepCopy()
		bad.Status.Evidence.QuotaUsage[0].ItemsPercent = ptr.To[int32](10001)
		err = k8sClient.Status().Update(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("itemsPercent"))

		bad = got.DeepCopy()
		bad.Status.ManifestHash = "md5:abc"
		err = k8sClient.Status().Update(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("status.manifestHash"))
	})
})
