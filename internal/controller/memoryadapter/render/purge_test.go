package render

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func TestWantsPurge(t *testing.T) {
	for name, tc := range map[string]struct {
		backend memoryv1alpha1.BackendType
		policy  memoryv1alpha1.DeletionPolicy
		want    bool
	}{
		"postgres delete":    {memoryv1alpha1.BackendPostgres, memoryv1alpha1.DeletionDelete, true},
		"redis delete":       {memoryv1alpha1.BackendRedis, memoryv1alpha1.DeletionDelete, true},
		"postgres retain":    {memoryv1alpha1.BackendPostgres, memoryv1alpha1.DeletionRetain, false},
		"redis policy unset": {memoryv1alpha1.BackendRedis, "", false},
		// SQLite's items are in its volume, which the adapter owns under Delete.
		"sqlite delete": {memoryv1alpha1.BackendSQLite, memoryv1alpha1.DeletionDelete, false},
	} {
		t.Run(name, func(t *testing.T) {
			ma := &memoryv1alpha1.MemoryAdapter{Spec: memoryv1alpha1.MemoryAdapterSpec{
				Backend: memoryv1alpha1.BackendSpec{Type: tc.backend}, DeletionPolicy: tc.policy}}
			if got := WantsPurge(ma); got != tc.want {
				t.Fatalf("wantsPurge = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestDesiredPurgeJob(t *testing.T) {
	ma := &memoryv1alpha1.MemoryAdapter{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mem"},
		Spec: memoryv1alpha1.MemoryAdapterSpec{Backend: memoryv1alpha1.BackendSpec{
			Type: memoryv1alpha1.BackendRedis, Scope: "agents",
			ConnectionSecretRef: &memoryv1alpha1.SecretKeyReference{Name: "redis", Key: "url"},
		}},
	}
	j := PurgeJob(ma, "img:1")
	c := j.Spec.Template.Spec.Containers[0]
	if j.Name != "mem-purge" || len(j.OwnerReferences) != 0 || c.Image != "img:1" {
		t.Fatalf("job %s owners %v image %s", j.Name, j.OwnerReferences, c.Image)
	}
	want := []string{"purge", "--backend", "redis", "--scope", "agents"}
	for i, a := range want {
		if c.Args[i] != a {
			t.Fatalf("args %q, want them to start with %q", c.Args, want)
		}
	}
	// Every attempt ends, and writes its result, before the Job's deadline.
	budget, err := time.ParseDuration(c.Args[6])
	if c.Args[5] != "--timeout" || err != nil || budget*(PurgeBackoffLimit+1) >= time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second {
		t.Fatalf("attempt timeout %q does not fit %d attempts in %ds", c.Args[6], PurgeBackoffLimit+1, *j.Spec.ActiveDeadlineSeconds)
	}
	if len(c.Env) != 1 || c.Env[0].ValueFrom.SecretKeyRef.Name != "redis" || c.Env[0].ValueFrom.SecretKeyRef.Key != "url" {
		t.Fatalf("env %+v: the connection Secret goes by reference", c.Env)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageReadFile || j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("the result must reach the pod's termination message, and the Job retries by new pods")
	}
}
