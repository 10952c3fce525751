package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// Labels and annotations the operator puts on what it owns.
const (
	// LabelManagedBy marks every object the operator owns; the manager's Secret and Pod caches
	// select on it, so it never caches other Secrets or Pods.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "memory-adapter-operator"
	// LabelAdapter names the MemoryAdapter an object belongs to.
	LabelAdapter = "memory.agentmem.io/adapter"
	// LabelComponent tells adapter pods from conformance pods.
	LabelComponent = "app.kubernetes.io/component"
	// LabelBoundTo is the label a bound workload's pods carry; the NetworkPolicy admits them.
	LabelBoundTo = "memory.agentmem.io/bound-to"
	// AnnotationRerunConformance asks for a new conformance run whenever its value changes.
	AnnotationRerunConformance = "memory.agentmem.io/rerun-conformance"
	// AnnotationRestartedFor is set on the adapter pod template to restart the pods after a
	// run verified a new service version: the server's version invalidation is sticky.
	AnnotationRestartedFor = "memory.agentmem.io/restarted-for-service-version"
	// AnnotationRestartedForReadOnly is set on the adapter pod template, to the time, to
	// replace the pods of an adapter whose database was opened on a read-only volume.
	AnnotationRestartedForReadOnly = "memory.agentmem.io/restarted-for-read-only-volume"
	// AnnotationRunKey records the run key on a conformance Job.
	AnnotationRunKey = "memory.agentmem.io/run-key"
	// annotationRerunToken records the rerun annotation value a Job answers.
	annotationRerunToken = "memory.agentmem.io/rerun-token"

	ComponentAdapter     = "adapter"
	ComponentConformance = "conformance"

	AdapterPort = 8080
	// MetricsPort serves the adapter's /metrics alone, in plain HTTP (serve --metrics-listen):
	// the port the NetworkPolicy opens to the installation's monitoring namespace, where the
	// data port stays closed to it.
	MetricsPort = 9090
	// AdapterDrainDelay is how long a stopping adapter pod keeps answering (with Connection:
	// close) before it closes its listener: long enough for every node's kube-proxy to drop
	// the pod from the Service's rules, which it does within about a second of the pod's
	// deletion on a healthy cluster.
	AdapterDrainDelay = 5 * time.Second
	// shutdownMargin is added to the longest call for the server's shutdown bound, and to
	// the whole for the pod's grace period.
	shutdownMargin = 5 * time.Second
	// externalShutdownGrace is what a foreign server gets after SIGTERM: the kubelet's default.
	externalShutdownGrace = 30 * time.Second
	// nodeLossGrace is how long a stateless adapter's pod stays bound to a node that stopped
	// answering (NotReady or unreachable) before it is evicted and its replacement starts on
	// a live node. The API server's default, 300 s, suits pods with local state; these have
	// none, and their Service already dropped them when the node turned NotReady.
	nodeLossGrace     = 30 * time.Second
	BindingMountDir   = "/var/run/memory-adapter/binding"
	ManifestMountDir  = "/etc/memory-adapter/manifest"
	dataMountDir      = "/var/lib/memory-adapter"
	connectionEnvName = "MEMORY_ADAPTER_CONNECTION"
	// RunTokenDir holds an External run's per-run tokens, written by its first init step.
	RunTokenDir = "/var/run/memory-adapter/conformance" //nolint:gosec // a mount path, not a credential
	// The environment of an External server (api/v1alpha1 ExternalOptions).
	EnvListen                  = "MEMORY_ADAPTER_LISTEN"
	EnvPort                    = "MEMORY_ADAPTER_PORT"
	EnvTokenFile               = "MEMORY_ADAPTER_TOKEN_FILE" //nolint:gosec // a variable name, not a credential
	EnvScope                   = "MEMORY_ADAPTER_SCOPE"
	EnvHarnessListen           = "MEMORY_ADAPTER_HARNESS_LISTEN"
	EnvHarnessTokenFile        = "MEMORY_ADAPTER_HARNESS_TOKEN_FILE" //nolint:gosec // a variable name, not a credential
	defaultExternalPort        = 8080
	defaultExternalHarnessPort = 8081
	// nonRootUID is the distroless nonroot user the images run as.
	nonRootUID = 65532
	// BindingSecretType is the Secret type of the binding, per the Service Binding spec.
	BindingSecretType corev1.SecretType = "servicebinding.io/memory-adapter"
)

