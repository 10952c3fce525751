package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/agentmem/memory-adapter-operator/adapters/postgres"
	"github.com/agentmem/memory-adapter-operator/adapters/postgres/postgresdeploy"
	"github.com/agentmem/memory-adapter-operator/adapters/redis"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func TestConnectionOptionArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		b    memoryv1alpha1.BackendSpec
		want []string
	}{
		"none":     {memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendPostgres}, nil},
		"postgres": {memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendPostgres, Postgres: &memoryv1alpha1.PostgresOptions{SSLMode: memoryv1alpha1.PostgresSSLVerifyFull, MaxConnections: ptr.To[int32](10)}}, []string{"--postgres-sslmode", "verify-full", "--postgres-max-conns=10"}},
		"redis": {memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendRedis, Redis: &memoryv1alpha1.RedisOptions{Database: ptr.To[int32](0), TLS: memoryv1alpha1.RedisTLSRequired, PoolSize: ptr.To[int32](20)}},
			[]string{"--redis-db=0", "--redis-tls", "required", "--redis-pool-size=20"}},
	} {
		if got := entry(tc.b.Type).ConnectionArgs(&tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}

// backendCase is what one backend's adapter and conformance Job must look like.
type backendCase struct {
	name       string
	backend    memoryv1alpha1.BackendSpec
	image      *string
	serveArgs  []string // must appear in order in the serve args
	jobArgs    []string // must appear in order in the conformance args
	notInJob   []string
	dataClaim  string // requested size, "" for none
	homeEnv    bool
	recreate   bool
	wantImageS string
}

// TestBackendResources checks, per backend, the flags the adapter Deployment and the
// conformance Job get, the image, and whether the adapter has a data volume.
func TestBackendResources(t *testing.T) {
	khive := &memoryv1alpha1.KhiveOptions{Command: "/opt/khive/kkernel", Args: []string{"--no-embed", "--pack=kg"}, StorageSize: "5Gi"}
	for _, tc := range []backendCase{
		{
			name:      "khive",
			backend:   memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendKhive, Scope: "agents", Khive: khive},
			image:     ptr.To("registry.example/mao-khive:1"),
			serveArgs: []string{"--backend", "khive", "--scope", "agents", "--khive-command", "/opt/khive/kkernel", "--khive-arg=mcp", "--khive-arg=--db=/var/lib/memory-adapter/khive.db", "--khive-arg=--no-embed", "--khive-arg=--pack=kg"},
			jobArgs:   []string{"--backend", "khive", "--khive-command", "/opt/khive/kkernel", "--khive-arg=mcp", "--khive-arg=--no-embed", "--khive-arg=--pack=kg"},
			notInJob:  []string{"--khive-arg=--db=/var/lib/memory-adapter/khive.db"},
			dataClaim: "5Gi", homeEnv: true, recreate: true, wantImageS: "registry.example/mao-khive:1",
		},
		{
			name:      "sqlite has no khive flags",
			backend:   memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendSQLite, Scope: "agents"},
			serveArgs: []string{"--backend", "sqlite", "--sqlite-path", "/var/lib/memory-adapter/memory.db"},
			jobArgs:   []string{"--backend", "sqlite", "--sqlite-path", "/tmp/conformance.db"},
			notInJob:  []string{"--khive-command"},
			dataClaim: "1Gi", recreate: true, wantImageS: "default-image",
		},
		{
			name:       "redis has neither",
			backend:    memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendRedis, Scope: "agents", ConnectionSecretRef: &memoryv1alpha1.SecretKeyReference{Name: "r"}},
			serveArgs:  []string{"--backend", "redis"},
			jobArgs:    []string{"--backend", "redis"},
			notInJob:   []string{"--khive-command", "--sqlite-path"},
			wantImageS: "default-image",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ma := &memoryv1alpha1.MemoryAdapter{}
			ma.Name, ma.Namespace = "agent-memory", "team"
			ma.Spec.Backend = tc.backend
			ma.Spec.Image = tc.image
			ma.Spec.Manifest.Adapter = "a"
			s := EffectiveSettings(ma, "default-image")
			if tc.backend.Type == memoryv1alpha1.BackendKhive {
				checkKhiveLifecycle(t, s.Lifecycle)
			}
			checkBackendDeployment(t, tc, Deployment(ma, s))
			checkBackendConformanceJob(t, tc, ConformanceJob(ma, s, "job", RunKey{}, ""))
			checkBackendDataClaim(t, tc, ma)
		})
	}
}

func checkKhiveLifecycle(t *testing.T, l memoryv1alpha1.LifecycleSpec) {
	t.Helper()
	if l.ConnectionCreation != memoryv1alpha1.ConnectionAtFirstCall || l.DuplicateIDBehaviour != memoryv1alpha1.DuplicateIDReject ||
		l.RequestTimeout.Or(0) != 35*time.Second || l.ConnectTimeout.Or(0) != 20*time.Second || *l.Retry.Store.MaxAttempts != 1 {
		t.Errorf("khive lifecycle does not match docs/adapters/khive.md: %+v", l)
	}
}

