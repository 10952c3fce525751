package manageridentity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	// Namespace is the manager's namespace as config/default renders it.
	Namespace = "memory-adapter-operator-system"
	// ServiceAccount is the manager's ServiceAccount as config/default renders it.
	ServiceAccount = "memory-adapter-operator-controller-manager"
	// User is the name the API server gives the ServiceAccount, the one the policies match.
	User = "system:serviceaccount:" + Namespace + ":" + ServiceAccount
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

// Install creates Namespace, the generated roles bound to ServiceAccount, the images
// ConfigMap (config/policy/images.yaml, with allowedImages appended to its allow-list, as a
// platform admin would list the images a suite's adapters name) and the admission policies
// with their bindings, from the files under root (the repository's root), waits until the API
// server enforces the policies, and returns a copy of cfg that impersonates the
// ServiceAccount. admin must be allowed to create all of it.
func Install(ctx context.Context, admin client.Client, cfg *rest.Config, root string, allowedImages ...string) (*rest.Config, error) {
	if err := ensure(ctx, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return nil, err
	}
	if err := ensure(ctx, admin, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: Namespace}}); err != nil {
		return nil, err
	}
	roles, err := objects(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount, Namespace: Namespace}}
	for _, u := range roles {
		// kustomize prefixes the names and places the namespaced Role in Namespace.
		u.SetName(Prefix + u.GetName())
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: u.GetKind(), Name: u.GetName()}
		var binding client.Object
		switch u.GetKind() {
		case "ClusterRole":
			binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}, RoleRef: ref, Subjects: subject}
		case "Role":
			if u.GetNamespace() != "" && u.GetNamespace() != Namespace {
				return nil, fmt.Errorf("role.yaml: Role %s is in namespace %s, not the manager's", u.GetName(), u.GetNamespace())
			}
			u.SetNamespace(Namespace)
			binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: Namespace}, RoleRef: ref, Subjects: subject}
		default:
			return nil, fmt.Errorf("role.yaml holds a %s", u.GetKind())
		}
		if err := ensure(ctx, admin, u); err != nil {
			return nil, err
		}
		if err := ensure(ctx, admin, binding); err != nil {
			return nil, err
		}
	}
	if len(roles) != 2 {
		return nil, fmt.Errorf("role.yaml holds %d roles, want the ClusterRole and the manager namespace's Role", len(roles))
	}
	images, err := ImagesConfigMap(root, allowedImages...)
	if err != nil {
		return nil, err
	}
	if err := ensure(ctx, admin, images); err != nil {
		return nil, err
	}
	policies, err := PolicyObjects(root)
	if err != nil {
		return nil, err
	}
	for _, u := range policies {
		if err := ensure(ctx, admin, u); err != nil {
			return nil, err
		}
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: User, Groups: []string{
		"system:serviceaccounts", "system:serviceaccounts:" + Namespace, "system:authenticated",
	}}
	if err := waitEnforced(ctx, admin, c); err != nil {
		return nil, err
	}
	return c, nil
}

// ImagesConfigMap returns config/policy/images.yaml under root as config/default renders it,
// with extra entries appended to allowedImages.
func ImagesConfigMap(root string, extra ...string) (*corev1.ConfigMap, error) {
	objs, err := objects(filepath.Join(root, "config", "policy", "images.yaml"))
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 || objs[0].GetKind() != "ConfigMap" {
		return nil, errors.New("config/policy/images.yaml holds no single ConfigMap")
	}
	data, _, err := unstructured.NestedStringMap(objs[0].Object, "data")
	if err != nil {
		return nil, fmt.Errorf("config/policy/images.yaml: data: %w", err)
	}
	if data["adapterImage"] == "" {
		return nil, errors.New("config/policy/images.yaml: no data.adapterImage")
	}
	data["allowedImages"] = strings.TrimRight(data["allowedImages"], "\n")
	for _, img := range extra {
		data["allowedImages"] += "\n" + img
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ImagesConfigMapName, Namespace: Namespace}, Data: data}, nil
}

// PolicyObjects returns the admission policies and bindings of config/policy under root, named
// as config/default renders them.
func PolicyObjects(root string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(root, "config", "policy", "*_policy.yaml"))
	if err != nil {
		return nil, fmt.Errorf("config/policy: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("config/policy holds no *_policy.yaml")
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := objects(f)
		if err != nil {
			return nil, err
		}
		for _, u := range objs {
			u.SetName(Prefix + u.GetName())
		}
		out = append(out, objs...)
	}
	return out, nil
}

// objects decodes the YAML documents of a file.
func objects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
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
func waitEnforced(ctx context.Context, admin client.Client, asManager *rest.Config) error {
	mgr, err := client.New(asManager, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		return fmt.Errorf("manager client: %w", err)
	}
	probePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: Namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "policy-probe:never-runs"}}},
	}
	if err := ensure(ctx, admin, probePod); err != nil {
		return err
	}
	defer func() { _ = admin.Delete(context.Background(), probePod) }()
	probeSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: Namespace}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		secretErr := mgr.Create(ctx, probeSecret.DeepCopy(), client.DryRunAll)
		patch := []byte(`{"metadata":{"labels":{"policy-probe":"changed"}}}`)
		podErr := mgr.Patch(ctx, &corev1.Pod{ObjectMeta: probePod.ObjectMeta}, client.RawPatch(types.MergePatchType, patch), client.DryRunAll)
		jobErr := mgr.Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: Namespace},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: probePod.Spec.Containers,
			}}},
		}, client.DryRunAll)
		last = fmt.Errorf("secret create: %w; pod label patch: %w; job create: %w", secretErr, podErr, jobErr)
		return RefusedByPolicy(secretErr) && RefusedByPolicy(podErr) && RefusedByPolicy(jobErr), nil
	})
	if err != nil {
		return fmt.Errorf("the admission policies are not enforced after a minute (last: %w)", last)
	}
	return nil
}

// RefusedByPolicy reports whether err is a refusal by one of config/policy's admission
// policies, as opposed to RBAC's (whose message names no policy).
func RefusedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") &&
		strings.Contains(err.Error(), Prefix+"manager-")
}
