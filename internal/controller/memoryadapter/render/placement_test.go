package render

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// placedAdapter is an adapter of backend t with the given replicas.
func placedAdapter(t memoryv1alpha1.BackendType, replicas int32) *memoryv1alpha1.MemoryAdapter {
	if t == memoryv1alpha1.BackendExternal {
		ma := externalAdapter(&memoryv1alpha1.ExternalOptions{})
		ma.Spec.Replicas = ptr.To(replicas)
		return ma
	}
	ma := &memoryv1alpha1.MemoryAdapter{}
	ma.Name, ma.Namespace = "agent-memory", "team"
	ma.Spec.Manifest.Adapter = "a"
	ma.Spec.Backend = memoryv1alpha1.BackendSpec{Type: t, Scope: "agents", ConnectionSecretRef: &memoryv1alpha1.SecretKeyReference{Name: "conn"}}
	if t == memoryv1alpha1.BackendKhive {
		ma.Spec.Backend.Khive = &memoryv1alpha1.KhiveOptions{Command: "/opt/khive/kkernel"}
	}
	ma.Spec.Replicas = ptr.To(replicas)
	return ma
}

// TestStatelessAdaptersRollWithoutLosingCapacity: a stateless adapter's rollout adds a pod
// before it removes one, spreads its replicas over nodes, and gives its pods the time to
// drain; an adapter with a data claim keeps one writer (Recreate).
func TestStatelessAdaptersRollWithoutLosingCapacity(t *testing.T) {
	for _, tc := range []struct {
		backend  memoryv1alpha1.BackendType
		rolling  bool
		external bool
	}{
		{memoryv1alpha1.BackendPostgres, true, false},
		{memoryv1alpha1.BackendRedis, true, false},
		{memoryv1alpha1.BackendExternal, true, true},
		{memoryv1alpha1.BackendSQLite, false, false},
		{memoryv1alpha1.BackendKhive, false, false},
	} {
		t.Run(string(tc.backend), func(t *testing.T) {
			ma := placedAdapter(tc.backend, 3)
			s := EffectiveSettings(ma, "img")
			dep := Deployment(ma, s)
			checkRolloutStrategy(t, dep.Spec.Strategy, tc.rolling)
			ps := dep.Spec.Template.Spec
			checkSpreadOverNodes(t, ps, ma.Name)
			checkNodeLossTolerations(t, ps.Tolerations, tc.rolling)
			if tc.external {
				checkExternalDrain(t, ps)
				return
			}
			checkServeDrain(t, ps, s.Lifecycle)
		})
	}
}

func checkRolloutStrategy(t *testing.T, st appsv1.DeploymentStrategy, rolling bool) {
	t.Helper()
	if !rolling {
		if st.Type != appsv1.RecreateDeploymentStrategyType || st.RollingUpdate != nil {
			t.Errorf("strategy %+v, want Recreate", st)
		}
		return
	}
	if st.Type != appsv1.RollingUpdateDeploymentStrategyType || st.RollingUpdate == nil ||
		*st.RollingUpdate.MaxUnavailable != intstr.FromInt32(0) || *st.RollingUpdate.MaxSurge != intstr.FromInt32(1) {
		t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0 and maxSurge 1", st)
	}
}

func checkSpreadOverNodes(t *testing.T, ps corev1.PodSpec, adapter string) {
	t.Helper()
	if len(ps.TopologySpreadConstraints) != 1 {
		t.Fatalf("topology spread %+v", ps.TopologySpreadConstraints)
	}
	tsc := ps.TopologySpreadConstraints[0]
	if tsc.TopologyKey != corev1.LabelHostname || tsc.MaxSkew != 1 || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway ||
		!slices.Equal(tsc.MatchLabelKeys, []string{appsv1.DefaultDeploymentUniqueLabelKey}) ||
		tsc.LabelSelector == nil || tsc.LabelSelector.MatchLabels[LabelAdapter] != adapter {
		t.Errorf("topology spread %+v", tsc)
	}
}

func checkNodeLossTolerations(t *testing.T, tolerations []corev1.Toleration, rolling bool) {
	t.Helper()
	if rolling != (len(tolerations) == 2) {
		t.Errorf("tolerations %+v: a stateless adapter bounds its stay on a lost node, one with a data claim keeps the default", tolerations)
	}
	for _, tol := range tolerations {
		if tol.Effect != corev1.TaintEffectNoExecute || tol.TolerationSeconds == nil || *tol.TolerationSeconds != int64(nodeLossGrace.Seconds()) ||
			(tol.Key != corev1.TaintNodeNotReady && tol.Key != corev1.TaintNodeUnreachable) {
			t.Errorf("toleration %+v", tol)
		}
	}
}

// checkExternalDrain: a server the user brings cannot be told to drain, so the kubelet
// waits the drain delay before stopping it.
func checkExternalDrain(t *testing.T, ps corev1.PodSpec) {
	t.Helper()
	c := ps.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil ||
		c.Lifecycle.PreStop.Sleep.Seconds != int64(AdapterDrainDelay.Seconds()) {
		t.Errorf("External container lifecycle %+v, want a preStop sleep of the drain delay", c.Lifecycle)
	}
	if grace := time.Duration(*ps.TerminationGracePeriodSeconds) * time.Second; grace != AdapterDrainDelay+externalShutdownGrace {
		t.Errorf("grace %v", grace)
	}
}

func checkServeDrain(t *testing.T, ps corev1.PodSpec, l memoryv1alpha1.LifecycleSpec) {
	t.Helper()
	c := ps.Containers[0]
	if c.Lifecycle != nil {
		t.Errorf("the project's server drains itself; lifecycle %+v", c.Lifecycle)
	}
	shutdown := operationBound(l) + shutdownMargin
	if !inOrder(c.Args, []string{"--drain-delay", AdapterDrainDelay.String(), "--shutdown-timeout", shutdown.String()}) {
		t.Errorf("serve args %q lack the drain and shutdown bounds", c.Args)
	}
	if grace := time.Duration(*ps.TerminationGracePeriodSeconds) * time.Second; grace <= AdapterDrainDelay+shutdown {
		t.Errorf("grace %v does not cover the drain %v and the shutdown %v", grace, AdapterDrainDelay, shutdown)
	}
}

func TestDesiredDisruptionBudget(t *testing.T) {
	for _, tc := range []struct {
		backend  memoryv1alpha1.BackendType
		replicas int32
		want     bool
	}{
		{memoryv1alpha1.BackendPostgres, 1, false},
		{memoryv1alpha1.BackendPostgres, 2, true},
		{memoryv1alpha1.BackendRedis, 5, true},
		{memoryv1alpha1.BackendExternal, 2, true},
		{memoryv1alpha1.BackendSQLite, 1, false},
		{memoryv1alpha1.BackendKhive, 1, false},
	} {
		ma := placedAdapter(tc.backend, tc.replicas)
		pdb := DisruptionBudget(ma, tc.replicas)
		if (pdb != nil) != tc.want {
			t.Errorf("%s × %d: budget %v, want %v", tc.backend, tc.replicas, pdb != nil, tc.want)
			continue
		}
		if pdb == nil {
			continue
		}
		if *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil ||
			pdb.Spec.Selector.MatchLabels[LabelComponent] != ComponentAdapter || pdb.Spec.Selector.MatchLabels[LabelAdapter] != ma.Name {
			t.Errorf("%s × %d: budget spec %+v", tc.backend, tc.replicas, pdb.Spec)
		}
	}
}