// DeploymentName is the name of the adapter's Deployment: the adapter's own.
func DeploymentName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name }

func serviceName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name }

// BindingName is the name of the adapter's binding Secret.
func BindingName(ma *memoryv1alpha1.MemoryAdapter) string { return BindingSecretName(ma.Name) }

// ManifestName is the name of the ConfigMap holding the manifest the adapter publishes.
func ManifestName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name + "-manifest" }

func dataClaimName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name + "-data" }

// BindingSecretName is the name of the binding Secret of the adapter with the given name: a
// fixed name, so that a workload created before its adapter can already refer to it.
func BindingSecretName(adapter string) string { return adapter + "-binding" }

// EnvDoorbellURL tells an adapter's server where to announce a change of its evidence
// (`memory-adapter serve --doorbell-url`); an External server may ring it too
// (docs/adapter-authors.md), and one that does not is read every health period as before.
const EnvDoorbellURL = "MEMORY_ADAPTER_DOORBELL_URL"

// DoorbellURL is the address ma's pods ring: the operator's doorbell endpoint followed by the
// adapter's namespace and name, which the operator reads as the adapter to read at once.
func DoorbellURL(base string, ma *memoryv1alpha1.MemoryAdapter) string {
	return strings.TrimRight(base, "/") + "/" + ma.Namespace + "/" + ma.Name
}

// ServiceURL is the in-cluster address of the adapter.
func ServiceURL(ma *memoryv1alpha1.MemoryAdapter) string {
	return fmt.Sprintf("%s://%s:%d", URLScheme(ma), ServiceServerName(ma), AdapterPort)
}

// CommonLabels are on every owned object.
func CommonLabels(ma *memoryv1alpha1.MemoryAdapter) map[string]string {
	return map[string]string{
		LabelManagedBy:               ManagedByValue,
		"app.kubernetes.io/name":     "memory-adapter",
		"app.kubernetes.io/instance": ma.Name,
		LabelAdapter:                 ma.Name,
	}
}

// ComponentLabels are CommonLabels and the component (adapter, conformance, purge) an object
// serves.
func ComponentLabels(ma *memoryv1alpha1.MemoryAdapter, component string) map[string]string {
	l := CommonLabels(ma)
	l[LabelComponent] = component
	return l
}

// SelectorLabels select the adapter's own pods; they never change, since a Deployment's
// selector is immutable.
func SelectorLabels(ma *memoryv1alpha1.MemoryAdapter) map[string]string {
	return map[string]string{"app.kubernetes.io/instance": ma.Name, LabelAdapter: ma.Name, LabelComponent: ComponentAdapter}
}

func objectMeta(ma *memoryv1alpha1.MemoryAdapter, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ma.Namespace, Labels: ComponentLabels(ma, component)}
}

// backendArgs are the flags serve and conformance share: the backend and the manifest's
// adapter id and filter set, so the adapter publishes exactly spec.manifest when it can.
func backendArgs(ma *memoryv1alpha1.MemoryAdapter) []string {
	m := ma.Spec.Manifest
	filters := make([]string, 0, len(m.SupportedFilters))
	for _, f := range m.SupportedFilters {
		filters = append(filters, string(f))
	}
	args := []string{
		"--backend", BackendFlag(ma.Spec.Backend.Type),
		"--adapter-id", m.Adapter,
		"--supported-filters=" + strings.Join(filters, ","),
	}
	if f := entry(ma.Spec.Backend.Type).ConnectionArgs; f != nil {
		args = append(args, f(&ma.Spec.Backend)...)
	}
	return args
}

