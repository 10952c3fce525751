package manageridentity_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/manageridentity"
)

// One kube-apiserver and etcd for the privilege specs, with the CRD, the generated roles and
// the admission policies installed as config/default ships them. The specs act as an attacker
// holding the manager's ServiceAccount (asManager) and as a cluster admin setting the scene
// (admin).
var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	admin     client.Client
	asManager client.Client
	mgrCfg    *rest.Config
	scheme    = runtime.NewScheme()
)

// id is the installation the suite attacks: not config/default's names but a renamed one
// (hack/render-install.sh's INSTALL_NAMESPACE and INSTALL_PREFIX), so every refusal below also
// proves that the rename reached each policy. The controller suites install the default.
var id = manageridentity.Identity{Namespace: "platform-agent-memory", Prefix: "pam-"}

func TestManagerIdentity(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Manager Identity (least privilege) Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(memoryv1alpha1.AddToScheme(scheme))
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=\"$(hack/k8s-binaries.sh)\"")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	admin, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	mgrCfg, err = manageridentity.InstallAs(context.Background(), admin, cfg, filepath.Join("..", ".."), id, externalImage)
	Expect(err).NotTo(HaveOccurred())
	asManager, err = client.New(mgrCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
