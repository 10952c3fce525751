package manageridentity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Identity is an installation's namespace and name prefix: config/default's namespace and
// namePrefix, or INSTALL_NAMESPACE and INSTALL_PREFIX of hack/render-install.sh. Every name
// the admission policies match is derived from them.
type Identity struct {
	// Namespace is the manager's namespace.
	Namespace string
	// Prefix is the name prefix kustomize adds to every object of the installation.
	Prefix string
}

// Default is the installation config/default renders unchanged.
var Default = Identity{Namespace: Namespace, Prefix: Prefix}

// The names of the default installation, for suites that install it.
const (
	// Namespace is the manager's namespace as config/default renders it.
	Namespace = "memory-adapter-operator-system"
	// Prefix is config/default's namePrefix, which kustomize adds to every object name.
	Prefix = "memory-adapter-operator-"
	// TokenKeySecret is the token key Secret in Namespace (cmd/main.go's default).
	TokenKeySecret = Prefix + "token-key"
	// AdapterCASecret is the adapter CA Secret in Namespace (cmd/main.go's default).
	AdapterCASecret = Prefix + "adapter-ca"
	// WebhookCertSecret is the Secret the manager's rotator keeps its webhook certificate in.
	WebhookCertSecret = Prefix + "webhook-server-cert"
	// ImagesConfigMapName is the ConfigMap in Namespace that lists the images the manager may
	// run, the parameter of its workloads policy.
	ImagesConfigMapName = Prefix + "images"
	// WebhookConfiguration is the operator's own MutatingWebhookConfiguration.
	WebhookConfiguration = Prefix + "mutating-webhook-configuration"
)

// ServiceAccount is the manager's ServiceAccount in Namespace.
func (id Identity) ServiceAccount() string { return id.Prefix + "controller-manager" }

// User is the name the API server gives the ServiceAccount, the one the policies match.
func (id Identity) User() string {
	return "system:serviceaccount:" + id.Namespace + ":" + id.ServiceAccount()
}

// TokenKeySecret is the token key Secret in Namespace (cmd/main.go's default).
func (id Identity) TokenKeySecret() string { return id.Prefix + "token-key" }

// AdapterCASecret is the adapter CA Secret in Namespace (cmd/main.go's default).
func (id Identity) AdapterCASecret() string { return id.Prefix + "adapter-ca" }

// WebhookCertSecret is the Secret the manager's rotator keeps its webhook certificate in.
func (id Identity) WebhookCertSecret() string { return id.Prefix + "webhook-server-cert" }

// ImagesConfigMap is the ConfigMap in Namespace that lists the images the manager may run.
func (id Identity) ImagesConfigMap() string { return id.Prefix + "images" }

// WebhookConfiguration is the operator's own MutatingWebhookConfiguration.
func (id Identity) WebhookConfiguration() string { return id.Prefix + "mutating-webhook-configuration" }

// Install is InstallAs with the Default identity.
func Install(ctx context.Context, admin client.Client, cfg *rest.Config, root string, allowedImages ...string) (*rest.Config, error) {
	return InstallAs(ctx, admin, cfg, root, Default, allowedImages...)
}

// InstallAs renders the installer under root (the repository's root) with hack/render-install.sh
// as id names it, creates from it what defines the manager's identity (its Namespace and
// ServiceAccount, its roles and their bindings, the images ConfigMap with allowedImages appended
// to its allow-list, as a platform admin would list the images a suite's adapters name, and the
// admission policies with their bindings), waits until the API server enforces the policies,
// and returns a copy of cfg that impersonates the ServiceAccount. admin must be allowed to
// create all of it. The objects are the rendered ones, not the files under config/, so a
// renaming that left a policy naming the default identity is caught by the suite that runs as
// the renamed one.
func InstallAs(ctx context.Context, admin client.Client, cfg *rest.Config, root string, id Identity, allowedImages ...string) (*rest.Config, error) {
	objs, err := Render(ctx, root, id)
	if err != nil {
		return nil, err
	}
	var sa, roles, policies int
	for _, u := range objs {
		switch u.GetKind() {
		case "Namespace":
			if u.GetName() != id.Namespace {
				return nil, fmt.Errorf("the installer's Namespace is %s, not %s", u.GetName(), id.Namespace)
			}
		case "ServiceAccount":
			sa++
		case "ClusterRole", "Role":
			roles++
		case "ConfigMap":
			if u.GetName() == id.ImagesConfigMap() {
				if err := appendImages(u, allowedImages); err != nil {
					return nil, err
				}
			}
		case "ValidatingAdmissionPolicy":
			policies++
		case "ClusterRoleBinding", "RoleBinding", "ValidatingAdmissionPolicyBinding":
		default:
			continue
		}
		if clusterScoped[u.GetKind()] {
			// kustomize gives every object the namespace; the API server takes none here.
			u.SetNamespace("")
		}
		if err := ensure(ctx, admin, u); err != nil {
			return nil, err
		}
	}
	if sa != 1 || roles == 0 || policies == 0 {
		return nil, fmt.Errorf("the installer holds %d ServiceAccounts, %d roles and %d policies", sa, roles, policies)
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: id.User(), Groups: []string{
		"system:serviceaccounts", "system:serviceaccounts:" + id.Namespace, "system:authenticated",
	}}
	if err := waitEnforced(ctx, admin, c, id); err != nil {
		return nil, err
	}
	return c, nil
}

