package manageridentity_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The trial of issue 23, as a table an auditor can rerun: every request an attacker holding
// the manager's ServiceAccount would try is refused, by RBAC or by an admission policy, and
// returns no object; every request the manager itself makes still passes. Each refusal names
// what stops it (`refusedBy`), so removing the policy or the RBAC narrowing fails the spec
// that depends on it. docs/operator.md#rbac has the same table in prose.

const (
	gateName       = "memory.agentmem.io/adapter-ready"
	gateMessageKey = "memory.agentmem.io/gate-message"
	secretValue    = "s3cr3t-of-another-namespace"
)

// refusedBy is what must stop a request.
type refusedBy int

const (
	byPolicy refusedBy = iota // a config/policy admission policy
	byRBAC                    // the generated roles
)

func expectRefused(err error, by refusedBy, what string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "%s was allowed", what)
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
	if by == byPolicy {
		Expect(id.RefusedByPolicy(err)).To(BeTrue(), "%s: want a refusal by the admission policy, got %v", what, err)
	} else {
		Expect(id.RefusedByPolicy(err)).To(BeFalse(), "%s: want a refusal by RBAC, got %v", what, err)
	}
}

func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "victim-"}}
	Expect(admin.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// gatedPod is an agent pod as the webhook leaves it: gated, labelled for its adapter.
func gatedPod(ctx context.Context, ns string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns, Labels: map[string]string{"memory.agentmem.io/adapter": "mem"}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: gateName}, {Name: "someone-else/gate"}},
			Containers:      []corev1.Container{{Name: "agent", Image: "agent:v1"}},
		},
	}
	Expect(admin.Create(ctx, pod)).To(Succeed())
	return pod
}

// bindingSecret is a binding Secret as the controller writes it (binding.go).
func bindingSecret(ns, adapter string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: adapter + "-binding", Namespace: ns,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "memory-adapter-operator", "app.kubernetes.io/name": "memory-adapter",
				"app.kubernetes.io/instance": adapter, "memory.agentmem.io/adapter": adapter,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "memory.agentmem.io/v1alpha1", Kind: "MemoryAdapter",
				Name: adapter, UID: types.UID("00000000-0000-0000-0000-00000000000" + fmt.Sprint(len(adapter)%10)), Controller: ptr.To(true)}}},
		Type: "servicebinding.io/memory-adapter",
		Data: map[string][]byte{"token": []byte("t"), "url": []byte("http://x")},
	}
}

// servingSecret is an adapter's serving-certificate Secret as the controller writes it.
func servingSecret(ns, adapter string) *corev1.Secret {
	sec := bindingSecret(ns, adapter)
	sec.Name = adapter + "-tls"
	sec.Type = corev1.SecretTypeTLS
	sec.Data = map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}
	return sec
}

