// Command main is the memory adapter operator's manager: it hosts the controllers and webhooks
// of the memory.agentmem.io API group, serves metrics and health probes, and takes part in
// leader election when more than one replica runs.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	// Import every client auth plugin (exec, OIDC, ...) so the manager can run from any
	// kubeconfig a user hands it.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/gate"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/credentials"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
	"github.com/agentmem/memory-adapter-operator/internal/softlimit"
	podwebhook "github.com/agentmem/memory-adapter-operator/internal/webhook"
	// +kubebuilder:scaffold:imports
)

// leaderElectionID is the Lease name replicas compete for; it is fixed so that every replica
// of every release agrees on it.
const leaderElectionID = "memory-adapter-operator.memory.agentmem.io"

// The manager's API client limits. controller-runtime's own (20 per second, bursts of 30)
// held 200 simultaneous verdict changes at 1,000 adapters to a p99 of 11-12 s, a status patch
// and Events each (docs/operator.md, "Scale"); the API server's priority and fairness
// protects it beyond these.
const (
	defaultKubeAPIQPS   = 50
	defaultKubeAPIBurst = 100
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

// version is the release the manager was built as, set at link time (-X main.version=...) by
// the Makefile, hack/images, the Dockerfile and hack/release.sh from the one VERSION; "dev" is
// a build none of them stamped.
var version = "dev"

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(memoryv1alpha1.AddToScheme(scheme))
	// +kubebuilder:scaffold:scheme
}

// managerFlags holds the command line; it is a struct so that parsing stays separate from
// building the manager.
type managerFlags struct {
	metricsAddr      string
	pprofAddr        string
	probeAddr        string
	enableLeaderElec bool
	secureMetrics    bool
	enableHTTP2      bool
	webhookCertPath  string
	webhookCertName  string
	webhookCertKey   string
	// webhookPort is where the pod webhook listens; the webhook Service targets the
	// container's port by name, so a cluster that blocks 9443 between the API server and
	// nodes (GKE private clusters) moves both.
	webhookPort     int
	metricsCertPath string
	metricsCertName string
	metricsCertKey  string
	adapterImage    string
	tokenKeySecret  string
	adapterCASecret string
	caLifetime      time.Duration
	certLifetime    time.Duration
	// monitoringNamespace is the namespace admitted to the adapters' metrics ports.
	monitoringNamespace string
	// doorbellAddr is where the leader listens for adapters' rings; doorbellURL is the
	// address adapters ring, derived from the doorbell Service when empty.
	doorbellAddr, doorbellURL string
	// namePrefix is the installation's name prefix, from which the names of the manager's own
	// objects are derived.
	namePrefix string
	// kubeAPIQPS and kubeAPIBurst bound the manager's requests to the API server; Events go
	// through a client of their own with the same bounds.
	kubeAPIQPS   float64
	kubeAPIBurst int
	// certRotation makes the manager issue and rotate its own webhook certificate.
	certRotation podwebhook.CertRotation
	rotateCerts  bool
}

