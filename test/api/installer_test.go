package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// installerImage is the manager image the spec renders the installer with: not the Makefile's
// default, so a rendering that ignored IMG would be caught.
const installerImage = "registry.example.com:5000/mao/manager:v0.0.0-installer-test"

// installerAdapterImage is the adapter image (ADAPTER_IMG) the spec renders with.
const installerAdapterImage = "registry.example.com:5000/mao/adapter:v0.0.0-installer-test"

// renderInstaller runs hack/render-install.sh exactly as `make build-installer` does and
// returns the YAML it printed. It gives the script the suite's kubectl (MAO_KUBECTL), so the
// kustomize is the one the rest of the suite runs and nothing is built when
// KUBEBUILDER_ASSETS points outside hack/k8s-binaries.sh's cache.
func renderInstaller(img, kustomization string, inst installation) []byte {
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "render-install.sh"))
	Expect(err).NotTo(HaveOccurred())
	// The installer goes to a file in a temp dir, as the Makefile writes dist/install.yaml,
	// so a failed render leaves nothing in the checkout.
	out := filepath.Join(GinkgoT().TempDir(), "install.yaml")
	f, err := os.Create(out)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	c, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(c, script, img, kustomization)
	cmd.Env = append(os.Environ(), "MAO_KUBECTL="+kubectlPath, "ADAPTER_IMG="+installerAdapterImage,
		"INSTALL_NAMESPACE="+inst.renameNamespace, "INSTALL_PREFIX="+inst.renamePrefix, "MONITORING_NAMESPACE="+inst.monitoring)
	cmd.Stdout, cmd.Stderr = f, &stderr
	Expect(cmd.Run()).To(Succeed(), "hack/render-install.sh %s %s: %s", img, kustomization, stderr.String())
	b, err := os.ReadFile(out)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// splitObjects decodes a multi-document YAML stream into objects, skipping empty documents
// (kustomize never emits them, but a hand-edited install.yaml may).
func splitObjects(b []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d has no apiVersion, kind or name:\n%s", i, doc)
		}
		objs = append(objs, u)
	}
}

// objectName names an object in failure messages: kind, namespace and name.
func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", u.GetKind(), ns, u.GetName())
	}
	return fmt.Sprintf("%s %s", u.GetKind(), u.GetName())
}

// warningRecorder keeps the API server's warnings. Pod Security admission only warns for
// workload objects such as Deployments (it enforces on pods), so a manager Deployment that the
// installer's restricted namespace would refuse to run shows up here and nowhere else.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// take returns the warnings recorded since the last call and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}

// dryRunner applies rendered objects with a server-side dry-run through a client of its own,
// so the API server's warnings are its caller's alone.
type dryRunner struct {
	c        client.Client
	warnings *warningRecorder
}

func newDryRunner() *dryRunner {
	GinkgoHelper()
	warnings := &warningRecorder{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler, wcfg.WarningHandlerWithContext = nil, warnings
	c, err := client.New(wcfg, client.Options{Scheme: k8sClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return &dryRunner{c: c, warnings: warnings}
}

// apply dry-runs every object and returns one line per rejection or warning, each naming its
// object. Server-side apply, as `make deploy` does (apply --server-side --force-conflicts),
// and not a dry-run create: the suite has already installed the CRD from config/crd/bases,
// and a create of an existing object is refused whatever its content, while an apply
// validates the whole rendered object either way. Apply also refuses fields the schema does
// not declare, as a strict create would. Every object is applied, the Namespace too, so one
// run lists every rejected object rather than the first.
func (d *dryRunner) apply(objs []*unstructured.Unstructured) []string {
	var rejected []string
	for _, u := range objs {
		err := d.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
			client.FieldOwner("memory-adapter-operator"), client.ForceOwnership, client.DryRunAll)
		if err != nil {
			rejected = append(rejected, fmt.Sprintf("%s: %v", objectName(u), err))
		}
		for _, w := range d.warnings.take() {
			rejected = append(rejected, fmt.Sprintf("%s: warning: %s", objectName(u), w))
		}
	}
	return rejected
}

// byKindName indexes objects by "Kind name", failing on a duplicate.
func byKindName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	GinkgoHelper()
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		key := u.GetKind() + " " + u.GetName()
		Expect(out).NotTo(HaveKey(key), "the installer holds %s twice", objectName(u))
		out[key] = u
	}
	return out
}