var _ = Describe("the manager's identity, with the installed RBAC and admission policies", func() {
	var cs *kubernetes.Clientset
	BeforeEach(func() {
		var err error
		cs, err = kubernetes.NewForConfig(mgrCfg)
		Expect(err).NotTo(HaveOccurred())
	})

	It("cannot read another namespace's Secret through a dry-run PATCH: refused, and no data in the answer", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		victim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Data: map[string][]byte{"password": []byte(secretValue)}}
		Expect(admin.Create(ctx, victim)).To(Succeed())
		body, err := cs.CoreV1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("secrets").Name("db").
			Param("dryRun", "All").Body([]byte(`{"metadata":{"labels":{"x":"y"}}}`)).DoRaw(ctx)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a dry-run PATCH of another namespace's Secret: want Forbidden, got %v", err)
		Expect(string(body)).To(ContainSubstring("ValidatingAdmissionPolicy '"+id.Prefix+"manager-secrets'"), "the refusal is the policy's")
		Expect(string(body)).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secretValue))), "the refusal carries the Secret's data")
		Expect(string(body)).NotTo(ContainSubstring(secretValue))
		Expect(string(body)).NotTo(ContainSubstring(`"data"`))

		By("nor by making it look like a binding Secret: the stored Secret must qualify too")
		forged := bindingSecret(ns, "db")
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": forged.Labels, "ownerReferences": forged.OwnerReferences}})
		Expect(err).NotTo(HaveOccurred())
		err = asManager.Patch(ctx, victim.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.DryRunAll)
		expectRefused(err, byPolicy, "relabelling another Secret as a binding")

		By("nor by GET, LIST or WATCH, which RBAC does not grant outside the manager's namespace")
		expectRefused(asManager.Get(ctx, client.ObjectKeyFromObject(victim), &corev1.Secret{}), byRBAC, "GET of another namespace's Secret")
		expectRefused(asManager.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)), byRBAC, "LIST of Secrets")
		By("nor by deleting it")
		expectRefused(asManager.Delete(ctx, victim, client.DryRunAll), byRBAC, "DELETE of a Secret")
	})

	It("cannot mint a ServiceAccount token through a service-account-token Secret", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "minted", Namespace: ns, Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type:       corev1.SecretTypeServiceAccountToken,
		}
		expectRefused(asManager.Create(ctx, sec), byPolicy, "creating a service-account-token Secret")
		By("not even one dressed as a binding Secret: the type gives it away")
		forged := bindingSecret(ns, "minted")
		forged.Type = corev1.SecretTypeServiceAccountToken
		forged.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
		forged.Data = nil
		expectRefused(asManager.Create(ctx, forged), byPolicy, "creating a service-account-token Secret with binding labels")
		By("nor through its own namespace's token key name in another namespace")
		expectRefused(asManager.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: id.TokenKeySecret(), Namespace: ns}}),
			byPolicy, "a Secret named like the token key outside the manager's namespace")
		By("nor a binding Secret without its controller reference")
		orphan := bindingSecret(ns, "orphan")
		orphan.OwnerReferences = nil
		expectRefused(asManager.Create(ctx, orphan), byPolicy, "a binding Secret with no owner")
	})

	It("cannot rewrite a pod: image, labels, other gates, deletion and eviction are refused", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		pod := gatedPod(ctx, ns)
		// Strategic merge patches, as kubectl sends them, except for the gates: a strategic
		// merge of a list keyed by name cannot drop an entry, a JSON merge patch replaces it.
		for _, tc := range []struct{ what, patch string }{
			{"changing the container image", `{"spec":{"containers":[{"name":"agent","image":"attacker:latest"}]}}`},
			{"adding a label", `{"metadata":{"labels":{"memory.agentmem.io/bound-to":"other"}}}`},
			{"changing another annotation", `{"metadata":{"annotations":{"other":"x"}}}`},
			{"setting activeDeadlineSeconds", `{"spec":{"activeDeadlineSeconds":1}}`},
		} {
			err := asManager.Patch(ctx, &corev1.Pod{ObjectMeta: pod.ObjectMeta}, client.RawPatch(types.StrategicMergePatchType, []byte(tc.patch)), client.DryRunAll)
			expectRefused(err, byPolicy, tc.what)
		}
		err := asManager.Patch(ctx, &corev1.Pod{ObjectMeta: pod.ObjectMeta},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedulingGates":[{"name":"`+gateName+`"}]}}`)), client.DryRunAll)
		expectRefused(err, byPolicy, "removing someone else's scheduling gate")
		cur := &corev1.Pod{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), cur)).To(Succeed())
		tolerated := cur.DeepCopy()
		tolerated.Spec.Tolerations = append(tolerated.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		expectRefused(asManager.Patch(ctx, tolerated, client.MergeFrom(cur), client.DryRunAll), byPolicy, "adding a toleration that schedules anywhere")
		expectRefused(asManager.Delete(ctx, pod, client.DryRunAll), byRBAC, "deleting a pod")
		expectRefused(asManager.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}),
			byRBAC, "evicting a pod")
		expectRefused(asManager.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, client.DryRunAll), byRBAC, "creating a pod")
	})

	It("can remove its own scheduling gate and set the gate message, as the gate controller does", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		pod := gatedPod(ctx, ns)
		By("recording why it keeps the gate")
		orig := pod.DeepCopy()
		pod.Annotations = map[string]string{gateMessageKey: "waiting for MemoryAdapter mem"}
		Expect(asManager.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
		By("removing its gate and the message, leaving the other gate")
		orig = pod.DeepCopy()
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "someone-else/gate"}}
		delete(pod.Annotations, gateMessageKey)
		Expect(asManager.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
		got := &corev1.Pod{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		Expect(got.Spec.SchedulingGates).To(Equal([]corev1.PodSchedulingGate{{Name: "someone-else/gate"}}))
		Expect(got.Spec.Containers[0].Image).To(Equal("agent:v1"))
	})

	It("can update only its own webhook configuration", func(ctx SpecContext) {
		mk := func(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
			w := &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Webhooks: []admissionregistrationv1.MutatingWebhook{{
					Name:                    "x.example.com",
					ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/x")},
					ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
					SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
					AdmissionReviewVersions: []string{"v1"},
				}},
			}
			Expect(admin.Create(ctx, w)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(admin.Delete(ctx, w)).To(Succeed()) })
			return w
		}
		own, other := mk(id.WebhookConfiguration()), mk("someone-elses-webhook")
		for _, w := range []*admissionregistrationv1.MutatingWebhookConfiguration{own, other} {
			w.Webhooks[0].ClientConfig.CABundle = []byte("not-a-ca")
		}
		Expect(asManager.Update(ctx, own)).To(Succeed(), "the CA bundle of its own configuration")
		expectRefused(asManager.Update(ctx, other, client.DryRunAll), byRBAC, "updating another webhook configuration")
		expectRefused(asManager.Get(ctx, client.ObjectKeyFromObject(other), &admissionregistrationv1.MutatingWebhookConfiguration{}), byRBAC,
			"getting another webhook configuration by name")
	})

	It("still writes what the manager writes: binding and serving-certificate Secrets, its token key, adapter CA and webhook certificate", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		sec := bindingSecret(ns, "mem")
		Expect(asManager.Create(ctx, sec)).To(Succeed(), "creating a binding Secret")
		sec.Data["url"] = []byte("http://y")
		Expect(asManager.Patch(ctx, sec, client.MergeFrom(bindingSecret(ns, "mem")))).To(Succeed(), "patching its binding Secret")
		By("but not turning its binding Secret into something else")
		stripped := sec.DeepCopy()
		stripped.OwnerReferences = nil
		expectRefused(asManager.Patch(ctx, stripped, client.MergeFrom(sec), client.DryRunAll), byPolicy, "removing the binding's owner")

		By("and an adapter's serving-certificate Secret, under the same rules")
		tlsSec := servingSecret(ns, "mem")
		Expect(asManager.Create(ctx, tlsSec)).To(Succeed(), "creating a serving-certificate Secret")
		renewed := tlsSec.DeepCopy()
		renewed.Data["tls.crt"] = []byte("renewed")
		Expect(asManager.Patch(ctx, renewed, client.MergeFrom(tlsSec))).To(Succeed(), "renewing its serving certificate")
		opaque := servingSecret(ns, "other")
		opaque.Type = corev1.SecretTypeOpaque
		expectRefused(asManager.Create(ctx, opaque, client.DryRunAll), byPolicy, "an Opaque Secret named like a serving certificate")
		misnamed := servingSecret(ns, "mem2")
		misnamed.Name = "mem2-binding"
		expectRefused(asManager.Create(ctx, misnamed, client.DryRunAll), byPolicy, "a TLS Secret named like a binding")
		ownerless := servingSecret(ns, "mem3")
		ownerless.OwnerReferences = nil
		expectRefused(asManager.Create(ctx, ownerless, client.DryRunAll), byPolicy, "a serving-certificate Secret with no owner")

		for _, name := range []string{id.TokenKeySecret(), id.AdapterCASecret(), id.WebhookCertSecret()} {
			own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: id.Namespace}, Data: map[string][]byte{"k": []byte("v")}}
			Expect(asManager.Create(ctx, own)).To(Succeed(), "creating %s", name)
			Expect(asManager.Get(ctx, client.ObjectKeyFromObject(own), own)).To(Succeed(), "reading %s", name)
			own.Data["k"] = []byte("w")
			Expect(asManager.Update(ctx, own)).To(Succeed(), "updating %s", name)
		}
		By("and no other Secret in its own namespace")
		expectRefused(asManager.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: id.Namespace}}),
			byPolicy, "creating another Secret in the manager's namespace")
	})
})

