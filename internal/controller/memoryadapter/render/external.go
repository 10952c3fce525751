package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// isExternal reports whether the adapter is a server the user brings (backend type External).
func isExternal(ma *memoryv1alpha1.MemoryAdapter) bool {
	return ma.Spec.Backend.Type == memoryv1alpha1.BackendExternal && ma.Spec.Backend.External != nil
}

// externalPortPair is where an External server listens: the wire, and in harness mode the
// harness protocol.
type externalPortPair struct{ data, harness int32 }

// externalPorts fills the CRD's defaults, which an object written before them lacks.
func externalPorts(ma *memoryv1alpha1.MemoryAdapter) externalPortPair {
	p := externalPortPair{data: defaultExternalPort, harness: defaultExternalHarnessPort}
	if e := ma.Spec.Backend.External; e != nil {
		if e.Port != 0 {
			p.data = e.Port
		}
		if e.HarnessPort != 0 {
			p.harness = e.HarnessPort
		}
	}
	return p
}

// ExternalRunScope is the disposable scope of one run's harness-mode instance: derived from
// the Job's name, so it is new for every run and never the production scope.
func ExternalRunScope(jobName string) string {
	sum := sha256.Sum256([]byte(jobName))
	return "conformance-" + hex.EncodeToString(sum[:])[:16]
}

// externalServerContainer is the user's image with the documented environment: in production
// the wire on every interface with the binding token; in harness mode (a run's disposable
// instance) the wire and the harness on loopback only, with the run's own tokens, so nothing
// outside the run's pod can reach an instance whose harness can plant faults. The user's Secret
// variables are references the kubelet resolves; the operator never reads them.
func externalServerContainer(ma *memoryv1alpha1.MemoryAdapter, s Settings, name string, harness bool, scope string) corev1.Container {
	e := ma.Spec.Backend.External
	ports := externalPorts(ma)
	env := []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	args := e.Args
	if harness {
		args = e.HarnessArgs
		env = append(env,
			corev1.EnvVar{Name: EnvListen, Value: fmt.Sprintf("127.0.0.1:%d", ports.data)},
			corev1.EnvVar{Name: EnvPort, Value: strconv.Itoa(int(ports.data))},
			corev1.EnvVar{Name: EnvTokenFile, Value: RunTokenDir + "/data-token"},
			corev1.EnvVar{Name: EnvHarnessListen, Value: fmt.Sprintf("127.0.0.1:%d", ports.harness)},
			corev1.EnvVar{Name: EnvHarnessTokenFile, Value: RunTokenDir + "/harness-token"},
		)
	} else {
		env = append(env,
			corev1.EnvVar{Name: EnvListen, Value: fmt.Sprintf("0.0.0.0:%d", ports.data)},
			corev1.EnvVar{Name: EnvPort, Value: strconv.Itoa(int(ports.data))},
			corev1.EnvVar{Name: EnvTokenFile, Value: BindingMountDir + "/" + AcceptedTokensKey},
		)
		if UsesTLS(ma) {
			// The server must serve HTTPS with these files and pick up a renewed pair
			// (ExternalOptions documents it); the harness-mode instance of a run listens on
			// loopback inside the Job's pod and stays plain.
			env = append(env,
				corev1.EnvVar{Name: EnvTLSCertFile, Value: TLSMountDir + "/" + corev1.TLSCertKey},
				corev1.EnvVar{Name: EnvTLSKeyFile, Value: TLSMountDir + "/" + corev1.TLSPrivateKeyKey},
			)
		}
	}
	env = append(env, corev1.EnvVar{Name: EnvScope, Value: scope})
	for _, v := range e.Env {
		env = append(env, corev1.EnvVar{Name: v.Name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: v.SecretKeyRef.Name}, Key: v.SecretKeyRef.Key,
		}}})
	}
	return corev1.Container{Name: name, Image: s.Image, Command: e.Command, Args: args, Env: env}
}

// externalRunInitContainers start an External run: first the operator's image writes the
// run's two tokens into a memory-backed emptyDir (they exist nowhere in the API, and the
// operator, which cannot read Secrets, never knows them); then the user's image starts in
// harness mode as a native sidecar (restartPolicy Always), so the kubelet stops it when the
// conformance container exits and the Job completes.
func externalRunInitContainers(ma *memoryv1alpha1.MemoryAdapter, s Settings, jobName string) []corev1.Container {
	tokens := corev1.Container{
		Name:            "tokens",
		Image:           s.OperatorImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"token", RunTokenDir + "/data-token", RunTokenDir + "/harness-token"},
		Resources:       adapterResources(),
		SecurityContext: Hardened(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "run-tokens", MountPath: RunTokenDir}},
	}
	server := externalServerContainer(ma, s, "server", true, ExternalRunScope(jobName))
	server.ImagePullPolicy = corev1.PullIfNotPresent
	server.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	server.Resources = adapterResources()
	server.SecurityContext = Hardened()
	server.VolumeMounts = []corev1.VolumeMount{
		{Name: "run-tokens", MountPath: RunTokenDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	return []corev1.Container{tokens, server}
}

// externalConformanceArgs judge the run's harness-mode instance over the wire with --target,
// after waiting for it to listen (no kubelet probe can see a loopback listener). The adapter id
// and the duplicate-id behaviour are what the spec declares, so a server publishing another
// adapter, or behaving otherwise, fails the run. The caller appends the read-only checks of
// the production instance, as for every backend.
func externalConformanceArgs(ma *memoryv1alpha1.MemoryAdapter, s Settings, budget time.Duration) []string {
	ports := externalPorts(ma)
	wait := min(2*time.Minute, budget/2)
	args := []string{
		"conformance",
		"--target", fmt.Sprintf("http://127.0.0.1:%d", ports.data),
		"--token-file", RunTokenDir + "/data-token",
		"--harness-url", fmt.Sprintf("http://127.0.0.1:%d", ports.harness),
		"--harness-token-file", RunTokenDir + "/harness-token",
		"--target-wait", wait.String(),
		"--adapter-id", ma.Spec.Manifest.Adapter,
	}
	if d := s.Lifecycle.DuplicateIDBehaviour; d != "" {
		args = append(args, "--duplicate-id-behaviour", string(d))
	}
	return args
}