// backendExtraArgs are the backend's own further flags: dataDir is the data volume for
// serve, "" for a conformance Job.
func backendExtraArgs(ma *memoryv1alpha1.MemoryAdapter, dataDir string) []string {
	if f := entry(ma.Spec.Backend.Type).Args; f != nil {
		return f(&ma.Spec.Backend, dataDir)
	}
	return nil
}

// connectionEnv passes the user's connection Secret by reference: the kubelet resolves it,
// the operator never reads it, and a missing Secret or key is the kubelet's
// CreateContainerConfigError, which heals by itself once the Secret exists.
func connectionEnv(ma *memoryv1alpha1.MemoryAdapter) []corev1.EnvVar {
	ref := ma.Spec.Backend.ConnectionSecretRef
	if ref == nil {
		return nil
	}
	key := ref.Key
	if key == "" {
		key = "dsn"
	}
	return []corev1.EnvVar{{
		Name: connectionEnvName,
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: key,
		}},
	}}
}

// BackendSecretName describes the connection Secret reference for messages.
func BackendSecretName(ma *memoryv1alpha1.MemoryAdapter) string {
	ref := ma.Spec.Backend.ConnectionSecretRef
	if ref == nil {
		return ""
	}
	key := ref.Key
	if key == "" {
		key = "dsn"
	}
	return fmt.Sprintf("Secret %s/%s key %q", ma.Namespace, ref.Name, key)
}

// Hardened is the container security context of every pod the operator creates; it meets
// Pod Security "restricted".
func Hardened() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](nonRootUID),
		RunAsGroup:               ptr.To[int64](nonRootUID),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// PodSecurity is the pod-level half of Hardened: a non-root user, the group that owns the
// mounted volumes, and the runtime's seccomp profile.
func PodSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		FSGroup:        ptr.To[int64](nonRootUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// EmptyDir is a scratch volume bounded to 64Mi, so a pod that writes too much is evicted
// instead of filling its node.
func EmptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}
}

func bindingVolume(ma *memoryv1alpha1.MemoryAdapter) corev1.Volume {
	items := []corev1.KeyToPath{{Key: "token", Path: "token"}, {Key: AcceptedTokensKey, Path: AcceptedTokensKey}}
	if UsesTLS(ma) {
		items = append(items, corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"})
	}
	return corev1.Volume{Name: "binding", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: BindingName(ma), Items: items, DefaultMode: ptr.To[int32](0o440),
	}}}
}

func adapterResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// operationMargin is what the server's per-call bound leaves beyond the backend's own
// retries, so that the backend's typed error, not the server's deadline, ends a slow call.
const operationMargin = time.Second

// operationBound is the server's per-call bound (serve --operation-timeout), composed from
// the lifecycle the backend runs with (serve --request-timeout): for the operation with the
// most attempts, attempts × the request timeout plus every backoff between them, plus
// operationMargin. Equal bounds would race, and the server's would often win with a bare
// deadline where the backend had a retry and a typed error left to give.
func operationBound(l memoryv1alpha1.LifecycleSpec) time.Duration {
	rt := l.RequestTimeout.Or(defaultHealthPeriod)
	longest := rt
	if l.Retry != nil {
		for _, p := range []*memoryv1alpha1.RetryPolicy{l.Retry.Store, l.Retry.Retrieve, l.Retry.Search} {
			if p == nil || p.MaxAttempts == nil || *p.MaxAttempts <= 1 {
				continue
			}
			total, backoff := rt, p.Backoff.Or(0)
			for range *p.MaxAttempts - 1 {
				total += backoff + rt
				backoff = min(2*backoff, p.MaxBackoff.Or(backoff))
			}
			longest = max(longest, total)
		}
	}
	return longest + operationMargin
}