// certVolumeSecret returns the Secret the rendered Deployment mounts as its webhook
// certificate volume.
func certVolumeSecret(deploy *unstructured.Unstructured) string {
	GinkgoHelper()
	volumes, _, err := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "volumes")
	Expect(err).NotTo(HaveOccurred())
	for _, v := range volumes {
		m, ok := v.(map[string]any)
		Expect(ok).To(BeTrue())
		if m["name"] == "webhook-certs" {
			name, _, _ := unstructured.NestedString(m, "secret", "secretName")
			return name
		}
	}
	Fail("the rendered Deployment has no webhook-certs volume")
	return ""
}

// expectWebhookPortAgrees checks that the manager listens for the webhook where its container
// publishes the webhook-server port, which the webhook Service targets by name.
func expectWebhookPortAgrees(deploy *unstructured.Unstructured) {
	GinkgoHelper()
	var flagPort string
	for _, a := range managerArgs(deploy) {
		if v, ok := strings.CutPrefix(a, "--webhook-port="); ok {
			flagPort = v
		}
	}
	Expect(flagPort).NotTo(BeEmpty(), "the manager is not given --webhook-port")
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	var published []string
	for _, ct := range containers {
		ports, _, _ := unstructured.NestedSlice(ct.(map[string]any), "ports")
		for _, p := range ports {
			if pm := p.(map[string]any); pm["name"] == "webhook-server" {
				published = append(published, fmt.Sprint(pm["containerPort"]))
			}
		}
	}
	Expect(published).To(Equal([]string{flagPort}), "--webhook-port and the container's webhook-server port differ")
}

// managerArgs returns the manager container's args in the rendered Deployment.
func managerArgs(deploy *unstructured.Unstructured) []string {
	GinkgoHelper()
	containers, _, err := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	Expect(err).NotTo(HaveOccurred())
	for _, ct := range containers {
		m, ok := ct.(map[string]any)
		Expect(ok).To(BeTrue())
		if m["name"] == "manager" {
			args, _, err := unstructured.NestedStringSlice(m, "args")
			Expect(err).NotTo(HaveOccurred())
			return args
		}
	}
	Fail("the rendered Deployment has no manager container")
	return nil
}

// installation is a way to render the installer: as config/default names it, or renamed
// through hack/render-install.sh's INSTALL_NAMESPACE and INSTALL_PREFIX.
type installation struct {
	// renameNamespace and renamePrefix are given to the render; empty keeps config/default's.
	renameNamespace, renamePrefix string
	// namespace and prefix are what the installer must then name.
	namespace, prefix string
	// monitoring is MONITORING_NAMESPACE: config/monitoring added, with that namespace.
	monitoring string
}

// installations are the renderings every installer spec runs on.
var installations = []installation{
	{namespace: "memory-adapter-operator-system", prefix: "memory-adapter-operator-"},
	{
		renameNamespace: "platform-agent-memory", renamePrefix: "pam-", namespace: "platform-agent-memory", prefix: "pam-",
		monitoring: "observability",
	},
}

var _ = Describe("the rendered installer (make build-installer)", Ordered, func() {
	// cert-manager's CRDs, for its variant, once for every installation: envtest does not
	// always finish deleting a CRD, so installing them again for the next one could fail.
	BeforeAll(func() {
		By("installing cert-manager's CRDs from its Go module, " + certManagerModule())
		dir := certManagerCRDs()
		crds, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(crds).To(ContainElement(HaveField("Name", "certificates.cert-manager.io")))
		DeferCleanup(func() {
			Expect(envtest.UninstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}})).To(Succeed())
		})
	})
	for _, inst := range installations {
		describeInstaller(inst)
	}
})

// describeInstaller checks the installers rendered as inst names them.
func describeInstaller(inst installation) bool {
	return Describe("in namespace "+inst.namespace+" with prefix "+inst.prefix, Ordered, func() {
		describeInstallerSpecs(inst)
	})
}