// clusterScoped are the installer's kinds that have no namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"CustomResourceDefinition": true, "MutatingWebhookConfiguration": true,
}

// Render runs hack/render-install.sh under root for config/default as id names it and returns
// its objects. It uses the kubectl of $KUBEBUILDER_ASSETS (hack/k8s-binaries.sh puts one
// there), so nothing is built.
func Render(ctx context.Context, root string, id Identity) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", root, err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: its kubectl renders the installer")
	}
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, filepath.Join(abs, "hack", "render-install.sh"), "manager:identity-suite")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "MAO_KUBECTL="+filepath.Join(assets, "kubectl"), "ADAPTER_IMG=",
		"INSTALL_NAMESPACE="+id.Namespace, "INSTALL_PREFIX="+id.Prefix)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("hack/render-install.sh: %w: %s", err, stderr.String())
	}
	return decode(out, "the rendered installer")
}

// appendImages adds extra lines to the images ConfigMap's allowedImages.
func appendImages(u *unstructured.Unstructured, extra []string) error {
	data, _, err := unstructured.NestedStringMap(u.Object, "data")
	if err != nil {
		return fmt.Errorf("images ConfigMap: data: %w", err)
	}
	if data["adapterImage"] == "" {
		return errors.New("images ConfigMap: no data.adapterImage")
	}
	data["allowedImages"] = strings.TrimRight(data["allowedImages"], "\n")
	for _, img := range extra {
		data["allowedImages"] += "\n" + img
	}
	return unstructured.SetNestedStringMap(u.Object, data, "data")
}

// decode splits a multi-document YAML stream into objects.
func decode(raw []byte, what string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(raw), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("decode %s: %w", what, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// ensure creates obj, leaving an existing one as it is (a second suite in the same API server).
func ensure(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// waitEnforced waits until every policy refuses the manager: the API server loads admission
// policies asynchronously, so a suite that started right after creating them would run its
// first specs unguarded. It probes with dry-run requests that change nothing.
func waitEnforced(ctx context.Context, admin client.Client, asManager *rest.Config, id Identity) error {
	mgr, err := client.New(asManager, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		return fmt.Errorf("manager client: %w", err)
	}
	probePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: id.Namespace},
		// Hardened: the installer's Namespace enforces the restricted Pod Security Standard.
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{Name: "probe", Image: "policy-probe:never-runs", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
	if err := ensure(ctx, admin, probePod); err != nil {
		return err
	}
	defer func() { _ = admin.Delete(context.Background(), probePod) }()
	probeSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: id.Namespace}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		secretErr := mgr.Create(ctx, probeSecret.DeepCopy(), client.DryRunAll)
		patch := []byte(`{"metadata":{"labels":{"policy-probe":"changed"}}}`)
		podErr := mgr.Patch(ctx, &corev1.Pod{ObjectMeta: probePod.ObjectMeta}, client.RawPatch(types.MergePatchType, patch), client.DryRunAll)
		jobErr := mgr.Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: id.Namespace},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: probePod.Spec.Containers,
			}}},
		}, client.DryRunAll)
		last = fmt.Errorf("secret create: %w; pod label patch: %w; job create: %w", secretErr, podErr, jobErr)
		return id.RefusedByPolicy(secretErr) && id.RefusedByPolicy(podErr) && id.RefusedByPolicy(jobErr), nil
	})
	if err != nil {
		return fmt.Errorf("the admission policies are not enforced after a minute (last: %w)", last)
	}
	return nil
}

// RefusedByPolicy reports whether err is a refusal by one of config/policy's admission
// policies of the Default installation, as opposed to RBAC's (whose message names no policy).
func RefusedByPolicy(err error) bool { return Default.RefusedByPolicy(err) }

// RefusedByPolicy reports whether err is a refusal by one of id's admission policies, as
// opposed to RBAC's (whose message names no policy).
func (id Identity) RefusedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") &&
		strings.Contains(err.Error(), "'"+id.Prefix+"manager-")
}