// Deployment is the adapter Deployment: `memory-adapter serve` with the binding token,
// the connection Secret by reference, and for SQLite the data claim with one writer.
func Deployment(ma *memoryv1alpha1.MemoryAdapter, s Settings) *appsv1.Deployment {
	args := append([]string{"serve"}, backendArgs(ma)...)
	args = append(args,
		"--scope", ma.Spec.Backend.Scope,
		"--listen", fmt.Sprintf(":%d", AdapterPort),
		"--metrics-listen", fmt.Sprintf(":%d", MetricsPort),
		"--token-file", BindingMountDir+"/"+AcceptedTokensKey,
		"--request-timeout", s.Lifecycle.RequestTimeout.Or(defaultHealthPeriod).String(),
		"--operation-timeout", operationBound(s.Lifecycle).String(),
		"--open-timeout", s.Lifecycle.ConnectTimeout.Or(defaultHealthPeriod).String(),
	)
	args = append(args, retryArgs(ma.Spec.Backend.Type, s.Lifecycle)...)
	args = append(args, GovernanceArgs(ma)...)
	// On SIGTERM the server answers for the drain delay, then lets in-flight calls finish
	// within the longest a call may take; the grace period covers both, so the kubelet never
	// kills a call the server is still finishing.
	shutdown := operationBound(s.Lifecycle) + shutdownMargin
	args = append(args, "--drain-delay", AdapterDrainDelay.String(), "--shutdown-timeout", shutdown.String())
	grace := int64((AdapterDrainDelay + shutdown + shutdownMargin).Seconds())
	volumes := []corev1.Volume{bindingVolume(ma), EmptyDir("tmp")}
	mounts := []corev1.VolumeMount{
		{Name: "binding", MountPath: BindingMountDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	// A stateless adapter rolls one new pod at a time and removes an old one only once the
	// new one is ready: the Service never has fewer ready instances than spec.replicas.
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
	}}
	env := []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	args = append(args, backendExtraArgs(ma, dataMountDir)...)
	env = append(env, entry(ma.Spec.Backend.Type).Env...)
	tolerations := nodeLossTolerations()
	if UsesDataClaim(ma) {
		// The volume stays on its node: a replacement elsewhere could never mount it, so the
		// pod keeps the API server's default and waits for its node.
		tolerations = nil
		volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: dataClaimName(ma)},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: "data", MountPath: dataMountDir})
		// One database file has one writer: the old pod must stop before the new one opens it.
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	env = append(env, connectionEnv(ma)...)
	if UsesTLS(ma) {
		// The Secret's files change in place at each renewal; the server reloads them, so a
		// renewal rolls no pod and drops no connection.
		args = append(args, "--tls-cert-file", TLSMountDir+"/"+corev1.TLSCertKey, "--tls-key-file", TLSMountDir+"/"+corev1.TLSPrivateKeyKey)
		volumes = append(volumes, tlsVolume(ma))
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: TLSMountDir, ReadOnly: true})
	}
	container := corev1.Container{Name: "adapter", Image: s.Image, Args: args, Env: env}
	port := int32(AdapterPort)
	var lifecycle *corev1.Lifecycle
	if isExternal(ma) {
		container = externalServerContainer(ma, s, "adapter", false, ma.Spec.Backend.Scope)
		port = externalPorts(ma).data
		// A foreign server has no drain flag: the kubelet waits the drain delay before it
		// sends SIGTERM, so the pod has left every node's Service rules when its server stops
		// accepting. What it does with SIGTERM is its own (ExternalOptions documents it).
		lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(AdapterDrainDelay.Seconds())}}}
		grace = int64((AdapterDrainDelay + externalShutdownGrace).Seconds())
	}
	// An External server gets the standard variables too: one built on an OTel SDK exports
	// with them, any other ignores them.
	container.Env = withTracingEnv(ma, container.Env)
	if s.DoorbellURL != "" {
		container.Env = append(container.Env, corev1.EnvVar{Name: EnvDoorbellURL, Value: DoorbellURL(s.DoorbellURL, ma)})
	}
	scheme := corev1.URISchemeHTTP
	if UsesTLS(ma) {
		scheme = corev1.URISchemeHTTPS
	}
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: scheme}},
			// Every value the API server would default is set, so the template compares equal
			// to the stored one and a steady adapter causes no update.
			PeriodSeconds: period, TimeoutSeconds: 2, FailureThreshold: 3, SuccessThreshold: 1,
		}
	}
	d := &appsv1.Deployment{
		ObjectMeta: objectMeta(ma, DeploymentName(ma), ComponentAdapter),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(s.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(ma)},
			Strategy: strategy,
			Template: corev1.PodTemplateSpec{
				// The server re-reads its token and certificate files, so neither a rotated
				// token nor a renewed certificate rolls the pods.
				ObjectMeta: metav1.ObjectMeta{Labels: ComponentLabels(ma, ComponentAdapter), Annotations: map[string]string{}},
				Spec: corev1.PodSpec{
					ServiceAccountName:            ma.Name,
					AutomountServiceAccountToken:  ptr.To(false),
					SecurityContext:               PodSecurity(),
					Volumes:                       volumes,
					TerminationGracePeriodSeconds: ptr.To(grace),
					Tolerations:                   tolerations,
					// Replicas go to different nodes when there are several, so one lost node
					// takes at most its share of an adapter's instances. ScheduleAnyway: a
					// replacement for a pod of a lost node must land on a live node even when
					// that node already holds one. pod-template-hash spreads each rollout's
					// own pods, not the old and new together.
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector:  &metav1.LabelSelector{MatchLabels: SelectorLabels(ma)},
						MatchLabelKeys: []string{appsv1.DefaultDeploymentUniqueLabelKey},
					}},
					Containers: []corev1.Container{{
						Name:            container.Name,
						Image:           container.Image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         container.Command,
						Args:            container.Args,
						Env:             container.Env,
						Ports:           adapterPorts(ma, port),
						Lifecycle:       lifecycle,
						// Readiness is /healthz, not /readyz: every replica shares one backend, so
						// an instance whose evidence invalidates its manifest has no healthier
						// sibling to hand its traffic to. Kept in the Service, it answers every
						// data call with the typed 503 unavailable the contract promises (out of
						// it, clients would get refused connections), and the operator keeps
						// reading its evidence; Available, not readiness, carries the verdict.
						ReadinessProbe:  probe("/healthz", 5),
						LivenessProbe:   probe("/healthz", 10),
						Resources:       adapterContainerResources(ma),
						SecurityContext: Hardened(),
						VolumeMounts:    mounts,
						// A server that exits at start-up (a TLS or login refusal, an
						// unreachable backend, a bad option) says why on its last log lines;
						// the kubelet keeps them as the termination message, which Deployed's
						// message quotes, so the cause is in status and not only in the log.
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
	applyTemplateMetadata(ma, &d.Spec.Template.ObjectMeta)
	applyScheduling(ma, &d.Spec.Template.Spec)
	if t := templateSpec(ma); t != nil {
		for _, c := range t.TopologySpreadConstraints {
			d.Spec.Template.Spec.TopologySpreadConstraints = append(d.Spec.Template.Spec.TopologySpreadConstraints, *c.DeepCopy())
		}
	}
	return d
}

// Service is the adapter's ClusterIP Service, on the data port of the adapter's own pods.
func Service(ma *memoryv1alpha1.MemoryAdapter) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(ma, serviceName(ma), ComponentAdapter),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SelectorLabels(ma),
			Ports:    []corev1.ServicePort{{Name: "http", Port: AdapterPort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// ServiceAccount is the adapter pods' identity, with no API token mounted.
func ServiceAccount(ma *memoryv1alpha1.MemoryAdapter) *corev1.ServiceAccount {
	// The adapter never calls the Kubernetes API, so it gets no token.
	return &corev1.ServiceAccount{ObjectMeta: objectMeta(ma, ma.Name, ComponentAdapter), AutomountServiceAccountToken: ptr.To(false)}
}

// adapterPorts are the adapter container's ports: the data port, and the metrics port
// unless the server is an External image, whose metrics (if any) are its own.
func adapterPorts(ma *memoryv1alpha1.MemoryAdapter, data int32) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: data, Protocol: corev1.ProtocolTCP}}
	if !isExternal(ma) {
		ports = append(ports, corev1.ContainerPort{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// NetworkPolicy admits the operator, the adapter's own conformance Jobs and the pods
// bound to it to the data port, and nothing else; and, when the installation names a
// monitoring namespace, that namespace's pods to the metrics port alone.
func NetworkPolicy(ma *memoryv1alpha1.MemoryAdapter, operatorNamespace, monitoringNamespace string) *networkingv1.NetworkPolicy {
	operatorNS := &metav1.LabelSelector{}
	if operatorNamespace != "" {
		operatorNS.MatchLabels = map[string]string{"kubernetes.io/metadata.name": operatorNamespace}
	}
	port := intstr.FromInt32(AdapterPort)
	if isExternal(ma) {
		// The policy admits traffic to the pod's port, which the Service maps 8080 to.
		port = intstr.FromInt32(externalPorts(ma).data)
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{{
		Ports: []networkingv1.NetworkPolicyPort{{Port: &port, Protocol: ptr.To(corev1.ProtocolTCP)}},
		From: []networkingv1.NetworkPolicyPeer{
			{NamespaceSelector: operatorNS, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"control-plane": "controller-manager"}}},
			{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelAdapter: ma.Name, LabelComponent: ComponentConformance}}},
			{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelBoundTo: ma.Name}}},
		},
	}}
	if monitoringNamespace != "" && !isExternal(ma) {
		// Every pod of that namespace, and only of that one (never an empty selector, which
		// would admit every namespace): the scrapers there are the platform's, and the port
		// carries counts and timings only.
		metrics := intstr.FromInt32(MetricsPort)
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Port: &metrics, Protocol: ptr.To(corev1.ProtocolTCP)}},
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": monitoringNamespace},
			}}},
		})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: objectMeta(ma, ma.Name, ComponentAdapter),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(ma)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

