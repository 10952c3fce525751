package memoryadapter

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// fixedEvidence answers every read as a healthy External server publishing the sample
// manifest would.
type fixedEvidence struct{}

func (fixedEvidence) ReadEvidence(context.Context, health.EvidenceTarget) (*memory.EvidenceReport, error) {
	m := sqliteAdapter("", "").Spec.Manifest
	return &memory.EvidenceReport{Adapter: m.Adapter, AdapterVersion: "python-example 1", ManifestHash: m.Hash(),
		ServiceVersion: "python 3.12", Probes: []memory.ProbeResult{}, ManifestValid: true, ObservedAt: time.Now()}, nil
}

// The External backend through the real API server: the CRD's defaults, the Deployment of
// the user's image, and a conformance Job whose pod the API server accepts with the user's
// image as a native sidecar beside the operator's conformance container.
var _ = Describe("an External adapter", Ordered, func() {
	var (
		ctx     context.Context
		stopMgr func()
		key     types.NamespacedName
	)

	BeforeAll(func() {
		ctx = context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-ext-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		key = types.NamespacedName{Namespace: ns.Name, Name: "byo"}
		// This adapter's evidence is fixed: the suite's local server is another adapter, and
		// other specs stop it.
		stopMgr = startManagerWith(rest.CopyConfig(managerCfg), fixedEvidence{})
	})
	AfterAll(func() {
		if stopMgr != nil {
			stopMgr()
		}
	})

	It("deploys the user's image with its args, the binding token and its Secret env", func() {
		ma := sqliteAdapter(key.Namespace, key.Name)
		ma.Spec.Image = ptr.To("registry.example/python-adapter:1")
		ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendExternal, Scope: "agents", External: &memoryv1alpha1.ExternalOptions{
			Command:     []string{"python3", "/app/server.py"},
			Args:        []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)", "--token-file", "$(MEMORY_ADAPTER_TOKEN_FILE)"},
			HarnessArgs: []string{"--listen", "$(MEMORY_ADAPTER_LISTEN)", "--token-file", "$(MEMORY_ADAPTER_TOKEN_FILE)", "--harness-listen", "$(MEMORY_ADAPTER_HARNESS_LISTEN)", "--harness-token-file", "$(MEMORY_ADAPTER_HARNESS_TOKEN_FILE)"},
			Env:         []memoryv1alpha1.ExternalSecretEnv{{Name: "DB_URL", SecretKeyRef: memoryv1alpha1.SecretKeySelector{Name: "byo-db", Key: "url"}}},
		}}
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		ma = getMA(key)
		Expect(ma.Spec.Backend.External.Port).To(Equal(int32(8080)), "the CRD defaults the port")
		Expect(ma.Spec.Backend.External.HarnessPort).To(Equal(int32(8081)), "the CRD defaults the harness port")

		dep := &appsv1.Deployment{}
		Eventually(func() error { return k8sClient.Get(ctx, key, dep) }, timeout, poll).Should(Succeed())
		Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		c := dep.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("registry.example/python-adapter:1"))
		Expect(c.Command).To(Equal([]string{"python3", "/app/server.py"}))
		Expect(c.Args).To(Equal(ma.Spec.Backend.External.Args))
		Expect(c.Env).To(ContainElements(
			corev1.EnvVar{Name: render.EnvListen, Value: "0.0.0.0:8080"},
			corev1.EnvVar{Name: render.EnvTokenFile, Value: "/var/run/memory-adapter/binding/accepted-tokens"},
			corev1.EnvVar{Name: render.EnvScope, Value: "agents"},
			// TLS by default: the user's server is told where the operator's certificate is.
			corev1.EnvVar{Name: render.EnvTLSCertFile, Value: render.TLSMountDir + "/tls.crt"},
			corev1.EnvVar{Name: render.EnvTLSKeyFile, Value: render.TLSMountDir + "/tls.key"},
		))
		Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "tls", MountPath: render.TLSMountDir, ReadOnly: true}))
		Expect(slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "DB_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "byo-db"
		})).To(BeTrue(), "the Secret is passed by reference")
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz"), "an invalidated instance stays in the Service to answer 503")
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
		Expect(c.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(dep.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Name", "binding")))

		np := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, key, np)).To(Succeed())
		Expect(np.Spec.Ingress[0].Ports[0].Port.IntVal).To(Equal(int32(8080)))
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-data"}, &corev1.PersistentVolumeClaim{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an External adapter gets no data claim: %v", err)
	})

	It("runs conformance with the user's image in harness mode beside the operator's conformance container", func() {
		markAvailable(ctx, key)
		job := waitForNewJob(ctx, key)
		pod := job.Spec.Template.Spec
		Expect(pod.InitContainers).To(HaveLen(2))
		Expect(pod.Containers).To(HaveLen(1))
		tokens, server, conf := pod.InitContainers[0], pod.InitContainers[1], pod.Containers[0]

		Expect(tokens.Image).To(Equal("ghcr.io/agentmem/memory-adapter:dev"))
		Expect(tokens.Args).To(Equal([]string{"token", render.RunTokenDir + "/data-token", render.RunTokenDir + "/harness-token"}))

		Expect(server.Image).To(Equal("registry.example/python-adapter:1"))
		Expect(server.RestartPolicy).To(Equal(ptr.To(corev1.ContainerRestartPolicyAlways)), "a native sidecar, stopped when the run ends")
		Expect(server.Args).To(ContainElement("$(MEMORY_ADAPTER_HARNESS_LISTEN)"))
		Expect(server.Env).To(ContainElements(
			corev1.EnvVar{Name: render.EnvListen, Value: "127.0.0.1:8080"},
			corev1.EnvVar{Name: render.EnvHarnessListen, Value: "127.0.0.1:8081"},
			corev1.EnvVar{Name: render.EnvScope, Value: render.ExternalRunScope(job.Name)},
		))

		Expect(conf.Image).To(Equal("ghcr.io/agentmem/memory-adapter:dev"))
		args := strings.Join(conf.Args, " ")
		Expect(args).To(HavePrefix("conformance --target http://127.0.0.1:8080 --token-file " + render.RunTokenDir + "/data-token --harness-url http://127.0.0.1:8081 --harness-token-file " + render.RunTokenDir + "/harness-token"))
		Expect(args).To(ContainSubstring("--adapter-id sqlite --duplicate-id-behaviour Overwrite"))
		Expect(args).To(ContainSubstring("--server-ca-file /var/run/memory-adapter/binding/ca.crt --server-url https://byo." + key.Namespace + ".svc:8080 --server-token-file /var/run/memory-adapter/binding/token --expected-manifest-file /etc/memory-adapter/manifest/manifest.json"))
		Expect(args).NotTo(ContainSubstring("--backend"))
		Expect(job.Annotations[render.AnnotationRunKey]).To(ContainSubstring(getMA(key).Spec.Manifest.Hash()))
	})

	It("is refused, with the words that say where to list it, when its image is not on the installation's allow-list", func() {
		other := types.NamespacedName{Namespace: key.Namespace, Name: "unlisted"}
		ma := sqliteAdapter(other.Namespace, other.Name)
		ma.Spec.Image = ptr.To("registry.example/unlisted-adapter:1")
		ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendExternal, Scope: "agents", External: &memoryv1alpha1.ExternalOptions{
			HarnessArgs: []string{"--harness"},
		}}
		Expect(k8sClient.Create(ctx, ma)).To(Succeed())
		// Refused, it retries its Deployment with back-off; the next specs count the manager's
		// writes, so it must be gone.
		DeferCleanup(func() { Expect(k8sClient.Delete(context.Background(), getMA(other))).To(Succeed()) })
		Eventually(func(g Gomega) {
			c := conditionOf(getMA(other), memoryv1alpha1.ConditionDeployed)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(memoryv1alpha1.ReasonInvalidSpec))
			g.Expect(c.Message).To(ContainSubstring("registry.example/unlisted-adapter:1"))
			g.Expect(c.Message).To(ContainSubstring("memory-adapter-operator-images"))
		}, timeout, poll).Should(Succeed())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, other, &appsv1.Deployment{}))).To(BeTrue(), "the policy kept the Deployment out")
	})
})
