package memoryadapter

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func TestConnectionOptionArgs(t *testing.T) {
	for name, tc := range map[string]struct {
		b    memoryv1alpha1.BackendSpec
		want []string
	}{
		"none":     {memoryv1alpha1.BackendSpec{Type: memoryv1alpha1.BackendPostgres}, nil},
		"postgres": {memoryv1alpha1.BackendSpec{Postgres: &memoryv1alpha1.PostgresOptions{SSLMode: memoryv1alpha1.PostgresSSLVerifyFull, MaxConnections: ptr.To[int32](10)}}, []string{"--postgres-sslmode", "verify-full", "--postgres-max-conns=10"}},
		"redis": {memoryv1alpha1.BackendSpec{Redis: &memoryv1alpha1.RedisOptions{Database: ptr.To[int32](0), TLS: memoryv1alpha1.RedisTLSRequired, PoolSize: ptr.To[int32](20)}},
			[]string{"--redis-db=0", "--redis-tls", "required", "--redis-pool-size=20"}},
	} {
		if got := connectionOptionArgs(tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}