// DisruptionBudgetName is the name of the adapter's PodDisruptionBudget.
func DisruptionBudgetName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name }

// DisruptionBudget lets a drain or any other voluntary eviction take one of a stateless
// adapter's replicas at a time, and nil when the adapter should have none: one replica (a
// budget over it would block every drain of its node), or a data claim (its single pod holds
// the only copy of the database file on one node; a drain must be able to move it).
func DisruptionBudget(ma *memoryv1alpha1.MemoryAdapter, replicas int32) *policyv1.PodDisruptionBudget {
	if replicas < 2 || UsesDataClaim(ma) {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(ma, DisruptionBudgetName(ma), ComponentAdapter),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(ma)},
			// A pod that is not ready serves nobody: evicting it costs nothing, and counting it
			// would let one stuck pod block every drain.
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}

// nodeLossTolerations bound a stateless adapter pod's stay on a lost node to nodeLossGrace.
func nodeLossTolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, taint := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		out = append(out, corev1.Toleration{
			Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To(int64(nodeLossGrace.Seconds())),
		})
	}
	return out
}

// DataClaim is the database volume of a backend that keeps one (UsesDataClaim), sized and
// classed by its options.
func DataClaim(ma *memoryv1alpha1.MemoryAdapter) (*corev1.PersistentVolumeClaim, error) {
	v := entry(ma.Spec.Backend.Type).DataVolume
	if v == nil {
		return nil, fmt.Errorf("the %s backend keeps no data volume", ma.Spec.Backend.Type)
	}
	size, class, field := v.Storage(&ma.Spec.Backend)
	if size == "" {
		size = defaultStorageSize
	}
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", field, size, err)
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: objectMeta(ma, dataClaimName(ma), ComponentAdapter),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		},
	}, nil
}

