package memoryadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The limits of EventRecorder: they bound its memory whatever the number of adapters.
const (
	// recorderQueue is how many Events may wait to be written; more are dropped, as
	// client-go's broadcaster drops past its own queue of 1,000.
	recorderQueue = 1000
	// recorderSeries is how many recent Events are remembered to fold a repeat into a series.
	recorderSeries = 1024
	// recorderSeriesWindow is how long a repeat still joins the Event it repeats
	// (client-go's finishTime).
	recorderSeriesWindow = 6 * time.Minute
	// recorderWorkers write Events concurrently: client-go's broadcaster writes each in a
	// goroutine of its own, and with 4 workers a loaded API server (about 0.8 s a create) left
	// a ramp's Events still being written minutes after the last reconcile.
	recorderWorkers = 64
	// recorderTries bounds the attempts at writing one Event through transport errors.
	recorderTries = 3
	// eventNoteMax is the events.k8s.io/v1 limit on a note.
	eventNoteMax = 1024
)

// EventRecorder records events.k8s.io/v1 Events, as client-go's events broadcaster does,
// without its memory: the broadcaster keeps every Event it sent for 6 to 12 minutes to fold
// repeats into series (65 MB while 10,000 adapters came up) and starts a goroutine per Event.
// This recorder remembers the last recorderSeries Events only, so a repeat soon after is
// still one Event with a series count, and writes from a bounded queue with a few workers.
// It is a manager Runnable that runs on every replica: whoever emits an Event writes it.
type EventRecorder struct {
	client     client.Client
	scheme     *runtime.Scheme
	controller string
	instance   string
	queue      chan recordJob

	mu sync.Mutex
	// recent maps an Event's identity to the Event last written for it; ring holds the
	// same keys in the order they were added, the oldest evicted first.
	recent map[eventKey]*recentEvent
	ring   []eventKey
	next   int
}

// eventKey is what makes two Events the same one repeated (client-go's isomorphic key).
type eventKey struct {
	eventType, action, reason string
	regarding, related        corev1.ObjectReference
}

// recentEvent is an Event written, with its series so far.
type recentEvent struct {
	event *eventsv1.Event
	count int32
	at    time.Time
}

// recordJob is one write: a new Event, or a series update of one written before.
type recordJob struct {
	event  *eventsv1.Event
	series bool
}

var _ events.EventRecorder = (*EventRecorder)(nil)

// NewEventRecorder returns a recorder reporting as controller (the instance is controller,
// "-" and the host name, as client-go names it) that writes with c (mgr's client when nil),
// and adds it to mgr, which starts its workers. A client of its own, with its own rate
// limiter, keeps a burst of Events from delaying the status writes that carry the verdict.
func NewEventRecorder(mgr ctrl.Manager, c client.Client, controller string) (*EventRecorder, error) {
	if c == nil {
		c = mgr.GetClient()
	}
	hostname, _ := os.Hostname()
	r := &EventRecorder{client: c, scheme: mgr.GetScheme(), controller: controller, instance: controller + "-" + hostname,
		queue: make(chan recordJob, recorderQueue), recent: make(map[eventKey]*recentEvent, recorderSeries), ring: make([]eventKey, recorderSeries)}
	if err := mgr.Add(r); err != nil {
		return nil, fmt.Errorf("add the event recorder: %w", err)
	}
	return r, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: a replica that emits an Event
// writes it, leader or not.
func (r *EventRecorder) NeedLeaderElection() bool { return false }

// Start writes queued Events until ctx ends.
func (r *EventRecorder) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range recorderWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-r.queue:
					r.write(ctx, j)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// Eventf implements events.EventRecorder.
func (r *EventRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	log := logf.Log.WithName("events")
	now := time.Now()
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		log.Error(err, "Could not construct a reference; the Event is not recorded", "reason", reason)
		return
	}
	var relRef *corev1.ObjectReference
	if related != nil {
		if relRef, err = reference.GetReference(r.scheme, related); err != nil {
			relRef = nil
		}
	}
	message := fmt.Sprintf(note, args...)
	if len(message) > eventNoteMax {
		message = message[:eventNoteMax]
	}
	ns := ref.Namespace
	if ns == "" {
		// An Event about a cluster-scoped object (a Namespace) is kept in default, as
		// client-go keeps it.
		ns = metav1.NamespaceDefault
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relRef,
		Note:                message,
		Type:                eventtype,
	}
	log.V(1).Info(message, "type", eventtype, "object", ref, "reason", reason)
	key := eventKey{eventType: eventtype, action: action, reason: reason, regarding: *ref}
	if relRef != nil {
		key.related = *relRef
	}
	r.enqueue(r.fold(key, ev, now))
}

// fold returns the write for ev: a series update when the same Event was written less than
// recorderSeriesWindow ago, else a new Event, remembered in place of the oldest.
func (r *EventRecorder) fold(key eventKey, ev *eventsv1.Event, now time.Time) recordJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.recent[key]; ok && now.Sub(prev.at) < recorderSeriesWindow {
		prev.count++
		prev.at = now
		upd := prev.event.DeepCopy()
		upd.Series = &eventsv1.EventSeries{Count: prev.count, LastObservedTime: metav1.NewMicroTime(now)}
		return recordJob{event: upd, series: true}
	}
	if _, ok := r.recent[key]; !ok {
		if old := r.ring[r.next]; old != (eventKey{}) {
			delete(r.recent, old)
		}
		r.ring[r.next] = key
		r.next = (r.next + 1) % len(r.ring)
	}
	r.recent[key] = &recentEvent{event: ev, count: 1, at: now}
	return recordJob{event: ev.DeepCopy()}
}

func (r *EventRecorder) enqueue(j recordJob) {
	select {
	case r.queue <- j:
	default:
		logf.Log.WithName("events").V(1).Info("Event queue full; the Event is dropped", "reason", j.event.Reason, "object", j.event.Regarding)
	}
}

// write creates the Event, or patches its series; a series whose Event is gone is created
// whole. Transport errors are retried a few times; the API server's refusals are not.
func (r *EventRecorder) write(ctx context.Context, j recordJob) {
	for try := 1; ; try++ {
		err := r.writeOnce(ctx, j)
		if err == nil || ctx.Err() != nil {
			return
		}
		var status apierrors.APIStatus
		if try >= recorderTries || errors.As(err, &status) {
			logf.FromContext(ctx).Error(err, "Unable to write an Event", "reason", j.event.Reason, "object", j.event.Regarding)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(try) * time.Second):
		}
	}
}

func (r *EventRecorder) writeOnce(ctx context.Context, j recordJob) error {
	if j.series {
		patch, err := json.Marshal(map[string]any{"series": j.event.Series})
		if err != nil {
			return err
		}
		target := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: j.event.Namespace, Name: j.event.Name}}
		err = r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	ev := j.event.DeepCopy()
	ev.ResourceVersion = ""
	err := r.client.Create(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
