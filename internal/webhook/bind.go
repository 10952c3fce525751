package webhook

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/api/requirements"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// Names the webhook writes into pods; the gate controller and docs/gating.md use the same.
const (
	// GateName is the scheduling gate that holds a bound pod until its adapter is ready.
	GateName = "memory.agentmem.io/adapter-ready"
	// EnvBindingRoot is the Service Binding specification's variable naming the directory that
	// holds one subdirectory per binding.
	EnvBindingRoot = "SERVICE_BINDING_ROOT"
	// DefaultBindingRoot is the binding root set when a container sets none.
	DefaultBindingRoot = "/bindings"
	// volumePrefix starts the name of the binding volume; the adapter name (at most 40
	// characters) completes it within a volume name's 63.
	volumePrefix = "memory-binding-"
	// bindingFileMode makes the projected files readable by any container user: a pod that
	// runs as non-root without an fsGroup could not read root-owned 0440 files. The mount is
	// read-only either way.
	bindingFileMode = 0o444
)

// adapterName is a MemoryAdapter's name rule (its CRD's CEL rule): a DNS label of at most 40
// characters starting with a letter.
var adapterName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// VolumeName is the name of the binding volume for the adapter.
func VolumeName(adapter string) string { return volumePrefix + adapter }

// ServiceAccountOf is the ServiceAccount a pod runs as: spec.serviceAccountName, or the
// namespace's "default" that the API server sets when it is empty.
func ServiceAccountOf(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

// BindingSecretFor is the binding Secret a pod running as serviceAccount mounts: with
// spec.access (access non-nil) its ServiceAccount's own, else the adapter's.
func BindingSecretFor(adapter, serviceAccount string, access *memoryv1alpha1.AccessSpec) string {
	if access != nil {
		return render.AccessBindingName(adapter, serviceAccount)
	}
	return render.BindingSecretName(adapter)
}

// Bind mutates pod in place as the webhook admits it, and reports whether it applies at all:
// a pod without the requires annotation (or without the adapter label) is left untouched. An
// error means the pod must be rejected; its message is the user's. Bind is idempotent, so a
// reinvocation after another webhook added containers only mounts the binding into those.
// access is the named adapter's spec.access as the webhook last saw it (nil without it, or
// when the adapter does not exist yet): it decides which binding Secret the pod mounts, and
// the gate holds a pod whose Secret does not match the adapter it finds.
func Bind(pod *corev1.Pod, access *memoryv1alpha1.AccessSpec) (bool, error) {
	adapter, labelled := pod.Labels[render.LabelAdapter]
	raw, annotated := pod.Annotations[requirements.AnnotationRequires]
	if !labelled || !annotated {
		return false, nil
	}
	if len(adapter) > 40 || !adapterName.MatchString(adapter) {
		return false, fmt.Errorf("label %s: %q is not a MemoryAdapter name (a DNS label of at most 40 characters starting with a letter)",
			render.LabelAdapter, adapter)
	}
	if _, err := requirements.Parse(raw); err != nil {
		return false, err
	}
	if v, ok := pod.Labels[render.LabelBoundTo]; ok && v != adapter {
		return false, fmt.Errorf("label %s is %q but label %s names %q: a pod binds to one adapter",
			render.LabelBoundTo, v, render.LabelAdapter, adapter)
	}
	if err := addVolume(pod, adapter, BindingSecretFor(adapter, ServiceAccountOf(pod), access)); err != nil {
		return false, err
	}
	for i := range pod.Spec.InitContainers {
		if err := mount(&pod.Spec.InitContainers[i], adapter); err != nil {
			return false, err
		}
	}
	for i := range pod.Spec.Containers {
		if err := mount(&pod.Spec.Containers[i], adapter); err != nil {
			return false, err
		}
	}
	pod.Labels[render.LabelBoundTo] = adapter
	if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == GateName }) {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: GateName})
	}
	return true, nil
}

// addVolume adds the binding Secret's volume unless this webhook added it already (a
// reinvocation keeps the Secret the first pass chose, even if the adapter changed between).
func addVolume(pod *corev1.Pod, adapter, secret string) error {
	name := VolumeName(adapter)
	for _, v := range pod.Spec.Volumes {
		if v.Name != name {
			continue
		}
		if v.Secret != nil && isBindingSecret(adapter, v.Secret.SecretName) {
			return nil
		}
		return fmt.Errorf("volume %q already exists and is not the binding Secret %q", name, secret)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: name,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  secret,
			DefaultMode: ptr.To[int32](bindingFileMode),
		}},
	})
	return nil
}

// mount mounts the binding read-only at $SERVICE_BINDING_ROOT/<adapter> in c, setting the
// variable to /bindings unless c sets it, as the Service Binding specification asks.
func mount(c *corev1.Container, adapter string) error {
	root := ""
	for _, e := range c.Env {
		if e.Name != EnvBindingRoot {
			continue
		}
		if e.ValueFrom != nil || !path.IsAbs(e.Value) {
			return fmt.Errorf("container %q sets %s to something other than an absolute path; the binding cannot be placed under it", c.Name, EnvBindingRoot)
		}
		root = e.Value
	}
	if root == "" {
		root = DefaultBindingRoot
		c.Env = append(c.Env, corev1.EnvVar{Name: EnvBindingRoot, Value: root})
	}
	at := path.Join(root, adapter)
	for _, m := range c.VolumeMounts {
		if m.Name == VolumeName(adapter) {
			return nil
		}
		if path.Clean(m.MountPath) == at {
			return fmt.Errorf("container %q already mounts volume %q at %s, where the binding goes", c.Name, m.Name, at)
		}
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: VolumeName(adapter), MountPath: at, ReadOnly: true})
	return nil
}

// isBindingSecret reports whether secret is one of adapter's binding Secrets: its own or a
// ServiceAccount's.
func isBindingSecret(adapter, secret string) bool {
	return secret == render.BindingSecretName(adapter) || strings.HasPrefix(secret, render.AccessBindingName(adapter, ""))
}

// MountedBindingSecret is the binding Secret the webhook mounted into pod for adapter, or ""
// when it has none. A pod's volumes are immutable, so this is what it runs with.
func MountedBindingSecret(pod *corev1.Pod, adapter string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == VolumeName(adapter) && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}