// JobName derives a conformance Job's name from what it verifies, so a manager restart finds
// the Job it created instead of creating another.
func JobName(ma *memoryv1alpha1.MemoryAdapter, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return ma.Name + "-conformance-" + hex.EncodeToString(sum[:])[:10]
}

// ConformanceJob runs `memory-adapter conformance` for one run key: the matrix in a disposable
// scope (SQLite: its own disposable file with the same build) plus the read-only checks of
// the deployed adapter through its Service.
func ConformanceJob(ma *memoryv1alpha1.MemoryAdapter, s Settings, name string, key RunKey, rerun string) *batchv1.Job {
	// The whole run must end, and write its report, before the Job's deadline kills it.
	budget := s.ConformanceTimeout - s.ConformanceTimeout/10
	var args []string
	if isExternal(ma) {
		args = externalConformanceArgs(ma, s, budget)
	} else {
		args = append([]string{"conformance"}, backendArgs(ma)...)
		// The matrix's servers are governed as the deployed one, so they publish its
		// manifest and the governance profiles check its claim.
		args = append(args, GovernanceArgs(ma)...)
	}
	if UsesTLS(ma) {
		args = append(args, "--server-ca-file", BindingMountDir+"/ca.crt")
	}
	args = append(args,
		"--server-url", ServiceURL(ma),
		"--server-token-file", BindingMountDir+"/token",
		"--expected-manifest-file", ManifestMountDir+"/manifest.json",
		"--report-file=",
		"--termination-log", corev1.TerminationMessagePathDefault,
		"--timeout", budget.String(),
		"--progress",
	)
	volumes := []corev1.Volume{bindingVolume(ma), EmptyDir("tmp"), {
		Name: "manifest", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ManifestName(ma)}}},
	}}
	mounts := []corev1.VolumeMount{
		{Name: "binding", MountPath: BindingMountDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "manifest", MountPath: ManifestMountDir, ReadOnly: true},
	}
	args = append(args, backendExtraArgs(ma, "")...)
	image := s.Image
	var initContainers []corev1.Container
	if isExternal(ma) {
		// The conformance container is the operator's own image; the user's image is the
		// disposable server beside it.
		image = s.OperatorImage
		volumes = append(volumes, corev1.Volume{Name: "run-tokens", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi")),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "run-tokens", MountPath: RunTokenDir, ReadOnly: true})
		initContainers = externalRunInitContainers(ma, s, name)
	}
	job := AdapterJob(ma, image, name, ComponentConformance, args, volumes, mounts)
	job.Spec.Template.Spec.InitContainers = initContainers
	if extra := entry(ma.Spec.Backend.Type).Env; len(extra) > 0 {
		c := &job.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, extra...)
	}
	job.Annotations = map[string]string{AnnotationRunKey: key.String(), annotationRerunToken: rerun}
	job.Spec.BackoffLimit = ptr.To[int32](0)
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(s.ConformanceTimeout.Seconds()))
	return job
}

