package memoryadapter

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/health"
)

// TestConcurrentReconcilesOfGoneAdaptersShareNoState runs the not-found path of Reconcile from
// several workers at once, as MaxConcurrentReconciles does; under -race it fails if that path
// writes to anything package-level (it once appended to a shared slice with spare capacity).
func TestConcurrentReconcilesOfGoneAdaptersShareNoState(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := memoryv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Prober: &health.Prober{}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("gone-%d", i)}}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Errorf("reconcile %s: %v", req.Name, err)
			}
		}()
	}
	wg.Wait()
}
