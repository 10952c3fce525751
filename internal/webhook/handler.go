package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/render"
)

// Path is where the manager's webhook server serves the pod binder; the marker below and
// config/webhook/manifests.yaml name the same path.
const Path = "/mutate-v1-pod"

// The webhook's configuration (docs/gating.md#failure-modes says why): only pods that carry
// the memory.agentmem.io/adapter label and are not the operator's own (its adapter and
// conformance pods carry the label too) are sent; failurePolicy Fail, so a pod that asks for
// a gate is never admitted without one; a 5 s timeout for a handler that does no I/O; and
// reinvocation, so containers another webhook adds later get the binding too.
// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=bind.pods.memory.agentmem.io,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=IfNeeded,patch=`{"objectSelector":{"matchExpressions":[{"key":"memory.agentmem.io/adapter","operator":"Exists"},{"key":"app.kubernetes.io/managed-by","operator":"NotIn","values":["memory-adapter-operator"]}]}}`

// PodBinder is the mutating admission handler that gates and binds agent pods.
type PodBinder struct {
	// Decoder decodes the admitted pod.
	Decoder admission.Decoder
	// Adapters reads the named MemoryAdapter (the manager's cache): its spec.access decides
	// which binding Secret the pod mounts. Nil binds every pod to the adapter's own Secret.
	Adapters client.Reader
}

// Handle implements admission.Handler: it applies Bind and answers with the JSON patch, or
// rejects the pod with Bind's message.
func (b *PodBinder) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := b.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	access, err := b.access(ctx, req.Namespace, pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	applies, err := Bind(pod, access)
	if err != nil {
		return admission.Denied(err.Error())
	}
	if !applies {
		return admission.Allowed("no memory.agentmem.io/requires annotation: not bound")
	}
	out, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Binding pod", "namespace", req.Namespace, "name", pod.Name, "generateName", pod.GenerateName,
		"MemoryAdapter", pod.Labels[render.LabelAdapter])
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}

// access is the spec.access of the adapter the pod names, nil when it has none, does not
// exist yet or the pod names none. A stale cache can only bind a pod to the wrong Secret,
// which the gate then refuses to release, never grant it more.
func (b *PodBinder) access(ctx context.Context, namespace string, pod *corev1.Pod) (*memoryv1alpha1.AccessSpec, error) {
	name := pod.Labels[render.LabelAdapter]
	if b.Adapters == nil || name == "" || !adapterName.MatchString(name) {
		return nil, nil
	}
	ma := &memoryv1alpha1.MemoryAdapter{}
	err := b.Adapters.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ma)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read MemoryAdapter %s/%s: %w", namespace, name, err)
	}
	return ma.Spec.Access, nil
}