const (
	// adapterImage is config/policy/images.yaml's adapterImage, the operator's own.
	adapterImage = "ghcr.io/agentmem/memory-adapter:dev"
	// externalImage is an External server's image, which the suite lists in allowedImages as a
	// platform admin would.
	externalImage = "registry.example/python-adapter:1"
)

// operatorLikeDeployment is a Deployment shaped as the controller renders an adapter's
// (memoryadapter/render): labelled, no token, hardened containers running the adapter image,
// with the volumes an adapter's pods have.
func operatorLikeDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/managed-by": "memory-adapter-operator", "memory.agentmem.io/adapter": "mem"}
	secret := func(name string) corev1.VolumeSource {
		return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mem", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:           "mem",
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Volumes: []corev1.Volume{
						{Name: "binding", VolumeSource: secret("mem-binding")},
						{Name: "tls", VolumeSource: secret("mem-tls")},
						{Name: "manifest", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "mem-manifest"}}}},
						{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mem-data"}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					Containers: []corev1.Container{{Name: "adapter", Image: adapterImage, SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false),
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					}}},
				},
			},
		},
	}
}

// foreignSecretVolume mounts a Secret the adapter does not own.
func foreignSecretVolume(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "loot",
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pg-memory-conn"}}})
}

// foreignImage runs the attacker's image.
func foreignImage(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Containers[0].Image = "attacker.example/exfil:1"
}

