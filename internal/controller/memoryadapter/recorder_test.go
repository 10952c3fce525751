package memoryadapter

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

func newTestRecorder(t *testing.T) (*EventRecorder, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, memoryv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	return &EventRecorder{client: c, scheme: scheme, controller: "ctl", instance: "ctl-host", queue: make(chan recordJob, 4),
		recent: map[eventKey]*recentEvent{}, ring: make([]eventKey, 2)}, c
}

// drain writes what is queued.
func drain(r *EventRecorder) {
	for {
		select {
		case j := <-r.queue:
			r.write(context.Background(), j)
		default:
			return
		}
	}
}

func TestEventRecorderFoldsARepeatIntoASeries(t *testing.T) {
	r, c := newTestRecorder(t)
	ma := &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u"}}
	r.Eventf(ma, nil, corev1.EventTypeWarning, "Unreachable", "SetHealthy", "read %d failed", 1)
	r.Eventf(ma, nil, corev1.EventTypeWarning, "Unreachable", "SetHealthy", "read %d failed", 2)
	r.Eventf(ma, nil, corev1.EventTypeWarning, "Unreachable", "SetHealthy", "read %d failed", 3)
	drain(r)
	list := &eventsv1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d Events, want one with a series", len(list.Items))
	}
	e := list.Items[0]
	if e.Series == nil || e.Series.Count != 3 || e.Note != "read 1 failed" || e.Regarding.Kind != "MemoryAdapter" || e.Regarding.Name != "a" ||
		e.ReportingController != "ctl" || e.ReportingInstance != "ctl-host" || e.Action != "SetHealthy" || e.Type != corev1.EventTypeWarning ||
		!strings.HasPrefix(e.Name, "a.") {
		t.Errorf("Event %+v", e)
	}

	// An Event about a Namespace is kept in default; its note is cut at the API's limit.
	r.Eventf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, ma, corev1.EventTypeWarning, "NamespaceTerminating", "RemoveFinalizer", "%s", strings.Repeat("x", 2000))
	drain(r)
	list = &eventsv1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || len(list.Items[0].Note) != eventNoteMax || list.Items[0].Related == nil || list.Items[0].Related.Name != "a" {
		t.Errorf("Events in default: %+v", list.Items)
	}
}

func TestEventRecorderForgetsBeyondItsBounds(t *testing.T) {
	r, _ := newTestRecorder(t)
	now := time.Now()
	var series []bool
	for _, name := range []string{"a", "b", "a", "c", "a"} {
		// Two remembered: c evicts a, so a's repeat after it is a new Event.
		key := eventKey{eventType: corev1.EventTypeNormal, action: "A", reason: "R", regarding: corev1.ObjectReference{Name: name}}
		series = append(series, r.fold(key, &eventsv1.Event{}, now).series)
	}
	if want := []bool{false, false, true, false, false}; !slices.Equal(series, want) {
		t.Errorf("series %v, want %v", series, want)
	}
	if len(r.recent) != 2 {
		t.Errorf("%d remembered, want 2", len(r.recent))
	}
	// A repeat after the window is a new Event too.
	key := eventKey{regarding: corev1.ObjectReference{Name: "a"}}
	if r.fold(key, &eventsv1.Event{}, now).series || r.fold(key, &eventsv1.Event{}, now.Add(recorderSeriesWindow)).series {
		t.Error("a repeat after the window joined the series")
	}
	// A full queue drops, as client-go's broadcaster does, instead of blocking a reconcile.
	for range 10 {
		r.Eventf(&memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}, nil, corev1.EventTypeNormal, "Q", "A", "n")
	}
	if len(r.queue) != cap(r.queue) {
		t.Errorf("queue %d of %d", len(r.queue), cap(r.queue))
	}
}
