package memoryadapter

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/credentials"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/manageridentity"
)

// One control plane and one real adapter server per test binary: the controller runs in a
// manager against a real kube-apiserver and etcd, and reads evidence from a real
// `memory-adapter serve` on the embedded SQLite backend. Nothing here runs a kubelet, so the
// specs play its part: they mark the Deployment available and finish Jobs with the
// termination message of a real `memory-adapter conformance` run.
var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	// managerCfg acts as the manager's ServiceAccount, holding only the generated RBAC
	// (config/rbac/role.yaml): a controller that needs a permission its markers do not grant,
	// or that reads a Secret, fails here as it would in a cluster.
	managerCfg *rest.Config
	k8sClient  client.Client
	scheme     = runtime.NewScheme()
	workDir    string
	adapterBin string
	server     *localAdapter
	evidence   *routedEvidence
)

func TestMemoryAdapterController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "MemoryAdapter Controller Suite")
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
	}
	// envtest's default Service range is a /24, 253 Services: the scale benchmark creates one
	// per adapter, and the API server refused the rest, so give it kubeadm's /12.
	testEnv.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/12")
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managerCfg = bindGeneratedRBAC(context.Background())

	workDir = GinkgoT().TempDir()
	By("building the memory-adapter binary")
	adapterBin = filepath.Join(workDir, "memory-adapter")
	build := exec.Command("go", "build", "-o", adapterBin, "../../../cmd/memory-adapter")
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed())

	By("starting a real adapter server on the embedded SQLite backend")
	server = startLocalAdapter(workDir)
	evidence = &routedEvidence{target: server}
})

