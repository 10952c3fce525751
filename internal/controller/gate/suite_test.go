package gate

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter"
	"github.com/agentmem/memory-adapter-operator/internal/manageridentity"
	"github.com/agentmem/memory-adapter-operator/internal/webhook"
)

// One kube-apiserver and etcd per test binary, with the real MutatingWebhookConfiguration
// that `make manifests` generates (config/webhook) installed on it: envtest rewrites only its
// client config to reach the manager's webhook server on loopback, so the object selector,
// failure policy and timeout under test are the shipped ones. The manager runs the gate
// controller and the webhook as cmd/main.go wires them. The MemoryAdapter controller does not
// run here (it needs a kubelet for its Deployments and Jobs; the e2e suite runs the whole
// loop): specs write an adapter's status as that controller would, which is the gate
// controller's entire input.
var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	// managerCfg impersonates the manager's ServiceAccount with the generated RBAC and the
	// admission policies installed: the gate controller's pod patches and the rotator's writes
	// pass exactly what config/default lets them.
	managerCfg *rest.Config
	k8sClient  client.Client
	scheme     = runtime.NewScheme()
	// hang makes the webhook stall until the API server gives up on it.
	hang atomic.Bool
)

func TestGate(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gate Controller and Pod Webhook Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(memoryv1alpha1.AddToScheme(scheme))

	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=\"$(hack/k8s-binaries.sh)\"")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:                    []string{filepath.Join("..", "..", "..", "config", "webhook")},
			IgnoreErrorIfPathMissing: false,
		},
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(testEnv.WebhookInstallOptions.MutatingWebhooks).To(HaveLen(1), "config/webhook must hold the generated pod webhook")
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managerCfg, err = manageridentity.Install(context.Background(), k8sClient, cfg, filepath.Join("..", "..", ".."))
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// stallable is the pod binder with a switch that makes it hang, to play a webhook that
// stopped answering.
type stallable struct{ next admission.Handler }

func (s stallable) Handle(ctx context.Context, req admission.Request) admission.Response {
	if hang.Load() {
		<-ctx.Done()
		return admission.Errored(http.StatusGatewayTimeout, ctx.Err())
	}
	return s.next.Handle(ctx, req)
}

// startManager runs the gate controller and the pod webhook in one manager, configured as
// cmd/main.go configures them; the returned function stops it and waits until it has.
func startManager() (stop func()) {
	o := testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(managerCfg, ctrl.Options{
		Scheme:     scheme,
		Cache:      memoryadapter.CacheOptions(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir,
		}),
	})
	Expect(err).NotTo(HaveOccurred())
	mgr.GetWebhookServer().Register(webhook.Path, &crwebhook.Admission{Handler: stallable{next: &webhook.PodBinder{Decoder: admission.NewDecoder(scheme)}}})
	recorder, err := memoryadapter.NewEventRecorder(mgr, nil, "memory-adapter-operator")
	Expect(err).NotTo(HaveOccurred())
	Expect((&Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	// The webhook answers once its server listens; a pod created before would fail closed.
	Eventually(func() error {
		return mgr.GetWebhookServer().StartedChecker()(&http.Request{})
	}).Should(Succeed(), fmt.Sprintf("webhook server on %s:%d", o.LocalServingHost, o.LocalServingPort))
	return func() { cancel(); <-done }
}
