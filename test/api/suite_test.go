package apitest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

var (
	testEnv        *envtest.Environment
	cfg            *rest.Config
	k8sClient      client.Client
	kubectlPath    string
	kubeconfigPath string
	ctx            context.Context
	cancel         context.CancelFunc
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "MemoryAdapter API Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	// Fail loudly rather than skip: without these binaries nothing here can run, and a silent
	// skip would read as a pass.
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	Expect(assets).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS=\"$(hack/k8s-binaries.sh)\" (it builds kube-apiserver, etcd and kubectl from the Go module proxy)")
	for _, bin := range []string{"kube-apiserver", "etcd", "kubectl"} {
		Expect(filepath.Join(assets, bin)).To(BeAnExistingFile(),
			"%s is missing from KUBEBUILDER_ASSETS=%s: run hack/k8s-binaries.sh kube-apiserver etcd kubectl", bin, assets)
	}
	// The machine may have its own kubectl on PATH; the suite must use the one built for it.
	kubectlPath = filepath.Join(assets, "kubectl")

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "envtest could not start or the API server refused the CRD")
	Expect(cfg).NotTo(BeNil())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	user, err := testEnv.AddUser(envtest.User{Name: "api-suite-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "madp-kubectl-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfigPath = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace for one spec and deletes it afterwards. envtest runs no
// namespace controller, so the objects inside are not garbage collected; every spec uses
// generated names, so leftovers cannot collide.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "madp-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}