var _ = AfterSuite(func() {
	if server != nil {
		server.stop()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// startManager runs the controller in its own manager, configured as cmd/main.go configures
// it; the returned function stops it and waits until it has.
func startManager() (stop func()) {
	mcfg := rest.CopyConfig(managerCfg)
	mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writeCounter{next: rt, writes: &managerWrites} })
	return startManagerWith(mcfg, evidence)
}

// managerWrites counts the mutating API requests of managers started by startManager: a
// no-op update leaves resourceVersions alone, so only counting requests shows it.
var managerWrites atomic.Int64

// writeCounter counts the mutating API requests that pass through it.
type writeCounter struct {
	next   http.RoundTripper
	writes *atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (w writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		w.writes.Add(1)
	}
	return w.next.RoundTrip(r)
}

// startManagerWith runs the controller with the given API server config and evidence reader.
func startManagerWith(cfg *rest.Config, evidence health.EvidenceReader) (stop func()) {
	// A read from the cache of a kind the controller does not watch, or a typed read of one of
	// metadataKinds, would start an informer of its own in the manager (a second copy of every
	// object of that kind); here it fails the read, and so the spec, instead.
	cacheOpts := CacheOptions()
	cacheOpts.ReaderFailOnMissingInformer = true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Cache:      cacheOpts,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	keyCtx, cancelKey := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelKey()
	key, err := credentials.LoadOrCreateTokenKey(keyCtx, mgr.GetAPIReader(), mgr.GetClient(), tokenKeyRef)
	Expect(err).NotTo(HaveOccurred())
	ca, err := credentials.LoadOrCreateCA(keyCtx, mgr.GetAPIReader(), mgr.GetClient(), caRef, 10*365*24*time.Hour)
	Expect(err).NotTo(HaveOccurred())
	recorder, err := NewEventRecorder(mgr, nil, "memory-adapter-operator")
	Expect(err).NotTo(HaveOccurred())
	Expect((&Reconciler{
		TokenKey:     key,
		CA:           ca,
		Client:       mgr.GetClient(),
		Recorder:     recorder,
		Evidence:     evidence,
		DefaultImage: "ghcr.io/agentmem/memory-adapter:dev",
		// Nothing here runs pods, so most specs read through the Service's name, which
		// routedEvidence routes to the local server; an adapter labelled perPodEvidence is
		// read at its pods' own addresses, as in a cluster.
		ServiceURL: func(ma *memoryv1alpha1.MemoryAdapter) string {
			if ma.Labels[perPodEvidence] == "true" {
				return ""
			}
			return render.ServiceURL(ma)
		},
	}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() { cancel(); <-done }
}

// operatorNamespace is the manager's namespace, where its token key Secret lives.
const operatorNamespace = manageridentity.Namespace

// tokenKeyRef is the token key Secret the manager's markers and policies let it write.
var tokenKeyRef = types.NamespacedName{Namespace: operatorNamespace, Name: manageridentity.TokenKeySecret}

// caRef is the adapter CA Secret the manager's markers and policies let it write.
var caRef = types.NamespacedName{Namespace: operatorNamespace, Name: manageridentity.AdapterCASecret}

// podEvidenceReader reads pods at their own addresses, as the manager does. The local
// servers behind them serve plain HTTP, so per-pod specs opt their adapters out of TLS; the
// e2e suite reads real pods over TLS.
var podEvidenceReader = &health.HTTPEvidenceReader{}

// bindGeneratedRBAC installs the generated roles bound to the manager's ServiceAccount and the
// admission policies that narrow them, as config/default ships them, and returns a config that
// impersonates the ServiceAccount. The External specs' server image is on the allow-list, as a
// platform admin would put it there.
func bindGeneratedRBAC(ctx context.Context) *rest.Config {
	c, err := manageridentity.Install(ctx, k8sClient, cfg, filepath.Join("..", "..", ".."), "registry.example/python-adapter:1")
	Expect(err).NotTo(HaveOccurred())
	return c
}

// localAdapter is a `memory-adapter serve` process on loopback.
type localAdapter struct {
	url, token, tokenFile string
	cmd                   *exec.Cmd
}

func startLocalAdapter(dir string) *localAdapter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	a := &localAdapter{url: "http://" + addr, token: "local-test-token", tokenFile: filepath.Join(dir, "token")}
	Expect(os.WriteFile(a.tokenFile, []byte(a.token), 0o600)).To(Succeed())
	a.cmd = exec.Command(adapterBin, "serve", "--backend", "sqlite", "--sqlite-path", filepath.Join(dir, "serve.db"),
		"--adapter-id", "sqlite", "--supported-filters=branch_id,source", "--scope", "agents", "--listen", addr, "--token-file", a.tokenFile)
	a.cmd.Stdout, a.cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(a.cmd.Start()).To(Succeed())
	Eventually(func() error {
		resp, err := http.Get(a.url + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return a
}

func (a *localAdapter) stop() {
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// perPodEvidence is the label of adapters whose evidence the suite's controller reads at
// their pods' addresses.
const perPodEvidence = "test.memory.agentmem.io/per-pod-evidence"

// routedEvidence reads the real local server's evidence when the controller asks a Service
// (its DNS name does not resolve outside a cluster), records the token the controller
// presented, and lets a spec change what the evidence says, as a backend upgrade would. Any
// other address (a pod's) is read as it is, with the token presented, and nothing changed.
type routedEvidence struct {
	target *localAdapter
	mu     sync.Mutex
	tokens []string
	// last is the last token presented per Service URL: adapters of other specs are read
	// at the same time, so the last token overall may be another adapter's.
	last   map[string]string
	mutate func(*memory.EvidenceReport)
	// refuse, when set, answers like an adapter whose token file differs: true means 401.
	refuse func(token string) bool
}

func (r *routedEvidence) ReadEvidence(ctx context.Context, t health.EvidenceTarget) (*memory.EvidenceReport, error) {
	url, token := t.URL, t.Token
	if !strings.Contains(url, ".svc:") {
		return podEvidenceReader.ReadEvidence(ctx, t)
	}
	r.mu.Lock()
	r.tokens = append(r.tokens, token)
	if r.last == nil {
		r.last = map[string]string{}
	}
	r.last[url] = token
	mutate, refuse := r.mutate, r.refuse
	r.mu.Unlock()
	if refuse != nil && refuse(token) {
		return nil, fmt.Errorf("evidence read: HTTP 401: %w", health.ErrUnauthorized)
	}
	ev, err := (&health.HTTPEvidenceReader{}).ReadEvidence(ctx, health.EvidenceTarget{URL: r.target.url, Token: r.target.token})
	if err == nil && mutate != nil {
		mutate(ev)
	}
	return ev, err
}

func (r *routedEvidence) setMutation(f func(*memory.EvidenceReport)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mutate = f
}

func (r *routedEvidence) setRefusal(f func(string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = f
}

func (r *routedEvidence) reads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tokens)
}

// lastToken is the last token presented to the Service URL url.
func (r *routedEvidence) lastToken(url string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[url]
}
