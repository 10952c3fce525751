package apitest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/test/api/manifestcases"
)

var _ = Describe("MemoryAdapter admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	Context("the seed's coherence rules", func() {
		// One manifest per rule, each breaking that rule and no earlier one.
		incoherent := []struct {
			msg    string
			mutate func(m *v1alpha1.ManifestSpec)
		}{
			{memory.MsgFieldsDisjoint, func(m *v1alpha1.ManifestSpec) {
				m.DroppedItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldCreatedAt}
			}},
			{memory.MsgFieldsClassified, func(m *v1alpha1.ManifestSpec) {
				m.NativeItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldID, v1alpha1.ItemFieldMetadata, v1alpha1.ItemFieldContent, v1alpha1.ItemFieldTags}
			}},
			{memory.MsgRequiredNative, func(m *v1alpha1.ManifestSpec) {
				m.NativeItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldID, v1alpha1.ItemFieldCreatedAt, v1alpha1.ItemFieldMetadata, v1alpha1.ItemFieldContent}
				m.DroppedItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldTags}
			}},
			{memory.MsgMetadataNative, func(m *v1alpha1.ManifestSpec) {
				m.NativeItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldID, v1alpha1.ItemFieldCreatedAt, v1alpha1.ItemFieldContent, v1alpha1.ItemFieldTags}
				m.DroppedItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldMetadata}
			}},
			{memory.MsgFullRetrieve, func(m *v1alpha1.ManifestSpec) {
				m.PreservesMetadata = false
				m.SearchFidelity = v1alpha1.FidelityLossy
			}},
			{memory.MsgFullSearch, func(m *v1alpha1.ManifestSpec) {
				m.SearchReturnsTags = false
			}},
		}
		for i, tc := range incoherent {
			It(fmt.Sprintf("rejects rule %d at create with %q", i+1, tc.msg), func() {
				m := fullManifest()
				tc.mutate(&m)
				var ce *memory.CoherenceError
				Expect(errors.As(m.Validate(), &ce)).To(BeTrue(), "the fixture must be incoherent in Go too")
				Expect(ce.Rule).To(Equal(i + 1))

				err := k8sClient.Create(ctx, newAdapter(ns, m))
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(manifestRuleMessages(err)).To(Equal([]string{tc.msg}))
				Expect(err.Error()).To(ContainSubstring(tc.msg))
			})
		}

		It("accepts a coherent manifest and stores it unchanged", func() {
			a := newAdapter(ns, fullManifest())
			Expect(k8sClient.Create(ctx, a)).To(Succeed())
			got := &v1alpha1.MemoryAdapter{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), got)).To(Succeed())
			Expect(got.Spec.Manifest).To(Equal(fullManifest()))
			Expect(got.Spec.Manifest.Hash()).To(Equal(fullManifest().ToMemory().Hash()))
		})

		It("gives the same verdict and message as Manifest.Validate on a sample of the sweep", func() {
			all := manifestcases.All(manifestcases.Native, manifestcases.Dropped, manifestcases.Neither, manifestcases.Both)
			// Every 1021st case (a prime stride, so it walks through all the axes), plus the
			// first case of each verdict so that all six rules and "coherent" are exercised.
			seen := map[string]bool{}
			var sample []manifestcases.Case
			for i, c := range all {
				verdict := ""
				if err := c.Manifest.Validate(); err != nil {
					verdict = err.Error()
				}
				if i%1021 == 0 || !seen[verdict] {
					sample = append(sample, c)
					seen[verdict] = true
				}
			}
			Expect(seen).To(HaveLen(7))
			for _, c := range sample {
				var want []string
				goErr := c.Manifest.Validate()
				if goErr != nil {
					var ce *memory.CoherenceError
					Expect(errors.As(goErr, &ce)).To(BeTrue(), "%s: %v", c.Name, goErr)
					want = []string{ce.Message}
				}
				a := newAdapter(ns, c.Manifest)
				err := k8sClient.Create(ctx, a, client.DryRunAll)
				if want == nil {
					Expect(err).NotTo(HaveOccurred(), c.Name)
					continue
				}
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want Invalid, got %v", c.Name, err)
				Expect(manifestRuleMessages(err)).To(Equal(want), c.Name)
			}
		})
	})

	Context("immutability", func() {
		var existing *v1alpha1.MemoryAdapter
		base := func() v1alpha1.ManifestSpec {
			// Coherent, with room to change every field one at a time and stay coherent.
			m := fullManifest()
			m.RetrieveFidelity = v1alpha1.FidelityNativeFields
			m.SearchFidelity = v1alpha1.FidelityNativeFields
			m.SearchReturnsTags = false
			m.PreservesMetadata = false
			return m
		}
		BeforeEach(func() {
			existing = newAdapter(ns, base())
			Expect(k8sClient.Create(ctx, existing)).To(Succeed())
		})

		changes := map[string]func(m *v1alpha1.ManifestSpec){
			"adapter": func(m *v1alpha1.ManifestSpec) { m.Adapter = "sqlite-v2" },
			"nativeItemFields and droppedItemFields": func(m *v1alpha1.ManifestSpec) {
				m.NativeItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldID, v1alpha1.ItemFieldMetadata, v1alpha1.ItemFieldContent, v1alpha1.ItemFieldTags}
				m.DroppedItemFields = []v1alpha1.ItemField{v1alpha1.ItemFieldCreatedAt}
			},
			"supportedFilters":  func(m *v1alpha1.ManifestSpec) { m.SupportedFilters = append(m.SupportedFilters, "source") },
			"searchConsistency": func(m *v1alpha1.ManifestSpec) { m.SearchConsistency = v1alpha1.ConsistencyEventual },
			"retrieveFidelity":  func(m *v1alpha1.ManifestSpec) { m.RetrieveFidelity = v1alpha1.FidelityLossy },
			"searchFidelity":    func(m *v1alpha1.ManifestSpec) { m.SearchFidelity = v1alpha1.FidelityLossy },
			"searchReturnsTags": func(m *v1alpha1.ManifestSpec) { m.SearchReturnsTags = true },
			"preservesMetadata": func(m *v1alpha1.ManifestSpec) { m.PreservesMetadata = true },
		}
		for name, change := range changes {
			It("rejects a change of "+name, func() {
				updated := existing.DeepCopy()
				change(&updated.Spec.Manifest)
				Expect(updated.Spec.Manifest.Validate()).To(Succeed(), "the changed manifest must be coherent, so only immutability can reject it")
				err := k8sClient.Update(ctx, updated)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(manifestRuleMessages(err)).To(Equal([]string{msgManifestImmutable}))
			})
		}

		It("accepts the same sets written in another order, and changes outside the manifest", func() {
			updated := existing.DeepCopy()
			for i, j := 0, len(updated.Spec.Manifest.NativeItemFields)-1; i < j; i, j = i+1, j-1 {
				f := updated.Spec.Manifest.NativeItemFields
				f[i], f[j] = f[j], f[i]
			}
			updated.Spec.Replicas = nil
			updated.Spec.Health = &v1alpha1.HealthSpec{Period: v1alpha1.NewDuration(10e9)}
			Expect(k8sClient.Update(ctx, updated)).To(Succeed())
		})

		It("rejects a change of backend.scope", func() {
			updated := existing.DeepCopy()
			updated.Spec.Backend.Scope = "other"
			err := k8sClient.Update(ctx, updated)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("scope is immutable: create a new MemoryAdapter to use a different scope"))
		})

		It("rejects a change of backend.type", func() {
			updated := existing.DeepCopy()
			updated.Spec.Backend.Type = v1alpha1.BackendPostgres
			updated.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "pg"}
			err := k8sClient.Update(ctx, updated)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("type is immutable: create a new MemoryAdapter to use a different backend"))
		})
	})

	Context("backend and operational rules", func() {
		It("requires a Secret reference unless the type is SQLite", func() {
			a := newAdapter(ns, fullManifest())
			a.Spec.Backend.Type = v1alpha1.BackendPostgres
			err := k8sClient.Create(ctx, a, client.DryRunAll)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("connectionSecretRef is required unless type is 'SQLite'"))

			a.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "agent-memory-postgres"}
			Expect(k8sClient.Create(ctx, a)).To(Succeed())
			Expect(a.Spec.Backend.ConnectionSecretRef.Key).To(Equal("dsn"), "the key defaults to dsn")
		})

		It("accepts a Khive backend with an image, without a Secret, and defaults its command", func() {
			a := newAdapter(ns, fullManifest())
			a.Spec.Backend.Type = v1alpha1.BackendKhive
			a.Spec.Backend.Khive = &v1alpha1.KhiveOptions{Args: []string{"--no-embed"}}
			img := "registry.example/memory-adapter-khive:1"
			a.Spec.Image = &img
			Expect(k8sClient.Create(ctx, a)).To(Succeed())
			Expect(a.Spec.Backend.Khive.Command).To(Equal("kkernel"), "the command defaults to kkernel")
			Expect(a.Spec.Backend.Khive.StorageSize).To(Equal("1Gi"), "the volume defaults to 1Gi")
		})

		// rejectedAfter is a table body: an adapter set up for a backend, then mutated, is
		// refused with the wanted message.
		rejectedAfter := func(setup func(*v1alpha1.MemoryAdapter)) func(func(*v1alpha1.MemoryAdapter), string) {
			return func(mutate func(*v1alpha1.MemoryAdapter), want string) {
				a := newAdapter(ns, fullManifest())
				setup(a)
				mutate(a)
				err := k8sClient.Create(ctx, a, client.DryRunAll)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(err.Error()).To(ContainSubstring(want))
			}
		}
		khive := func(a *v1alpha1.MemoryAdapter) {
			a.Spec.Backend.Type = v1alpha1.BackendKhive
			a.Spec.Backend.Khive = &v1alpha1.KhiveOptions{}
			img := "registry.example/memory-adapter-khive:1"
			a.Spec.Image = &img
		}
		DescribeTable("rejects an inconsistent Khive backend",
			rejectedAfter(khive),
			Entry("no image holding kkernel", func(a *v1alpha1.MemoryAdapter) { a.Spec.Image = nil },
				"image is required when backend.type is 'Khive'"),
			Entry("no khive options", func(a *v1alpha1.MemoryAdapter) { a.Spec.Backend.Khive = nil },
				"khive options are required when type is 'Khive'"),
			Entry("a Secret", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "s"}
			}, "connectionSecretRef must not be set when type is 'Khive'"),
			Entry("khive options on Redis", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.Type = v1alpha1.BackendRedis
				a.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "redis"}
			}, "khive options may only be set when type is 'Khive'"),
			Entry("an argument setting the database", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.Khive.Args = []string{"--db=/elsewhere"}
			}, "khive.args must not set --db or --namespace"),
			Entry("an argument setting the namespace", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.Khive.Args = []string{"--namespace", "x"}
			}, "khive.args must not set --db or --namespace"),
			Entry("two replicas", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Replicas = new(int32)
				*a.Spec.Replicas = 2
			}, "replicas must be at most 1 when backend.type is 'SQLite' or 'Khive'"),
		)

		It("accepts deletionPolicy Delete on every backend", func() {
			for _, b := range []v1alpha1.BackendType{v1alpha1.BackendSQLite, v1alpha1.BackendPostgres, v1alpha1.BackendRedis} {
				a := newAdapter(ns, fullManifest())
				a.Spec.Backend.Type = b
				if b != v1alpha1.BackendSQLite {
					a.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "conn"}
				}
				a.Spec.DeletionPolicy = v1alpha1.DeletionDelete
				Expect(k8sClient.Create(ctx, a, client.DryRunAll)).To(Succeed(), "backend %s", b)
			}
		})

		It("accepts a certificate lifetime of its own, under the defaulted mode Operator", func() {
			a := newAdapter(ns, fullManifest())
			a.Spec.TLS = &v1alpha1.TLSSpec{CertificateLifetime: v1alpha1.NewDuration(90 * time.Second)}
			Expect(k8sClient.Create(ctx, a, client.DryRunAll)).To(Succeed())
			Expect(a.Spec.TLS.Mode).To(Equal(v1alpha1.TLSOperator))
			Expect(*a.Spec.TLS.CertificateLifetime).To(Equal(v1alpha1.Duration("1m30s")))
		})

		external := func(a *v1alpha1.MemoryAdapter) {
			a.Spec.Backend.Type = v1alpha1.BackendExternal
			a.Spec.Backend.External = &v1alpha1.ExternalOptions{
				Args:        []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)"},
				HarnessArgs: []string{"--harness-listen", "$(MEMORY_ADAPTER_HARNESS_LISTEN)"},
			}
			img := "registry.example/python-adapter:1"
			a.Spec.Image = &img
		}
		It("accepts an External backend with an image and Secret env, and defaults its ports", func() {
			a := newAdapter(ns, fullManifest())
			external(a)
			a.Spec.Replicas = new(int32)
			*a.Spec.Replicas = 3
			a.Spec.Backend.External.Env = []v1alpha1.ExternalSecretEnv{{Name: "DB_URL", SecretKeyRef: v1alpha1.SecretKeySelector{Name: "byo-db", Key: "url"}}}
			Expect(k8sClient.Create(ctx, a)).To(Succeed())
			Expect(a.Spec.Backend.External.Port).To(Equal(int32(8080)), "the port defaults to 8080")
			Expect(a.Spec.Backend.External.HarnessPort).To(Equal(int32(8081)), "the harness port defaults to 8081")
		})

		DescribeTable("rejects an inconsistent External backend",
			rejectedAfter(external),
			Entry("no image", func(a *v1alpha1.MemoryAdapter) { a.Spec.Image = nil },
				"image is required when backend.type is 'External'"),
			Entry("no external options", func(a *v1alpha1.MemoryAdapter) { a.Spec.Backend.External = nil },
				"external options are required when type is 'External'"),
			Entry("no harness args", func(a *v1alpha1.MemoryAdapter) { a.Spec.Backend.External.HarnessArgs = nil },
				"spec.backend.external.harnessArgs: Required value"),
			Entry("a connection Secret", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "s"}
			}, "connectionSecretRef must not be set when type is 'External'"),
			Entry("access", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Access = &v1alpha1.AccessSpec{ServiceAccounts: []v1alpha1.ServiceAccountAccess{{Name: "agent", Rights: v1alpha1.AccessReadOnly}}}
			}, "access is not supported when backend.type is 'External'"),
			Entry("retention", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Retention = &v1alpha1.RetentionSpec{MaxItems: ptr.To[int64](10)}
			}, "retention and quota are not supported when backend.type is 'External' or 'Khive'"),
			Entry("external options on SQLite", func(a *v1alpha1.MemoryAdapter) { a.Spec.Backend.Type = v1alpha1.BackendSQLite },
				"external options may only be set when type is 'External'"),
			Entry("one port for both listeners", func(a *v1alpha1.MemoryAdapter) { a.Spec.Backend.External.HarnessPort = 8080 },
				"harnessPort must differ from port"),
			Entry("a privileged port", func(a *v1alpha1.MemoryAdapter) { a.Spec.Backend.External.Port = 80 },
				"spec.backend.external.port: Invalid value: 80"),
			Entry("an env name the operator sets", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.External.Env = []v1alpha1.ExternalSecretEnv{{Name: "MEMORY_ADAPTER_TOKEN_FILE", SecretKeyRef: v1alpha1.SecretKeySelector{Name: "s", Key: "k"}}}
			}, "env names starting with MEMORY_ADAPTER_, and POD_NAME, are set by the operator"),
			Entry("an env Secret without a key", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.External.Env = []v1alpha1.ExternalSecretEnv{{Name: "DB_URL", SecretKeyRef: v1alpha1.SecretKeySelector{Name: "s"}}}
			}, "spec.backend.external.env[0].secretKeyRef.key"),
			Entry("deletionPolicy Delete", func(a *v1alpha1.MemoryAdapter) { a.Spec.DeletionPolicy = v1alpha1.DeletionDelete },
				"deletionPolicy Delete is not supported when backend.type is 'External'"),
		)

		DescribeTable("rejects inconsistent backend and operational settings",
			func(mutate func(a *v1alpha1.MemoryAdapter), want string) {
				a := newAdapter(ns, fullManifest())
				mutate(a)
				err := k8sClient.Create(ctx, a, client.DryRunAll)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(err.Error()).To(ContainSubstring(want))
			},
			Entry("a Secret for SQLite", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.ConnectionSecretRef = &v1alpha1.SecretKeyReference{Name: "s"}
			}, "connectionSecretRef must not be set when type is 'SQLite'"),
			Entry("postgres options on SQLite", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Backend.Postgres = &v1alpha1.PostgresOptions{}
			}, "postgres options may only be set when type is 'Postgres'"),
			Entry("two SQLite replicas", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Replicas = new(int32)
				*a.Spec.Replicas = 2
			}, "replicas must be at most 1 when backend.type is 'SQLite'"),
			Entry("retried writes that are not idempotent", func(a *v1alpha1.MemoryAdapter) {
				three := int32(3)
				a.Spec.Lifecycle = &v1alpha1.LifecycleSpec{
					Retry:                &v1alpha1.RetryPolicies{Store: &v1alpha1.RetryPolicy{MaxAttempts: &three}},
					DuplicateIDBehaviour: v1alpha1.DuplicateIDDuplicate,
				}
			}, "retry.store.maxAttempts above 1 requires duplicateIdBehaviour 'Overwrite'"),
			Entry("a conformance interval beyond 720h", func(a *v1alpha1.MemoryAdapter) {
				d := v1alpha1.Duration("1000h")
				a.Spec.Conformance = &v1alpha1.ConformanceSpec{Interval: &d}
			}, "must be between 1m and 720h"),
			Entry("a certificate lifetime under a minute", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.TLS = &v1alpha1.TLSSpec{CertificateLifetime: v1alpha1.NewDuration(30 * time.Second)}
			}, "must be between 1m and 8760h"),
			Entry("a certificate lifetime for plain HTTP", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.TLS = &v1alpha1.TLSSpec{Mode: v1alpha1.TLSDisabled, CertificateLifetime: v1alpha1.NewDuration(time.Hour)}
			}, "certificateLifetime applies only to mode Operator"),
			Entry("a staleness grace shorter than the period", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Health = &v1alpha1.HealthSpec{Period: v1alpha1.NewDuration(time.Minute), StalenessGrace: v1alpha1.NewDuration(30 * time.Second)}
			}, "stalenessGrace must not be shorter than period"),
			Entry("an access grant for a name no ServiceAccount has", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Access = &v1alpha1.AccessSpec{ServiceAccounts: []v1alpha1.ServiceAccountAccess{{Name: "Not_A_Name", Rights: v1alpha1.AccessReadWrite}}}
			}, "spec.access.serviceAccounts[0].name: Invalid value"),
			Entry("an access grant without rights", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Access = &v1alpha1.AccessSpec{ServiceAccounts: []v1alpha1.ServiceAccountAccess{{Name: "agent"}}}
			}, "spec.access.serviceAccounts[0].rights: Unsupported value"),
			Entry("a ServiceAccount granted twice", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Access = &v1alpha1.AccessSpec{ServiceAccounts: []v1alpha1.ServiceAccountAccess{
					{Name: "agent", Rights: v1alpha1.AccessReadWrite}, {Name: "agent", Rights: v1alpha1.AccessReadOnly}}}
			}, "Duplicate value"),
			Entry("a sub-scope with a character a scope cannot hold", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Access = &v1alpha1.AccessSpec{ServiceAccounts: []v1alpha1.ServiceAccountAccess{{Name: "agent", Rights: v1alpha1.AccessReadWrite, SubScope: "a~b"}}}
			}, "spec.access.serviceAccounts[0].subScope: Invalid value"),
			Entry("retention without a limit", func(a *v1alpha1.MemoryAdapter) { a.Spec.Retention = &v1alpha1.RetentionSpec{} },
				"retention needs maxAge or maxItems"),
			Entry("a retention age under a minute", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Retention = &v1alpha1.RetentionSpec{MaxAge: v1alpha1.NewDuration(time.Second)}
			}, "must be between 1m and 87600h"),
			Entry("a quota without a limit", func(a *v1alpha1.MemoryAdapter) { a.Spec.Quota = &v1alpha1.QuotaSpec{} },
				"quota needs maxItems, maxBytes or writesPerSecond"),
			Entry("a write burst without a rate", func(a *v1alpha1.MemoryAdapter) {
				a.Spec.Quota = &v1alpha1.QuotaSpec{MaxItems: ptr.To[int64](1), WriteBurst: ptr.To[int32](5)}
			}, "writeBurst needs writesPerSecond"),
			Entry("a name too long for the adapter's Jobs", func(a *v1alpha1.MemoryAdapter) {
				a.GenerateName, a.Name = "", "a-name-that-is-much-too-long-for-conformance-jobs"
			}, "metadata.name must be a DNS label of at most 40 characters starting with a letter"),
			Entry("a name that is not a Service name", func(a *v1alpha1.MemoryAdapter) {
				a.GenerateName, a.Name = "", "1st-adapter"
			}, "metadata.name must be a DNS label of at most 40 characters starting with a letter"),
		)
	})

	Context("hostile input", func() {
		// Each entry edits the unstructured object so it can carry values the Go types would
		// never produce, and expects the API server's standard message.
		DescribeTable("is rejected with the API server's standard message",
			func(path []string, value any, want string) {
				u := toUnstructured(newAdapter(ns, fullManifest()))
				Expect(unstructured.SetNestedField(u.Object, value, path...)).To(Succeed())
				err := k8sClient.Create(ctx, u, client.DryRunAll)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(err.Error()).To(MatchRegexp(want))
			},
			Entry("too many filter keys", []string{"spec", "manifest", "supportedFilters"}, keys(65, 8),
				`spec.manifest.supportedFilters: Too many: 65: must have at most 64 items`),
			Entry("an oversized filter key", []string{"spec", "manifest", "supportedFilters"}, []any{strings.Repeat("k", 257)},
				`spec.manifest.supportedFilters\[0\]: Too long: may not be (more|longer) than 256`),
			Entry("a filter key over 256 bytes in UTF-8", []string{"spec", "manifest", "supportedFilters"}, []any{strings.Repeat("é", 200)},
				`must be at most 256 bytes when encoded as UTF-8`),
			Entry("an empty filter key", []string{"spec", "manifest", "supportedFilters"}, []any{""},
				`spec.manifest.supportedFilters\[0\]: Invalid value: "": spec.manifest.supportedFilters\[0\] in body should be at least 1 chars long`),
			Entry("a duplicate filter key", []string{"spec", "manifest", "supportedFilters"}, []any{"source", "source"},
				`spec.manifest.supportedFilters\[1\]: Duplicate value: "source"`),
			Entry("a duplicate native field", []string{"spec", "manifest", "nativeItemFields"}, []any{"id", "created_at", "metadata", "content", "tags", "id"},
				`spec.manifest.nativeItemFields\[5\]: Duplicate value: "id"`),
			Entry("too many native fields", []string{"spec", "manifest", "nativeItemFields"}, []any{"id", "created_at", "metadata", "content", "tags", "id"},
				`spec.manifest.nativeItemFields: Too many: 6: must have at most 5 items`),
			Entry("an unknown item field", []string{"spec", "manifest", "nativeItemFields"}, []any{"id", "content", "tags", "embedding"},
				`spec.manifest.nativeItemFields\[3\]: Unsupported value: "embedding": supported values: "id", "created_at", "metadata", "content", "tags"`),
			Entry("an unknown consistency", []string{"spec", "manifest", "searchConsistency"}, "sometimes",
				`spec.manifest.searchConsistency: Unsupported value: "sometimes": supported values: "immediate", "eventual"`),
			Entry("an unknown fidelity", []string{"spec", "manifest", "retrieveFidelity"}, "perfect",
				`spec.manifest.retrieveFidelity: Unsupported value: "perfect": supported values: "full", "native_fields", "lossy"`),
			Entry("an unknown backend type", []string{"spec", "backend", "type"}, "Mongo",
				`spec.backend.type: Unsupported value: "Mongo": supported values: "SQLite", "Postgres", "Redis", "Khive", "External"`),
			Entry("an oversized adapter id", []string{"spec", "manifest", "adapter"}, strings.Repeat("a", 254),
				`spec.manifest.adapter: Too long: may not be (more|longer) than 253`),
			Entry("an empty adapter id", []string{"spec", "manifest", "adapter"}, "",
				`spec.manifest.adapter: Invalid value: "": spec.manifest.adapter in body should be at least 1 chars long`),
			Entry("an oversized image", []string{"spec", "image"}, strings.Repeat("i", 513),
				`spec.image: Too long: may not be (more|longer) than 512`),
			Entry("a scope that is not an identifier", []string{"spec", "backend", "scope"}, "Robert'); DROP TABLE items;--",
				`spec.backend.scope: Invalid value: .*should match`),
			Entry("too many replicas", []string{"spec", "replicas"}, int64(17),
				`spec.replicas: Invalid value: 17: spec.replicas in body should be less than or equal to 16`),
			Entry("a duration that does not parse", []string{"spec", "health", "period"}, "forever",
				`spec.health.period: Invalid value: "forever": spec.health.period in body should match`),
			Entry("a wrong type", []string{"spec", "manifest", "searchReturnsTags"}, "yes",
				`spec.manifest.searchReturnsTags: Invalid value: "string": spec.manifest.searchReturnsTags in body must be of type boolean`),
		)

		It("rejects unknown fields under strict field validation", func() {
			u := toUnstructured(newAdapter(ns, fullManifest()))
			Expect(unstructured.SetNestedField(u.Object, "x", "spec", "manifest", "ranking")).To(Succeed())
			err := k8sClient.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(`unknown field "spec.manifest.ranking"`))
		})

		It("accepts spec.template's placement, and refuses the operator's keys and every pod field it does not list", func() {
			ma := newAdapter(ns, fullManifest())
			ma.Spec.Template = &v1alpha1.AdapterPodTemplate{
				Metadata: &v1alpha1.AdapterPodMetadata{Labels: map[string]string{"cost-center": "agents"}, Annotations: map[string]string{"sidecar.istio.io/inject": "false"}},
				Spec: &v1alpha1.AdapterPodSpec{
					NodeSelector:      map[string]string{"pool": "agents"},
					Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					PriorityClassName: "agents-high", RuntimeClassName: ptr.To("gvisor"),
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
				},
			}
			Expect(k8sClient.Create(ctx, ma.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict"))).To(Succeed())

			for _, tc := range []struct {
				path  []string
				value any
				want  string
			}{
				{[]string{"spec", "template", "metadata", "labels"}, map[string]any{"memory.agentmem.io/adapter": "other"}, "labels under memory.agentmem.io/ and app.kubernetes.io/ are the operator's"},
				{[]string{"spec", "template", "metadata", "labels"}, map[string]any{"app.kubernetes.io/instance": "other"}, "labels under memory.agentmem.io/ and app.kubernetes.io/ are the operator's"},
				{[]string{"spec", "template", "metadata", "annotations"}, map[string]any{"memory.agentmem.io/restarted-for": "x"}, "annotations under memory.agentmem.io/ are the operator's"},
				{[]string{"spec", "template", "spec", "hostNetwork"}, true, `unknown field "spec.template.spec.hostNetwork"`},
				{[]string{"spec", "template", "spec", "serviceAccountName"}, "kube-system-admin", `unknown field "spec.template.spec.serviceAccountName"`},
				{[]string{"spec", "template", "spec", "securityContext"}, map[string]any{"runAsUser": int64(0)}, `unknown field "spec.template.spec.securityContext"`},
				{[]string{"spec", "template", "spec", "volumes"}, []any{map[string]any{"name": "root", "hostPath": map[string]any{"path": "/"}}}, `unknown field "spec.template.spec.volumes"`},
				{[]string{"spec", "template", "spec", "containers"}, []any{map[string]any{"name": "x", "securityContext": map[string]any{"privileged": true}}}, `unknown field "spec.template.spec.containers"`},
			} {
				u := toUnstructured(ma.DeepCopy())
				Expect(unstructured.SetNestedField(u.Object, tc.value, tc.path...)).To(Succeed())
				err := k8sClient.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))
				Expect(err).To(HaveOccurred(), "%v accepted", tc.path)
				Expect(err.Error()).To(ContainSubstring(tc.want))
			}
		})

		It("requires every manifest field but the two optional sets", func() {
			u := toUnstructured(newAdapter(ns, fullManifest()))
			unstructured.RemoveNestedField(u.Object, "spec", "manifest", "searchConsistency")
			err := k8sClient.Create(ctx, u, client.DryRunAll)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(`spec.manifest.searchConsistency: Required value`))
		})
	})
})

// keys returns n distinct filter keys of the given length.
func keys(n, length int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%0*d", length, i)
	}
	return out
}