// describeInstallerSpecs are the specs of describeInstaller.
func describeInstallerSpecs(inst installation) {
	var (
		objs  []*unstructured.Unstructured
		nsObj *unstructured.Unstructured
		dry   *dryRunner
	)
	BeforeAll(func() {
		var err error
		objs, err = splitObjects(renderInstaller(installerImage, "config/default", inst))
		Expect(err).NotTo(HaveOccurred())
		dry = newDryRunner()

		// Namespaced objects can only be dry-run into a namespace that exists, so the
		// installer's Namespace is created for real first, from the rendered object itself (a
		// strict create, so it is checked like the rest). envtest runs no namespace
		// controller, and no other spec uses this fixed name, so it is deleted at the end only
		// to leave the API server as it was.
		for _, u := range objs {
			if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" {
				Expect(nsObj).To(BeNil(), "the installer holds more than one Namespace")
				nsObj = u
			}
		}
		Expect(nsObj).NotTo(BeNil(), "the installer holds no Namespace")
		ns := nsObj.DeepCopy()
		Expect(dry.c.Create(ctx, ns, client.FieldValidation("Strict"))).To(Succeed(), objectName(nsObj))
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed()) })
		Expect(dry.warnings.take()).To(BeEmpty(), objectName(nsObj))
	})

	It("is accepted object by object by a server-side dry-run apply, without warnings, and holds what the operator needs", func() {
		Expect(dry.apply(objs)).To(BeEmpty(), "the API server rejected or warned about these rendered objects")

		// What the operator cannot run without, so that a kustomization that drops a
		// resource (the dry-run would not notice an absence) fails here.
		index := byKindName(objs)
		prefix := inst.prefix
		Expect(nsObj.GetName()).To(Equal(inst.namespace))
		for _, key := range []string{
			"Namespace " + inst.namespace,
			"CustomResourceDefinition memoryadapters.memory.agentmem.io",
			"ServiceAccount " + prefix + "controller-manager",
			"ClusterRole " + prefix + "manager-role",
			"ClusterRoleBinding " + prefix + "manager-rolebinding",
			"Role " + prefix + "leader-election-role",
			"RoleBinding " + prefix + "leader-election-rolebinding",
			"Service " + prefix + "controller-manager-metrics-service",
			"Deployment " + prefix + "controller-manager",
			// The pod webhook, the Service the API server calls it through, and the Secret the
			// manager's own rotator fills; their names are cmd/main.go's flag defaults.
			"MutatingWebhookConfiguration " + prefix + "mutating-webhook-configuration",
			"Service " + prefix + "webhook-service",
			"Secret " + prefix + "webhook-server-cert",
			// The admission policies that narrow the manager's Secret and Pod writes.
			"ValidatingAdmissionPolicy " + prefix + "manager-secrets",
			"ValidatingAdmissionPolicyBinding " + prefix + "manager-secrets",
			"ValidatingAdmissionPolicy " + prefix + "manager-pods",
			"ValidatingAdmissionPolicyBinding " + prefix + "manager-pods",
			"ValidatingAdmissionPolicy " + prefix + "manager-workloads",
			"ValidatingAdmissionPolicyBinding " + prefix + "manager-workloads",
		} {
			Expect(index).To(HaveKey(key), "the installer lacks %s", key)
		}
		for key, u := range index {
			switch u.GetKind() {
			case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration":
			default:
				Expect(u.GetNamespace()).To(Equal(nsObj.GetName()), "%s is outside the installer's namespace", key)
			}
		}

		// The manager runs the image given to the render, under the installer's service
		// account, and that account is the one the manager role is bound to.
		deploy := index["Deployment "+prefix+"controller-manager"]
		containers, _, err := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
		Expect(err).NotTo(HaveOccurred())
		var images, adapterImages []string
		for _, ct := range containers {
			m, ok := ct.(map[string]any)
			Expect(ok).To(BeTrue())
			if m["name"] != "manager" {
				continue
			}
			images = append(images, fmt.Sprint(m["image"]))
			env, _, _ := unstructured.NestedSlice(m, "env")
			for _, e := range env {
				if ev, ok := e.(map[string]any); ok && ev["name"] == "ADAPTER_IMAGE" {
					name, _, _ := unstructured.NestedString(ev, "valueFrom", "configMapKeyRef", "name")
					key, _, _ := unstructured.NestedString(ev, "valueFrom", "configMapKeyRef", "key")
					cm := index["ConfigMap "+name]
					Expect(cm).NotTo(BeNil(), "the manager's ADAPTER_IMAGE names ConfigMap %q, which the installer lacks", name)
					img, _, _ := unstructured.NestedString(cm.Object, "data", key)
					adapterImages = append(adapterImages, img)
					Expect(name).To(Equal(prefix+"images"), "ADAPTER_IMAGE comes from the images ConfigMap the admission policy reads")
				}
			}
		}
		Expect(images).To(Equal([]string{installerImage}), "the manager container's image is not IMG")
		Expect(adapterImages).To(Equal([]string{installerAdapterImage}), "the manager's ADAPTER_IMAGE is not ADAPTER_IMG")
		Expect(managerArgs(deploy)).To(ContainElement("--webhook-cert-rotation"), "config/default issues its own webhook certificate")
		expectWebhookPortAgrees(deploy)
		replicas, _, _ := unstructured.NestedFieldNoCopy(deploy.Object, "spec", "replicas")
		Expect(fmt.Sprint(replicas)).To(Equal("2"), "two manager replicas, one leading")
		Expect(managerArgs(deploy)).To(ContainElement("--leader-elect"), "two replicas must elect a leader")
		Expect(index).To(HaveKey("Role " + prefix + "leader-election-role"))
		Expect(certVolumeSecret(deploy)).To(Equal(prefix+"webhook-server-cert"), "the webhook server reads the Secret the rotator fills")
		sa, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName")
		Expect(sa).To(Equal(prefix + "controller-manager"))
		binding := index["ClusterRoleBinding "+prefix+"manager-rolebinding"]
		roleName, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
		Expect(roleName).To(Equal(prefix + "manager-role"))
		subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
		Expect(subjects).To(ContainElement(And(
			HaveKeyWithValue("kind", "ServiceAccount"),
			HaveKeyWithValue("name", sa),
			HaveKeyWithValue("namespace", nsObj.GetName()),
		)), "the manager role is not bound to the manager's service account")
		// The policies name the manager by the user the API server gives its ServiceAccount,
		// and its own Secrets by the namespace and prefix: config/default's replacements write
		// them, so they must agree with what was rendered, renamed or not.
		user := "system:serviceaccount:" + nsObj.GetName() + ":" + sa
		for _, p := range []string{"manager-secrets", "manager-pods", "manager-workloads", "manager-workload-sources", "manager-configmaps"} {
			policy := index["ValidatingAdmissionPolicy "+prefix+p]
			Expect(policy).NotTo(BeNil(), "the installer lacks policy %s", prefix+p)
			conds, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
			Expect(conds).To(ContainElement(HaveKeyWithValue("expression",
				"request.userInfo.username == 'system:serviceaccount:' + '"+nsObj.GetName()+"' + ':' + '"+sa+"'")),
				"policy %s does not match the rendered ServiceAccount %s", p, user)
			failure, _, _ := unstructured.NestedString(policy.Object, "spec", "failurePolicy")
			Expect(failure).To(Equal("Fail"))
			ref, _, _ := unstructured.NestedString(index["ValidatingAdmissionPolicyBinding "+prefix+p].Object, "spec", "policyName")
			Expect(ref).To(Equal(prefix+p), "the binding names the rendered policy")
		}
		for _, p := range []string{"manager-secrets", "manager-configmaps"} {
			vars, _, _ := unstructured.NestedSlice(index["ValidatingAdmissionPolicy "+prefix+p].Object, "spec", "variables")
			Expect(vars).To(ContainElements(
				And(HaveKeyWithValue("name", "installNamespace"), HaveKeyWithValue("expression", "'"+nsObj.GetName()+"'")),
				And(HaveKeyWithValue("name", "installPrefix"), HaveKeyWithValue("expression", "'"+prefix+"'")),
			), "policy %s does not name the rendered namespace and prefix", p)
		}
		paramRef, _, _ := unstructured.NestedStringMap(index["ValidatingAdmissionPolicyBinding "+prefix+"manager-workload-sources"].Object, "spec", "paramRef")
		Expect(paramRef).To(And(HaveKeyWithValue("name", prefix+"images"), HaveKeyWithValue("namespace", nsObj.GetName())),
			"the images policy's parameter is the rendered images ConfigMap")
		Expect(index).To(HaveKey("ConfigMap " + prefix + "images"))
		// The manager derives its own Secrets' and webhook objects' names from the prefix the
		// policies allow, and may update only the rendered webhook configuration.
		Expect(managerEnv(deploy)).To(HaveKeyWithValue("NAME_PREFIX", prefix))
		Expect(fmt.Sprint(index["ClusterRole "+prefix+"manager-role"].Object["rules"])).To(
			ContainSubstring("resourceNames:[" + prefix + "mutating-webhook-configuration]"))
		if inst.renamePrefix != "" {
			expectNoDefaultName(objs)
		}
		// config/monitoring: the manager's monitoring namespace, and the dashboard for
		// Grafana's sidecar, only when asked for.
		dashboard := index["ConfigMap "+prefix+"grafana-dashboard"]
		if inst.monitoring == "" {
			Expect(managerEnv(deploy)).NotTo(HaveKey("MONITORING_NAMESPACE"))
			Expect(dashboard).To(BeNil())
		} else {
			Expect(managerEnv(deploy)).To(HaveKeyWithValue("MONITORING_NAMESPACE", inst.monitoring))
			Expect(dashboard).NotTo(BeNil(), "MONITORING_NAMESPACE ships the dashboard")
			Expect(dashboard.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
			raw, _, _ := unstructured.NestedString(dashboard.Object, "data", "memory-adapters.json")
			var d map[string]any
			Expect(json.Unmarshal([]byte(raw), &d)).To(Succeed(), "the dashboard is not JSON")
			Expect(d).To(HaveKeyWithValue("uid", "memory-adapters"))
		}
		Expect(index).To(HaveKey("Secret "+prefix+"webhook-server-cert"), "the Secret policy names the certificate Secret the installer ships")
		webhookService, _, _ := unstructured.NestedSlice(index["MutatingWebhookConfiguration "+prefix+"mutating-webhook-configuration"].Object, "webhooks")
		Expect(webhookService).To(HaveLen(1))
		Expect(webhookService[0]).To(HaveKeyWithValue("clientConfig", HaveKeyWithValue("service", And(
			HaveKeyWithValue("name", prefix+"webhook-service"), HaveKeyWithValue("namespace", nsObj.GetName())))))
	})

	It("has a cert-manager variant (config/certmanager) that cert-manager's own CRDs accept", func() {
		cm, err := splitObjects(renderInstaller(installerImage, "config/certmanager", inst))
		Expect(err).NotTo(HaveOccurred())
		Expect(dry.apply(cm)).To(BeEmpty(), "the API server rejected or warned about these rendered objects")
		index := byKindName(cm)
		prefix := inst.prefix
		if inst.renamePrefix != "" {
			expectNoDefaultName(cm)
		}
		Expect(index).To(HaveKey("Issuer " + prefix + "selfsigned-issuer"))
		Expect(index).To(HaveKey("Certificate " + prefix + "serving-cert"))
		Expect(index).NotTo(HaveKey("Secret "+prefix+"webhook-server-cert"), "cert-manager creates the Secret")
		Expect(index["MutatingWebhookConfiguration "+prefix+"mutating-webhook-configuration"].GetAnnotations()).To(
			HaveKeyWithValue("cert-manager.io/inject-ca-from", nsObj.GetName()+"/"+prefix+"serving-cert"))
		secretName, _, _ := unstructured.NestedString(index["Certificate "+prefix+"serving-cert"].Object, "spec", "secretName")
		Expect(secretName).To(Equal(prefix + "webhook-server-cert"))
		issuer, _, _ := unstructured.NestedString(index["Certificate "+prefix+"serving-cert"].Object, "spec", "issuerRef", "name")
		Expect(issuer).To(Equal(prefix + "selfsigned-issuer"))
		dnsNames, _, _ := unstructured.NestedStringSlice(index["Certificate "+prefix+"serving-cert"].Object, "spec", "dnsNames")
		Expect(dnsNames).To(Equal([]string{
			prefix + "webhook-service." + nsObj.GetName() + ".svc", prefix + "webhook-service." + nsObj.GetName() + ".svc.cluster.local",
		}))
		Expect(certVolumeSecret(index["Deployment "+prefix+"controller-manager"])).To(Equal(prefix+"webhook-server-cert"), "the webhook server reads cert-manager's Secret")
		expectWebhookPortAgrees(index["Deployment "+prefix+"controller-manager"])
		args := managerArgs(index["Deployment "+prefix+"controller-manager"])
		Expect(args[len(args)-2:]).To(Equal([]string{"--webhook-cert-rotation=false", "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs"}),
			"the last flags win: no rotation, and the mounted Secret")
	})
}

// managerEnv returns the manager container's plain (value) environment variables.
func managerEnv(deploy *unstructured.Unstructured) map[string]string {
	GinkgoHelper()
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	out := map[string]string{}
	for _, ct := range containers {
		m := ct.(map[string]any)
		if m["name"] != "manager" {
			continue
		}
		env, _, _ := unstructured.NestedSlice(m, "env")
		for _, e := range env {
			if ev := e.(map[string]any); ev["value"] != nil {
				out[fmt.Sprint(ev["name"])] = fmt.Sprint(ev["value"])
			}
		}
	}
	return out
}

// expectNoDefaultName fails if any string of a renamed installer still names config/default's
// namespace or carries its prefix: a reference the rename did not reach. The operator's label
// values (memory-adapter-operator, with no dash after it) are the same in every installation.
func expectNoDefaultName(objs []*unstructured.Unstructured) {
	GinkgoHelper()
	var stale []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range t {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		case string:
			if strings.Contains(t, "memory-adapter-operator-") {
				stale = append(stale, path+": "+t)
			}
		}
	}
	for _, u := range objs {
		walk(objectName(u), u.Object)
	}
	Expect(stale).To(BeEmpty(), "the renamed installer still names the default installation")
}