func checkBackendDeployment(t *testing.T, tc backendCase, dep *appsv1.Deployment) {
	t.Helper()
	c := dep.Spec.Template.Spec.Containers[0]
	if !inOrder(c.Args, tc.serveArgs) {
		t.Errorf("serve args %q lack %q in order", c.Args, tc.serveArgs)
	}
	if c.Image != tc.wantImageS {
		t.Errorf("adapter image %q, want %q", c.Image, tc.wantImageS)
	}
	home := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "HOME" && e.Value == "/tmp" })
	if home != tc.homeEnv {
		t.Errorf("HOME=/tmp set: %v, want %v", home, tc.homeEnv)
	}
	if got := dep.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType; got != tc.recreate {
		t.Errorf("Recreate strategy %v, want %v", got, tc.recreate)
	}
}

func checkBackendConformanceJob(t *testing.T, tc backendCase, job *batchv1.Job) {
	t.Helper()
	jc := job.Spec.Template.Spec.Containers[0]
	if !inOrder(jc.Args, tc.jobArgs) {
		t.Errorf("conformance args %q lack %q in order", jc.Args, tc.jobArgs)
	}
	for _, a := range tc.notInJob {
		if slices.Contains(jc.Args, a) {
			t.Errorf("conformance args %q contain %q", jc.Args, a)
		}
	}
	if jc.Image != tc.wantImageS {
		t.Errorf("conformance image %q, want %q", jc.Image, tc.wantImageS)
	}
}