func main() {
	var f managerFlags
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0",
		"The address the metrics endpoint binds to. Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "0",
		"The address Go's pprof endpoints bind to (plain HTTP, unauthenticated: bind it to localhost), or 0 to disable them.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&f.enableLeaderElec, "leader-elect", false,
		"Enable leader election for the controller manager, ensuring only one active manager.")
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	flag.StringVar(&f.webhookCertPath, "webhook-cert-path", "", "The directory that contains the webhook certificate.")
	flag.StringVar(&f.webhookCertName, "webhook-cert-name", "tls.crt", "The name of the webhook certificate file.")
	flag.StringVar(&f.webhookCertKey, "webhook-cert-key", "tls.key", "The name of the webhook key file.")
	flag.Float64Var(&f.kubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS,
		"Requests per second the manager may make to the API server (client-side limit; Events have a limiter of their own with the same bounds).")
	flag.IntVar(&f.kubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst,
		"Requests the manager may make to the API server at once above --kube-api-qps.")
	flag.IntVar(&f.webhookPort, "webhook-port", 9443,
		"The port the pod webhook listens on; the container's webhook-server port must match it.")
	flag.StringVar(&f.metricsCertPath, "metrics-cert-path", "", "The directory that contains the metrics server certificate.")
	flag.StringVar(&f.metricsCertName, "metrics-cert-name", "tls.crt", "The name of the metrics server certificate file.")
	flag.StringVar(&f.metricsCertKey, "metrics-cert-key", "tls.key", "The name of the metrics server key file.")
	flag.BoolVar(&f.rotateCerts, "webhook-cert-rotation", false,
		"Issue and rotate the webhook's serving certificate in the manager (open-policy-agent/cert-controller) and inject its CA "+
			"into the webhook configuration. config/default turns it on; config/certmanager leaves it off and mounts cert-manager's Secret.")
	flag.StringVar(&f.namePrefix, "name-prefix", envOr("NAME_PREFIX", defaultNamePrefix),
		"The installation's name prefix (kustomize's namePrefix; default from $NAME_PREFIX): the default names of the manager's "+
			"own Secrets, webhook Service and webhook configuration below are this prefix and a fixed suffix, as the installer names them.")
	flag.StringVar(&f.certRotation.SecretName, "webhook-cert-secret", "",
		"With --webhook-cert-rotation: the Secret in the manager's namespace that holds the CA and serving certificate "+
			"(empty: --name-prefix + webhook-server-cert).")
	flag.StringVar(&f.certRotation.ServiceName, "webhook-service-name", "",
		"With --webhook-cert-rotation: the webhook Service the serving certificate is issued for (empty: --name-prefix + webhook-service).")
	flag.StringVar(&f.certRotation.WebhookConfigurationName, "webhook-configuration-name", "",
		"With --webhook-cert-rotation: the MutatingWebhookConfiguration whose caBundle is injected "+
			"(empty: --name-prefix + mutating-webhook-configuration).")
	flag.BoolVar(&f.enableHTTP2, "enable-http2", false,
		"If set, HTTP/2 will be enabled for the metrics and webhook servers.")
	flag.StringVar(&f.adapterImage, "adapter-image", envOr("ADAPTER_IMAGE", "ghcr.io/agentmem/memory-adapter:dev"),
		"The image of adapters and their conformance Jobs when a MemoryAdapter sets no spec.image (default from $ADAPTER_IMAGE).")
	flag.StringVar(&f.tokenKeySecret, "token-key-secret", "",
		"NAMESPACE/NAME of the Secret holding the key adapter tokens are derived from; created when absent. "+
			"Empty means $POD_NAMESPACE/ + --name-prefix + "+tokenKeySuffix+".")
	flag.StringVar(&f.adapterCASecret, "adapter-ca-secret", "",
		"NAMESPACE/NAME of the Secret holding the CA that issues adapters' serving certificates; created when absent. "+
			"Empty means $POD_NAMESPACE/ + --name-prefix + "+adapterCASuffix+".")
	flag.StringVar(&f.monitoringNamespace, "monitoring-namespace", os.Getenv("MONITORING_NAMESPACE"),
		"The namespace whose pods each adapter's NetworkPolicy admits to its metrics port (9090) and nothing else; empty admits none "+
			"(default $MONITORING_NAMESPACE, which config/monitoring sets).")
	flag.StringVar(&f.doorbellAddr, "doorbell-bind-address", "",
		"Where the elected manager listens for adapters announcing an evidence change (e.g. :8082), so a verdict follows it within "+
			"seconds instead of a health period; empty: no doorbell, adapters are read every period only.")
	flag.StringVar(&f.doorbellURL, "doorbell-url", "",
		"The doorbell's address as adapters ring it; empty means http://<--name-prefix>"+doorbellSvcSuffix+
			".$POD_NAMESPACE.svc:<port of --doorbell-bind-address>"+health.DoorbellPath+".")
	flag.DurationVar(&f.caLifetime, "adapter-ca-lifetime", 10*365*24*time.Hour,
		"Lifetime of the adapter CA the manager creates when the Secret is absent.")
	flag.DurationVar(&f.certLifetime, "adapter-cert-lifetime", render.DefaultCertLifetime,
		"Lifetime of each adapter's serving certificate; it is renewed after two thirds of it.")
	printVersion := flag.Bool("version", false, "Print the manager's version and exit.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *printVersion {
		fmt.Println(version)
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	// The Go heap may grow to twice its live size before a collection (GOGC=100), and the
	// manager's cache is most of its live heap: without a soft limit below the container's,
	// a ramp of thousands of adapters is OOM-killed with half its RSS garbage. The limit
	// leaves room for the binary's own pages, which the runtime does not count
	// (softlimit.For: 192 MiB of a 256Mi container); GOMEMLIMIT or AUTOMEMLIMIT=off in the
	// environment take precedence, and nothing is set outside a container.
	if limit, err := softlimit.Set(); err != nil {
		setupLog.Error(err, "Could not set GOMEMLIMIT from the cgroup's memory limit; running without a soft limit")
	} else if limit != math.MaxInt64 {
		setupLog.Info("Soft memory limit set", "GOMEMLIMIT", limit)
	}
	if ns := f.monitoringNamespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			setupLog.Error(errors.New(strings.Join(errs, "; ")), "Invalid --monitoring-namespace", "value", ns)
			os.Exit(2)
		}
	}
	doorbellURL, err := doorbellAddress(f.doorbellAddr, f.doorbellURL, f.namePrefix, os.Getenv("POD_NAMESPACE"))
	if err != nil {
		setupLog.Error(err, "Invalid doorbell flags")
		os.Exit(2)
	}
	if f.webhookPort < 1 || f.webhookPort > 65535 {
		setupLog.Error(fmt.Errorf("%d is not a TCP port", f.webhookPort), "Invalid --webhook-port")
		os.Exit(2)
	}
	if f.rotateCerts && f.webhookCertPath == "" {
		// The rotator writes where the webhook server reads: controller-runtime's default
		// directory, named here because asking the server for it would start the server.
		f.webhookCertPath = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}

	if f.kubeAPIQPS <= 0 || f.kubeAPIBurst <= 0 {
		setupLog.Error(fmt.Errorf("--kube-api-qps %g and --kube-api-burst %d must both be positive", f.kubeAPIQPS, f.kubeAPIBurst), "Invalid API client limits")
		os.Exit(2)
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(f.kubeAPIQPS), f.kubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, managerOptions(f))
	if err != nil {
		setupLog.Error(err, "Failed to create manager")
		os.Exit(1)
	}
	// The Events' client: a copy of the configuration, so its own rate limiter.
	eventClient, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		setupLog.Error(err, "Failed to create the Events' client")
		os.Exit(1)
	}

	f.defaultNames()
	keyRef, err := ownSecretRef(f.tokenKeySecret, os.Getenv("POD_NAMESPACE"), f.namePrefix+tokenKeySuffix)
	if err != nil {
		setupLog.Error(err, "Invalid --token-key-secret")
		os.Exit(1)
	}
	caRef, err := ownSecretRef(f.adapterCASecret, os.Getenv("POD_NAMESPACE"), f.namePrefix+adapterCASuffix)
	if err != nil {
		setupLog.Error(err, "Invalid --adapter-ca-secret")
		os.Exit(1)
	}
	loadCtx, cancelLoad := context.WithTimeout(context.Background(), 30*time.Second)
	tokenKey, err := credentials.LoadOrCreateTokenKey(loadCtx, mgr.GetAPIReader(), mgr.GetClient(), keyRef)
	cancelLoad()
	if err != nil {
		setupLog.Error(err, "Failed to load the token key", "secret", keyRef.String())
		os.Exit(1)
	}
	loadCtx, cancelLoad = context.WithTimeout(context.Background(), 30*time.Second)
	ca, err := credentials.LoadOrCreateCA(loadCtx, mgr.GetAPIReader(), mgr.GetClient(), caRef, f.caLifetime)
	cancelLoad()
	if err != nil {
		setupLog.Error(err, "Failed to load the adapter CA", "secret", caRef.String())
		os.Exit(1)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	// Not the manager's own recorder: client-go's events broadcaster behind it keeps every
	// Event it sent for 6 to 12 minutes, tens of megabytes while thousands of adapters come up.
	recorder, err := memoryadapter.NewEventRecorder(mgr, eventClient, "memory-adapter-operator")
	if err != nil {
		setupLog.Error(err, "Failed to set up the event recorder")
		os.Exit(1)
	}

	if err := (&memoryadapter.Reconciler{
		Client:       mgr.GetClient(),
		Recorder:     recorder,
		Evidence:     &health.HTTPEvidenceReader{RootCAs: roots},
		CA:           ca,
		CertLifetime: f.certLifetime,
		DefaultImage: f.adapterImage,
		// The Deployment sets POD_NAMESPACE from the downward API; the adapters'
		// NetworkPolicies admit the manager's pods from that namespace.
		OperatorNamespace:   os.Getenv("POD_NAMESPACE"),
		MonitoringNamespace: f.monitoringNamespace,
		DoorbellAddr:        f.doorbellAddr,
		DoorbellURL:         doorbellURL,
		TokenKey:            tokenKey,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Failed to create controller", "controller", "memoryadapter")
		os.Exit(1)
	}
	if err := (&gate.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  recorder,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Failed to create controller", "controller", "gate")
		os.Exit(1)
	}
	// +kubebuilder:scaffold:builder

	webhookReady, err := setupWebhook(mgr, f)
	if err != nil {
		setupLog.Error(err, "Failed to set up the pod webhook")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Failed to set up health check")
		os.Exit(1)
	}
	// Ready only once the webhook serves: the webhook Service sends the API server to ready
	// pods only, and its failurePolicy is Fail.
	if err := mgr.AddReadyzCheck("readyz", webhookReady); err != nil {
		setupLog.Error(err, "Failed to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("Starting manager", "version", version)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "Failed to run manager")
		os.Exit(1)
	}
}

// envOr is the environment variable name's value, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// defaultNamePrefix is config/default's namePrefix, the installation's unless renamed.
const defaultNamePrefix = "memory-adapter-operator-"

// The suffixes of the manager's own objects' names after the installation's prefix: the names
// config/default gives them, and the admission policy on Secrets allows the manager to write
// (config/policy/secrets_policy.yaml).
const (
	tokenKeySuffix      = "token-key"  //nolint:gosec // a Secret's name, not a credential
	adapterCASuffix     = "adapter-ca" //nolint:gosec // a Secret's name, not a credential
	webhookCertSuffix   = "webhook-server-cert"
	webhookSvcSuffix    = "webhook-service"
	webhookConfigSuffix = "mutating-webhook-configuration"
	doorbellSvcSuffix   = "evidence-doorbell"
)

// doorbellAddress is the URL adapters ring: explicit when given, else the doorbell Service's
// cluster name at the bind address's port; "" when no doorbell listens.
func doorbellAddress(bind, explicit, prefix, namespace string) (string, error) {
	if bind == "" {
		if explicit != "" {
			return "", errors.New("--doorbell-url without --doorbell-bind-address: adapters would ring where nobody listens")
		}
		return "", nil
	}
	_, port, err := net.SplitHostPort(bind)
	if err != nil {
		return "", fmt.Errorf("--doorbell-bind-address %q: %w", bind, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("--doorbell-bind-address %q: want a TCP port", bind)
	}
	if explicit != "" {
		return explicit, nil
	}
	if namespace == "" {
		return "", errors.New("--doorbell-bind-address needs $POD_NAMESPACE (or --doorbell-url) to tell adapters where to ring")
	}
	return "http://" + prefix + doorbellSvcSuffix + "." + namespace + ".svc:" + port + health.DoorbellPath, nil
}

// defaultNames fills the webhook names left empty with the installation's prefix and their
// fixed suffixes.
func (f *managerFlags) defaultNames() {
	for _, n := range []struct {
		v      *string
		suffix string
	}{
		{&f.certRotation.SecretName, webhookCertSuffix},
		{&f.certRotation.ServiceName, webhookSvcSuffix},
		{&f.certRotation.WebhookConfigurationName, webhookConfigSuffix},
	} {
		if *n.v == "" {
			*n.v = f.namePrefix + n.suffix
		}
	}
}

// ownSecretRef resolves a flag naming one of the manager's own Secrets: NAMESPACE/NAME, or
// def in the manager's own namespace.
func ownSecretRef(flagValue, podNamespace, def string) (types.NamespacedName, error) {
	if flagValue == "" {
		if podNamespace == "" {
			return types.NamespacedName{}, errors.New("POD_NAMESPACE is not set: pass the Secret as NAMESPACE/NAME")
		}
		return types.NamespacedName{Namespace: podNamespace, Name: def}, nil
	}
	ns, name, ok := strings.Cut(flagValue, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%q is not NAMESPACE/NAME", flagValue)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// setupWebhook registers the pod webhook, at once when the certificate comes from outside
// (--webhook-cert-path, cert-manager), or once the manager's own rotator has written it: the
// webhook server loads its certificate when it starts and would fail without one. The
// returned check passes once the webhook server is serving.
//
// ENABLE_WEBHOOKS=false leaves the webhook out, as in kubebuilder's scaffold, for a manager
// run outside the cluster (make run) with no certificate; bound pods then fail admission
// (failurePolicy Fail) unless the webhook configuration is not installed either.
func setupWebhook(mgr ctrl.Manager, f managerFlags) (healthz.Checker, error) {
	if os.Getenv("ENABLE_WEBHOOKS") == "false" {
		return healthz.Ping, nil
	}
	register := func() healthz.Checker {
		srv := mgr.GetWebhookServer()
		// The adapter is read from the API server, not the cache: a pod's binding is decided
		// once, at its creation, so it should see spec.access as it is, and the webhook
		// serves before the manager's caches have synced.
		srv.Register(podwebhook.Path, &webhook.Admission{Handler: &podwebhook.PodBinder{Decoder: admission.NewDecoder(scheme), Adapters: mgr.GetAPIReader()}})
		return srv.StartedChecker()
	}
	if !f.rotateCerts {
		return register(), nil
	}
	c := f.certRotation
	c.Namespace = os.Getenv("POD_NAMESPACE")
	c.CertDir = f.webhookCertPath
	if c.Namespace == "" {
		return nil, errors.New("--webhook-cert-rotation needs POD_NAMESPACE, the namespace of the certificate Secret")
	}
	certsReady, err := podwebhook.AddCertRotation(mgr, c)
	if err != nil {
		return nil, err
	}
	var started atomic.Pointer[healthz.Checker]
	go func() {
		<-certsReady
		setupLog.Info("Webhook certificate ready; serving the pod webhook")
		check := register()
		started.Store(&check)
	}()
	return func(req *http.Request) error {
		check := started.Load()
		if check == nil {
			return errors.New("the webhook certificate is not ready yet")
		}
		return (*check)(req)
	}, nil
}

// managerOptions turns the flags into manager options.
func managerOptions(f managerFlags) ctrl.Options {
	var tlsOpts []func(*tls.Config)
	if !f.enableHTTP2 {
		// HTTP/2 stays off by default: its stream handling was the vector of the 2023 rapid
		// reset and stream cancellation CVEs (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8).
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}

	webhookOpts := webhook.Options{TLSOpts: tlsOpts, Port: f.webhookPort}
	if f.webhookCertPath != "" {
		webhookOpts.CertDir = f.webhookCertPath
		webhookOpts.CertName = f.webhookCertName
		webhookOpts.KeyName = f.webhookCertKey
	}

	metricsOpts := metricsserver.Options{
		BindAddress:   f.metricsAddr,
		SecureServing: f.secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if f.secureMetrics {
		// Only callers allowed by a TokenReview and SubjectAccessReview may scrape; see
		// config/rbac/metrics_auth_role.yaml and metrics_reader_role.yaml.
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if f.metricsCertPath != "" {
		metricsOpts.CertDir = f.metricsCertPath
		metricsOpts.CertName = f.metricsCertName
		metricsOpts.KeyName = f.metricsCertKey
	}

	return ctrl.Options{
		Scheme:                 scheme,
		Cache:                  memoryadapter.CacheOptions(),
		Metrics:                metricsOpts,
		WebhookServer:          webhook.NewServer(webhookOpts),
		HealthProbeBindAddress: f.probeAddr,
		PprofBindAddress:       f.pprofAddr,
		LeaderElection:         f.enableLeaderElec,
		LeaderElectionID:       leaderElectionID,
		// The manager exits right after it stops, so releasing the lease early is safe and
		// lets a new leader take over without waiting for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
	}
}