var _ = Describe("the manager's workloads", func() {
	It("may be what the operator renders, and nothing that would act as a ServiceAccount or as the node", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(asManager.Create(ctx, operatorLikeDeployment(ns), client.DryRunAll)).To(Succeed(), "an adapter Deployment as the operator renders it")
		for _, tc := range []struct {
			what   string
			mutate func(*appsv1.Deployment)
		}{
			{"a workload without the operator's labels", func(d *appsv1.Deployment) { delete(d.Labels, "app.kubernetes.io/managed-by") }},
			{"a pod that mounts its ServiceAccount's token (kube-system's, say)", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.ServiceAccountName = "clusterrole-aggregation-controller"
				d.Spec.Template.Spec.AutomountServiceAccountToken = nil
			}},
			{"a projected ServiceAccount token", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
			}},
			{"a hostPath volume", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			}},
			{"the host's network", func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostNetwork = true }},
			{"the host's PIDs", func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostPID = true }},
			{"a privileged container", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
				d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
			}},
			{"an added capability", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
			}},
			{"a container that may run as root", func(d *appsv1.Deployment) { d.Spec.Template.Spec.SecurityContext = nil }},
			{"an init container with privilege escalation", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "x"}}
			}},
			// Issue 42's trial: the operator's labels, an arbitrary image and a volume of another
			// workload's Secret; each half alone is refused too.
			{"a foreign image with a foreign Secret volume", func(d *appsv1.Deployment) { foreignImage(d); foreignSecretVolume(d) }},
			{"a foreign image", foreignImage},
			{"a foreign image whose name starts like the adapter's repository", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/agentmem/memory-adapter-evil:dev"
			}},
			{"a foreign image in a hardened init container", func(d *appsv1.Deployment) {
				c := d.Spec.Template.Spec.Containers[0].DeepCopy()
				c.Name, c.Image = "init", "attacker.example/exfil:1"
				d.Spec.Template.Spec.InitContainers = []corev1.Container{*c}
			}},
			{"a foreign Secret volume under the adapter image", foreignSecretVolume},
			{"another adapter's binding Secret", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes[0].Secret.SecretName = "other-binding"
			}},
			{"a Secret through a projected volume", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-memory-conn"}}}}}}})
			}},
			{"a CSI volume (a secrets-store driver)", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}})
			}},
			{"another workload's claim", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes[3].PersistentVolumeClaim.ClaimName = "postgres-data"
			}},
			{"every key of a Secret as environment", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-memory-conn"}}}}
			}},
		} {
			d := operatorLikeDeployment(ns)
			tc.mutate(d)
			expectRefused(asManager.Create(ctx, d, client.DryRunAll), byPolicy, tc.what)
		}

		By("the foreign image and Secret volume in a namespace with no adapter, and in a Job")
		other := newNamespace(ctx)
		d := operatorLikeDeployment(other)
		foreignImage(d)
		foreignSecretVolume(d)
		expectRefused(asManager.Create(ctx, d, client.DryRunAll), byPolicy, "the trial's Deployment in another namespace")
		loot := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mem-conformance-x", Namespace: ns, Labels: d.Labels},
			Spec: batchv1.JobSpec{Template: *d.Spec.Template.DeepCopy()}}
		loot.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		expectRefused(asManager.Create(ctx, loot, client.DryRunAll), byPolicy, "the trial as a Job")

		By("an allowed External image, a newer adapter version, and a connection Secret by reference pass")
		for _, mutate := range []func(*appsv1.Deployment){
			func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = externalImage },
			func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/agentmem/memory-adapter:v0.9.0"
			},
			func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MEMORY_ADAPTER_CONNECTION", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-memory-conn"}, Key: "dsn"}}}}
			},
		} {
			d := operatorLikeDeployment(ns)
			mutate(d)
			Expect(asManager.Create(ctx, d, client.DryRunAll)).To(Succeed())
		}

		By("nor can the manager widen its own allow-list")
		images := &corev1.ConfigMap{}
		Expect(admin.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: id.ImagesConfigMap()}, images)).To(Succeed())
		widened := images.DeepCopy()
		widened.Data["allowedImages"] += "\n*"
		expectRefused(asManager.Update(ctx, widened, client.DryRunAll), byPolicy, "updating the images ConfigMap")
		expectRefused(asManager.Patch(ctx, images.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"allowedImages":"*"}}`)), client.DryRunAll), byPolicy, "patching the images ConfigMap")
		expectRefused(asManager.Delete(ctx, images.DeepCopy(), client.DryRunAll), byPolicy, "deleting the images ConfigMap")

		By("a Job likewise, and deleting only the operator's workloads")
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "user-job", Namespace: ns},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
		expectRefused(asManager.Create(ctx, job.DeepCopy(), client.DryRunAll), byPolicy, "a Job with a token-mounting pod")
		Expect(admin.Create(ctx, job)).To(Succeed())
		expectRefused(asManager.Delete(ctx, job, client.DryRunAll), byPolicy, "deleting a Job the operator does not own")
		own := operatorLikeDeployment(ns)
		Expect(admin.Create(ctx, own)).To(Succeed())
		Expect(asManager.Delete(ctx, own, client.DryRunAll)).To(Succeed(), "deleting its own Deployment")
	})
})

var _ = Describe("the images ConfigMap", func() {
	It("refuses, while missing, every workload with the operator's label and nothing else of the cluster", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		key := types.NamespacedName{Namespace: id.Namespace, Name: id.ImagesConfigMap()}
		images := &corev1.ConfigMap{}
		Expect(admin.Get(ctx, key, images)).To(Succeed())
		Expect(admin.Delete(ctx, images.DeepCopy())).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			restored := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}, Data: images.Data}
			Expect(admin.Create(ctx, restored)).To(Succeed())
			// The next spec must find the policy configured again.
			Eventually(func() error { return asManager.Create(ctx, operatorLikeDeployment(ns), client.DryRunAll) }).
				WithTimeout(time.Minute).Should(Succeed())
		})

		Eventually(func() error { return asManager.Create(ctx, operatorLikeDeployment(ns), client.DryRunAll) }).
			WithTimeout(time.Minute).Should(MatchError(ContainSubstring(id.Prefix+"manager-workload-sources")),
			"the manager's workload while the ConfigMap is missing")
		user := operatorLikeDeployment(ns)
		user.Name, user.Labels = "user-app", map[string]string{"app": "user"}
		user.Spec.Selector.MatchLabels, user.Spec.Template.Labels = user.Labels, user.Labels
		Expect(admin.Create(ctx, user, client.DryRunAll)).To(Succeed(), "another workload of the cluster is untouched")
		Expect(admin.Create(ctx, operatorLikeDeployment(ns), client.DryRunAll)).To(MatchError(ContainSubstring("no params found")),
			"a workload with the operator's label, whoever writes it, waits for the ConfigMap")
	})
})