func checkBackendDataClaim(t *testing.T, tc backendCase, ma *memoryv1alpha1.MemoryAdapter) {
	t.Helper()
	if UsesDataClaim(ma) != (tc.dataClaim != "") {
		t.Fatalf("usesDataClaim %v, want %v", UsesDataClaim(ma), tc.dataClaim != "")
	}
	if tc.dataClaim == "" {
		return
	}
	pvc, err := DataClaim(ma)
	if err != nil {
		t.Fatal(err)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != tc.dataClaim {
		t.Errorf("claim size %s, want %s", got.String(), tc.dataClaim)
	}
}

// inOrder reports whether want appears in args as a subsequence.
func inOrder(args, want []string) bool {
	i := 0
	for _, a := range args {
		if i < len(want) && a == want[i] {
			i++
		}
	}
	return i == len(want)
}

func TestLifecycleErr(t *testing.T) {
	attempts := func(n int32) *memoryv1alpha1.RetryPolicy { return &memoryv1alpha1.RetryPolicy{MaxAttempts: ptr.To(n)} }
	for name, tc := range map[string]struct {
		t    memoryv1alpha1.BackendType
		l    *memoryv1alpha1.LifecycleSpec
		want string
	}{
		"nothing stated":                 {t: memoryv1alpha1.BackendSQLite},
		"timeouts configure":             {t: memoryv1alpha1.BackendSQLite, l: &memoryv1alpha1.LifecycleSpec{RequestTimeout: memoryv1alpha1.NewDuration(time.Second)}},
		"postgres retries every call":    {t: memoryv1alpha1.BackendPostgres, l: &memoryv1alpha1.LifecycleSpec{Retry: &memoryv1alpha1.RetryPolicies{Store: attempts(3), Retrieve: attempts(4), Search: attempts(2)}}},
		"redis retries reads":            {t: memoryv1alpha1.BackendRedis, l: &memoryv1alpha1.LifecycleSpec{Retry: &memoryv1alpha1.RetryPolicies{Retrieve: attempts(5), Store: attempts(1)}}},
		"redis never repeats a write":    {t: memoryv1alpha1.BackendRedis, l: &memoryv1alpha1.LifecycleSpec{Retry: &memoryv1alpha1.RetryPolicies{Store: attempts(2)}}, want: "retry.store.maxAttempts is 2, but the redis adapter never repeats a store call"},
		"sqlite never repeats":           {t: memoryv1alpha1.BackendSQLite, l: &memoryv1alpha1.LifecycleSpec{Retry: &memoryv1alpha1.RetryPolicies{Search: attempts(2)}}, want: "the sqlite adapter never repeats a search call"},
		"a description that is false":    {t: memoryv1alpha1.BackendPostgres, l: &memoryv1alpha1.LifecycleSpec{ConnectionCreation: memoryv1alpha1.ConnectionAtFirstCall}, want: "connectionCreation is FirstCall, but the postgres adapter's is Constructor"},
		"a description that is true":     {t: memoryv1alpha1.BackendKhive, l: &memoryv1alpha1.LifecycleSpec{ConnectionCreation: memoryv1alpha1.ConnectionAtFirstCall, DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDReject}},
		"duplicate ids described wrong":  {t: memoryv1alpha1.BackendKhive, l: &memoryv1alpha1.LifecycleSpec{DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDOverwrite}, want: "duplicateIdBehaviour is Overwrite"},
		"concurrency described wrong":    {t: memoryv1alpha1.BackendPostgres, l: &memoryv1alpha1.LifecycleSpec{ConcurrencySafe: ptr.To(false)}, want: "spec.lifecycle.concurrencySafe is false, but the postgres adapter's is true: the field describes the adapter and cannot change it (docs/adapters/postgres.md); remove it or state true"},
		"concurrency described truly":    {t: memoryv1alpha1.BackendRedis, l: &memoryv1alpha1.LifecycleSpec{ConcurrencySafe: ptr.To(true), ConnectionCreation: memoryv1alpha1.ConnectionAtConstructor}},
		"failover loss described wrong":  {t: memoryv1alpha1.BackendRedis, l: &memoryv1alpha1.LifecycleSpec{Failover: "nothing is ever lost"}, want: "spec.lifecycle.failover is nothing is ever lost"},
		"failover loss on one server":    {t: memoryv1alpha1.BackendSQLite, l: &memoryv1alpha1.LifecycleSpec{Failover: "nothing is ever lost"}, want: "spec.lifecycle.failover is nothing is ever lost, but the sqlite adapter states none"},
		"failover loss repeated":         {t: memoryv1alpha1.BackendPostgres, l: &memoryv1alpha1.LifecycleSpec{Failover: postgresdeploy.FailoverLoss}},
		"the first false description":    {t: memoryv1alpha1.BackendSQLite, l: &memoryv1alpha1.LifecycleSpec{ConcurrencySafe: ptr.To(false), DuplicateIDBehaviour: memoryv1alpha1.DuplicateIDReject}, want: "concurrencySafe is false"},
		"khive never repeats":            {t: memoryv1alpha1.BackendKhive, l: &memoryv1alpha1.LifecycleSpec{Retry: &memoryv1alpha1.RetryPolicies{Store: attempts(1), Retrieve: attempts(2), Search: attempts(3)}}, want: "spec.lifecycle.retry.retrieve.maxAttempts is 2, but the khive adapter never repeats a retrieve call (docs/adapters/khive.md); remove it or set 1"},
		"a policy with no attempts":      {t: memoryv1alpha1.BackendSQLite, l: &memoryv1alpha1.LifecycleSpec{Retry: &memoryv1alpha1.RetryPolicies{Store: &memoryv1alpha1.RetryPolicy{Backoff: memoryv1alpha1.NewDuration(time.Second)}}}},
		"external is the user's to tell": {t: memoryv1alpha1.BackendExternal, l: &memoryv1alpha1.LifecycleSpec{ConcurrencySafe: ptr.To(false), Retry: &memoryv1alpha1.RetryPolicies{Store: attempts(3)}}},
	} {
		t.Run(name, func(t *testing.T) {
			err := LifecycleErr(tc.t, tc.l)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRetryArgsPassTheEffectivePolicies(t *testing.T) {
	got := retryArgs(memoryv1alpha1.BackendRedis, effectiveLifecycle(memoryv1alpha1.BackendRedis, nil))
	want := []string{
		"--retry-store=attempts=1,backoff=0s,max-backoff=0s,jitter=none",
		"--retry-retrieve=attempts=3,backoff=25ms,max-backoff=200ms,jitter=equal",
		"--retry-search=attempts=3,backoff=25ms,max-backoff=200ms,jitter=equal",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("redis defaults: %q, want %q", got, want)
	}
	for _, a := range want {
		p, err := memory.ParseRetryPolicy(strings.SplitN(a, "=", 2)[1])
		if err != nil {
			t.Fatalf("%s does not parse as serve reads it: %v", a, err)
		}
		if strings.Contains(a, "retrieve") && p != redis.DefaultReadRetry {
			t.Errorf("the documented lifecycle %+v differs from the adapter's default %+v", p, redis.DefaultReadRetry)
		}
	}
	pg := retryArgs(memoryv1alpha1.BackendPostgres, effectiveLifecycle(memoryv1alpha1.BackendPostgres, nil))
	if len(pg) != 3 || pg[0] != "--retry-store="+postgres.DefaultRetry.String() {
		t.Errorf("postgres defaults: %q, want postgres.DefaultRetry %s for each call", pg, postgres.DefaultRetry)
	}
	for _, b := range []memoryv1alpha1.BackendType{memoryv1alpha1.BackendSQLite, memoryv1alpha1.BackendKhive, memoryv1alpha1.BackendExternal} {
		if got := retryArgs(b, effectiveLifecycle(b, nil)); got != nil {
			t.Errorf("%s: %q, want none (it does not retry)", b, got)
		}
	}
}