// AdapterJob is what the operator's Jobs share: one container named after the component,
// running the adapter image with the given args, the connection Secret by reference, and
// the pod hardened for Pod Security "restricted"; it reports through its termination
// message file. Callers set the backoff limit and the deadline.
func AdapterJob(ma *memoryv1alpha1.MemoryAdapter, image, name, component string, args []string, volumes []corev1.Volume, mounts []corev1.VolumeMount) *batchv1.Job {
	podLabels := ComponentLabels(ma, component)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ma.Namespace, Labels: podLabels},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           ma.Name,
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext:              PodSecurity(),
					Volumes:                      volumes,
					Containers: []corev1.Container{{
						Name:                     component,
						Image:                    image,
						ImagePullPolicy:          corev1.PullIfNotPresent,
						Args:                     args,
						Env:                      connectionEnv(ma),
						Resources:                adapterResources(),
						SecurityContext:          Hardened(),
						VolumeMounts:             mounts,
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
				},
			},
		},
	}
	// The Job's pod runs where the adapter may, labelled as the platform asks; the Job itself
	// keeps the operator's labels alone.
	applyTemplateMetadata(ma, &job.Spec.Template.ObjectMeta)
	applyScheduling(ma, &job.Spec.Template.Spec)
	return job
}

// RunSeed is what a Job name is derived from: the run key, the rerun token, and for a
// periodic re-run the completion time of the run it repeats.
func RunSeed(key RunKey, rerun string, after string) string {
	return strings.Join([]string{key.ManifestHash, key.ServiceVersion, key.AdapterVersion, rerun, after}, "\n")
}
