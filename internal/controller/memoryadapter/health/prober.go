package health

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/intern"
)

// DefaultProbeConcurrency bounds the evidence reads in flight when Prober.Concurrency is 0.
// A read that hangs holds its slot until the reader's deadline, so the slots needed are
// about (adapters whose reads hang) x deadline / period on top of the healthy reads, which
// take milliseconds: 256 leaves room for 10,000 adapters with 10% hanging at a 5 s deadline
// and a 30 s period (about 143 slots held, 5 s of every 35). The scale benchmark has
// confirmed the period only up to 500 hanging adapters so far (docs/operator.md#scale).
const DefaultProbeConcurrency = 256

// Prober reads each adapter pod's evidence on the adapter's health period, away from the
// reconcile workers, and wakes the controller (through Events) only when what it read
// changes what the controller would decide. Its state is keyed by the adapter's UID, and a
// target it does not know yet starts from the adapter's status.evidence, so a restarted or
// newly elected manager decides nothing until a read finds something new.
type Prober struct {
	// Reader reads one address's evidence; its deadline bounds a hung read.
	Reader EvidenceReader
	// Concurrency bounds the reads in flight; 0 means DefaultProbeConcurrency.
	Concurrency int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	once    sync.Once
	mu      sync.Mutex
	targets map[types.UID]*probeTarget
	byName  map[types.NamespacedName]types.UID
	sem     chan struct{}
	events  chan event.TypedGenericEvent[*memoryv1alpha1.MemoryAdapter]
	// due orders the targets waiting for their next look by when it is due, under mu. One
	// dispatcher and a pool of workers serve them all: a goroutine and a timer per adapter
	// held about 8 KB each at rest, 80 MB at 10,000 adapters (issue 44 item 5).
	due schedule
	// kick tells the dispatcher that the earliest due time may have moved.
	kick chan struct{}
	// running is set while Start runs.
	running bool
}

// firstReadRetry is how soon a failed read is retried while no evidence has been read yet.
const firstReadRetry = 2 * time.Second

// Spec is what the controller tells the prober about one adapter.
type Spec struct {
	Key types.NamespacedName
	// Endpoints are the addresses to read, one per serving pod (or one override address).
	Endpoints []Endpoint
	Token     string
	// NextToken is a rotation's token the adapter pods are being given: each read presents
	// it first, so a read that succeeds proves the pod accepts it; empty when none is.
	NextToken string
	// ServerName is the name an https adapter's certificate carries; empty for plain HTTP.
	ServerName string
	Period     time.Duration
	// Threshold is the failureThreshold: failures are counted up to it, no further.
	Threshold int
	Immediate bool
}

// Endpoint is one address whose evidence is read, named by the pod behind it.
type Endpoint struct {
	Name, URL string
}

// State is what the prober knows of one adapter, handed to the controller by value.
type State struct {
	// Evidence folds the last successful reads of every pod; nil before the first.
	Evidence *memory.EvidenceReport
	// Mixed names each pod's versions while the pods disagree on them; empty otherwise.
	Mixed       string
	LastSuccess time.Time
	lastAttempt time.Time
	// lastCounted is when a failed read last counted toward failureThreshold.
	lastCounted time.Time
	Failures    int
	LastErr     string
	// Addresses names what the last round read, for messages.
	Addresses string
	// Unauthorized is set when an adapter refused the token the operator derives.
	Unauthorized bool
	// NextAccepted is the rotation token every endpoint accepted in the last round; empty
	// when none was probed or a pod refused it.
	NextAccepted string
	// Endpoints is how many endpoints the last round read.
	Endpoints int
	// Rehydrated is set while the state comes from status.evidence and no read has answered
	// yet: the controller then leaves Healthy as it stands.
	Rehydrated bool
}

// probeTarget is one adapter the prober reads.
type probeTarget struct {
	uid types.UID
	// mu guards spec, state and rung; the scheduling fields below are the Prober's mu's.
	mu    sync.Mutex
	spec  Spec
	state State
	// rung is set by Ring until the next round begins: that round is due RingSpacing after
	// the previous one at the latest, whatever the period.
	rung bool

	// at is when the target's next look is due, and index its place in Prober.due (-1 when
	// it is not there: being looked at, waiting for a wake, or dropped).
	at    time.Time
	index int
	// busy is set while a worker looks at it; again asks that worker to look once more at
	// once, for a wake that came meanwhile.
	busy, again bool
	dropped     bool
}

func (p *Prober) init() {
	p.once.Do(func() {
		n := p.Concurrency
		if n <= 0 {
			n = DefaultProbeConcurrency
		}
		p.sem = make(chan struct{}, n)
		p.targets = map[types.UID]*probeTarget{}
		p.byName = map[types.NamespacedName]types.UID{}
		p.events = make(chan event.TypedGenericEvent[*memoryv1alpha1.MemoryAdapter], 1024)
		p.kick = make(chan struct{}, 1)
	})
}

// Events is the channel the controller watches (source.Channel): one event per adapter
// whose verdict may have changed.
func (p *Prober) Events() <-chan event.TypedGenericEvent[*memoryv1alpha1.MemoryAdapter] {
	p.init()
	return p.events
}

// Start runs the reads until ctx ends; it implements manager.Runnable, and like the
// controller it runs on the elected leader only. One dispatcher hands each target whose look
// is due to a pool of workers as large as the read pool (a look that reads waits for read
// slots, so more workers would only wait), which read it if its interval has passed and
// schedule its next look.
func (p *Prober) Start(ctx context.Context) error {
	p.init()
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return errors.New("prober: already running")
	}
	p.running = true
	// Every target is looked at afresh: a look cut short by the end of an earlier run left
	// its target out of the schedule.
	now := p.now()
	p.due = p.due[:0]
	for _, t := range p.targets {
		t.busy, t.again, t.index = false, false, -1
		t.at = now
		heap.Push(&p.due, t)
	}
	p.mu.Unlock()

	work := make(chan *probeTarget)
	var wg sync.WaitGroup
	for range cap(p.sem) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case t := <-work:
					p.finish(t, p.look(ctx, t))
				}
			}
		}()
	}
	p.dispatch(ctx, work)
	wg.Wait()
	p.mu.Lock()
	p.running = false
	p.mu.Unlock()
	return nil
}

// dispatch hands each target to work when its look is due, until ctx ends.
func (p *Prober) dispatch(ctx context.Context, work chan<- *probeTarget) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ready, next := p.takeDue()
		for _, t := range ready {
			select {
			case work <- t:
			case <-ctx.Done():
				return
			}
		}
		if len(ready) > 0 {
			// Handing over took time; what became due meanwhile is taken at once.
			next = 0
		}
		rearm(timer, next)
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-timer.C:
		}
	}
}

// takeDue takes the targets whose look is due out of the schedule, marked busy, and returns
// them with the time until the next one is due (-1 when none waits).
func (p *Prober) takeDue() ([]*probeTarget, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var ready []*probeTarget
	for len(p.due) > 0 && !p.due[0].at.After(now) {
		t := heap.Pop(&p.due).(*probeTarget)
		t.busy = true
		ready = append(ready, t)
	}
	if len(p.due) == 0 {
		return ready, -1
	}
	return ready, p.due[0].at.Sub(now)
}

// rearm stops t, drains a fire it missed, and sets it to d unless d is negative.
func rearm(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	if d >= 0 {
		t.Reset(d)
	}
}

// finish puts t back in the schedule wait from now (or at once if it was woken while being
// looked at), or leaves it out when wait is negative (nothing to read: a wake brings it back).
func (p *Prober) finish(t *probeTarget, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.busy = false
	if t.dropped {
		return
	}
	if t.again {
		t.again, wait = false, 0
	}
	if wait >= 0 {
		p.scheduleLocked(t, p.now().Add(wait))
	}
}

// wakeLocked asks for a look at t now; p.mu is held.
func (p *Prober) wakeLocked(t *probeTarget) {
	if t.busy {
		t.again = true
		return
	}
	p.scheduleLocked(t, p.now())
}

// scheduleLocked sets t's next look at at, earlier or later than the one it had; p.mu is held.
func (p *Prober) scheduleLocked(t *probeTarget, at time.Time) {
	if t.dropped || t.busy {
		return
	}
	t.at = at
	if t.index >= 0 {
		heap.Fix(&p.due, t.index)
	} else {
		heap.Push(&p.due, t)
	}
	if p.due[0] == t {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// schedule is a min-heap of targets by due time (container/heap).
type schedule []*probeTarget

func (s schedule) Len() int           { return len(s) }
func (s schedule) Less(i, j int) bool { return s[i].at.Before(s[j].at) }
func (s schedule) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].index, s[j].index = i, j
}

// Push implements heap.Interface.
func (s *schedule) Push(x any) {
	t := x.(*probeTarget)
	t.index = len(*s)
	*s = append(*s, t)
}

// Pop implements heap.Interface.
func (s *schedule) Pop() any {
	old := *s
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*s = old[:len(old)-1]
	return t
}

func (p *Prober) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Track records what to read for ma and returns what is known so far. A target seen for the
// first time starts from ma's status.evidence.
func (p *Prober) Track(ma *memoryv1alpha1.MemoryAdapter, spec Spec) State {
	p.init()
	p.mu.Lock()
	if old, ok := p.byName[spec.Key]; ok && old != ma.UID {
		// The name now belongs to a new object: the old one's state says nothing of it.
		p.dropLocked(old)
	}
	t, ok := p.targets[ma.UID]
	if !ok {
		t = &probeTarget{uid: ma.UID, index: -1}
		t.state = rehydrate(ma, p.now())
		p.targets[ma.UID] = t
		p.byName[spec.Key] = ma.UID
	}
	p.mu.Unlock()

	t.mu.Lock()
	changed := !ok || t.spec.Token != spec.Token || t.spec.NextToken != spec.NextToken || t.spec.Period != spec.Period || !slices.Equal(t.spec.Endpoints, spec.Endpoints)
	t.spec = spec
	state := t.state
	t.mu.Unlock()
	if changed {
		p.mu.Lock()
		p.wakeLocked(t)
		p.mu.Unlock()
	}
	return state
}

// NextTokenState reports the rotation token every endpoint of the adapter accepted in the
// last round (empty if none) and whether that round read any endpoint at all.
func (p *Prober) NextTokenState(uid types.UID) (accepted string, serving bool) {
	p.init()
	p.mu.Lock()
	t, ok := p.targets[uid]
	p.mu.Unlock()
	if !ok {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state.NextAccepted, t.state.Endpoints > 0
}

// Forget stops reading the adapter with that name and drops what was known of it.
func (p *Prober) Forget(key types.NamespacedName) {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	if uid, ok := p.byName[key]; ok {
		p.dropLocked(uid)
	}
}

func (p *Prober) dropLocked(uid types.UID) {
	t, ok := p.targets[uid]
	if !ok {
		return
	}
	delete(p.targets, uid)
	t.mu.Lock()
	key := t.spec.Key
	t.mu.Unlock()
	if p.byName[key] == uid {
		delete(p.byName, key)
	}
	t.dropped = true
	if t.index >= 0 {
		heap.Remove(&p.due, t.index)
	}
}

// tracked returns how many adapters the prober reads, for tests and metrics.
func (p *Prober) tracked() int {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.targets)
}

// rehydrate rebuilds the last verdict from status.evidence, so that the first reconcile after
// a restart or a leader change finds the versions and the verdict it left.
func rehydrate(ma *memoryv1alpha1.MemoryAdapter, now time.Time) State {
	st := ma.Status.Evidence
	if st == nil {
		return State{}
	}
	ev := &memory.EvidenceReport{
		ServiceVersion: st.ServiceVersion, AdapterVersion: st.AdapterVersion, ManifestHash: st.ManifestHash,
		ManifestValid: st.Verdict == memoryv1alpha1.EvidenceValid, Reason: st.Message, IndexLag: st.IndexLag,
		ObservedAt: st.ObservedTime.Time,
	}
	for _, name := range st.FailedProbes {
		ev.Probes = append(ev.Probes, memory.ProbeResult{Name: name})
	}
	return State{Evidence: ev, LastSuccess: now, Rehydrated: true}
}

// look reads t's pods if its interval has passed (or a ring shortened it) and returns how
// long until it should be looked at again, or -1 when there is nothing to read until a wake.
func (p *Prober) look(ctx context.Context, t *probeTarget) time.Duration {
	t.mu.Lock()
	spec, st, rung := t.spec, t.state, t.rung
	t.mu.Unlock()
	if len(spec.Endpoints) == 0 || spec.Token == "" {
		return -1
	}
	interval := readInterval(st, spec)
	if rung {
		interval = min(interval, RingSpacing)
	}
	wait := max(interval-p.now().Sub(st.lastAttempt), 0)
	if !st.lastAttempt.IsZero() && wait > 0 {
		return wait
	}
	t.mu.Lock()
	t.rung = false
	t.mu.Unlock()
	p.round(ctx, t, spec)
	t.mu.Lock()
	defer t.mu.Unlock()
	return readInterval(t.state, spec)
}

// readInterval is the time between reads: the period, or firstReadRetry while no evidence
// has been read yet (a freshly started pod often answers a moment later, and waiting a
// whole period would delay the first verdict for nothing), but only within the period of the
// first failed read: an adapter that never answers would otherwise be read every
// firstReadRetry plus the deadline for good, and at scale such adapters fill the pool and
// delay every healthy adapter's reads (the scale benchmark saw 33 s instead of 30 s with 500
// of 5,000 adapters hanging). A pending rotation is also read every firstReadRetry until
// every pod accepts its token, since the binding waits on that read.
func readInterval(st State, spec Spec) time.Duration {
	period := spec.Period
	if (st.Evidence == nil || st.Rehydrated) && st.Failures <= 1 {
		return min(period, firstReadRetry)
	}
	if spec.NextToken != "" && st.NextAccepted != spec.NextToken {
		return min(period, firstReadRetry)
	}
	return period
}

// podRead is one endpoint's answer.
type podRead struct {
	name string
	ev   *memory.EvidenceReport
	err  error
	// next is set when the pod answered the rotation's next token.
	next bool
}

// round reads every endpoint of t, each in a slot of the bounded pool, and folds the answers
// into t's state; it wakes the controller when the verdict inputs changed.
func (p *Prober) round(ctx context.Context, t *probeTarget, spec Spec) {
	start := p.now()
	reads := p.readEndpoints(ctx, spec)
	r := roundResult{reads: reads, nextAccepted: nextTokenAccepted(reads, spec.NextToken)}
	r.ev, r.mixed, r.err = foldReads(reads)

	t.mu.Lock()
	before := t.state
	t.state.record(r, spec, start)
	notify := verdictChanged(before, t.state, spec.Immediate)
	t.mu.Unlock()
	if notify {
		p.wakeController(ctx, spec.Key)
	}
}

// readEndpoints reads every endpoint at once, so that a round takes as long as its slowest
// pod and not the sum of them; the pool, not the round, bounds the reads in flight.
func (p *Prober) readEndpoints(ctx context.Context, spec Spec) []podRead {
	reads := make([]podRead, len(spec.Endpoints))
	var wg sync.WaitGroup
	for i, e := range spec.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads[i] = p.readEndpoint(ctx, spec, e)
		}()
	}
	wg.Wait()
	return reads
}

// readEndpoint reads one pod in a slot of the pool, which it holds until the reader's
// deadline at most. A pending rotation's token is presented first, so that a read that
// succeeds proves the pod accepts it. Only a refusal of that token falls back to the current
// one: any other failure is not the token's, and a second read would repeat it (for a hung
// pod, holding the slot for a second deadline).
func (p *Prober) readEndpoint(ctx context.Context, spec Spec, e Endpoint) podRead {
	r := podRead{name: e.Name}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		r.err = ctx.Err()
		return r
	}
	defer func() { <-p.sem }()
	if spec.NextToken != "" {
		r.ev, r.err = p.Reader.ReadEvidence(ctx, EvidenceTarget{URL: e.URL, Token: spec.NextToken, ServerName: spec.ServerName})
		r.next = r.err == nil
		if !errors.Is(r.err, ErrUnauthorized) {
			return r
		}
	}
	r.ev, r.err = p.Reader.ReadEvidence(ctx, EvidenceTarget{URL: e.URL, Token: spec.Token, ServerName: spec.ServerName})
	return r
}

// nextTokenAccepted is the rotation token when every pod answered it, else "": the binding
// may move to it only once no pod would refuse it.
func nextTokenAccepted(reads []podRead, next string) string {
	for _, r := range reads {
		if !r.next {
			return ""
		}
	}
	return next
}

// roundResult is what a round's reads amount to, worked out before t.mu is taken: the reads
// belong to the round alone, and the lock guards only the state that Track reads meanwhile.
type roundResult struct {
	reads        []podRead
	ev           *memory.EvidenceReport
	mixed        string
	err          error
	nextAccepted string
}

// record folds a round begun at start into st; the caller holds the target's lock.
func (st *State) record(r roundResult, spec Spec, start time.Time) {
	st.lastAttempt = start
	st.Addresses = EndpointNames(spec.Endpoints)
	st.Unauthorized = false
	st.NextAccepted, st.Endpoints = r.nextAccepted, len(spec.Endpoints)
	for _, read := range r.reads {
		st.Unauthorized = st.Unauthorized || errors.Is(read.err, ErrUnauthorized)
	}
	// Evidence from the pods that answered counts even when another pod failed: the failure
	// is counted below, and the evidence read is no less current for it.
	if r.ev != nil {
		st.Evidence, st.Mixed, st.LastSuccess, st.Rehydrated = r.ev, r.mixed, start, false
	}
	st.recordFailure(r.err, spec, start)
}

// recordFailure counts a failed round toward failureThreshold at most once per period, so
// that the quick retries (before the first evidence, or while a rotation is pending) do not
// reach the threshold in seconds; a round without failure clears the count, since the
// threshold is of consecutive failures.
func (st *State) recordFailure(err error, spec Spec, start time.Time) {
	if err == nil {
		st.Failures, st.LastErr, st.lastCounted = 0, "", time.Time{}
		return
	}
	if st.lastCounted.IsZero() || start.Sub(st.lastCounted) >= spec.Period {
		st.lastCounted = start
		// Past the threshold the count decides nothing more; counting on would change an
		// unreachable adapter's verdict inputs, and so wake it and write its status, every
		// period for as long as it stays unreachable.
		if spec.Threshold <= 0 || st.Failures < spec.Threshold {
			st.Failures++
		}
	}
	st.LastErr = err.Error()
	evidenceReadFailures.Inc()
}

// wakeController queues a reconcile of the adapter at key; the event carries only the name,
// since the controller reads the object from its own cache. A full queue holds the round
// until ctx ends rather than dropping a verdict change.
func (p *Prober) wakeController(ctx context.Context, key types.NamespacedName) {
	ma := &memoryv1alpha1.MemoryAdapter{}
	ma.Namespace, ma.Name = key.Namespace, key.Name
	select {
	case p.events <- event.TypedGenericEvent[*memoryv1alpha1.MemoryAdapter]{Object: ma}:
	case <-ctx.Done():
	}
}

// verdictChanged reports whether a round changed anything the controller decides from:
// the evidence as status records it, the version mix, the failure count, an unauthorized
// answer. A steady adapter's rounds change none of it, so they cost no reconcile.
func verdictChanged(before, after State, immediate bool) bool {
	return before.Rehydrated != after.Rehydrated || before.Mixed != after.Mixed || before.Failures != after.Failures ||
		before.Unauthorized != after.Unauthorized || (before.LastErr == "") != (after.LastErr == "") ||
		before.NextAccepted != after.NextAccepted ||
		before.Addresses != after.Addresses ||
		!sameEvidence(before.Evidence, after.Evidence, immediate)
}

// sameEvidence compares two reports on what status and the conditions show of them: the
// observation time moves with every read, and an eventual adapter's lag with every write;
// quota usage counts only in the whole percent status shows.
func sameEvidence(a, b *memory.EvidenceReport, immediate bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ServiceVersion == b.ServiceVersion && a.InitialServiceVersion == b.InitialServiceVersion &&
		a.AdapterVersion == b.AdapterVersion && a.ManifestHash == b.ManifestHash && a.ManifestValid == b.ManifestValid &&
		a.Reason == b.Reason && shownLag(a, immediate) == shownLag(b, immediate) && slices.Equal(a.Probes, b.Probes) &&
		equality.Semantic.DeepEqual(QuotaUsage(a.Usage), QuotaUsage(b.Usage))
}

// shownLag is the index lag status shows of a report: an immediate adapter's only.
func shownLag(ev *memory.EvidenceReport, immediate bool) int64 {
	if immediate && ev.IndexLag != nil {
		return *ev.IndexLag
	}
	return 0
}

// foldReads folds the pods' answers into one report: the first pod (by name) whose evidence
// invalidates the manifest or fails a probe speaks for the adapter, since a Service sends
// each call to any pod; else the first pod. Pods that report different versions are named
// in mixed. Any failed read is an error naming its pod, even when others answered.
func foldReads(reads []podRead) (ev *memory.EvidenceReport, mixed string, err error) {
	reads = slices.Clone(reads)
	slices.SortFunc(reads, func(a, b podRead) int { return strings.Compare(a.name, b.name) })
	var errs []string
	var answered []podRead
	for _, r := range reads {
		switch {
		case r.err != nil:
			errs = append(errs, fmt.Sprintf("pod %s: %v", r.name, r.err))
		case r.ev == nil:
			errs = append(errs, fmt.Sprintf("pod %s: no report", r.name))
		default:
			answered = append(answered, r)
		}
	}
	if len(errs) > 0 {
		err = errors.New(strings.Join(errs, "; "))
	}
	if len(answered) == 0 {
		return nil, "", err
	}
	speaker := answered[0]
	for _, r := range answered {
		if !r.ev.ManifestValid || len(failedProbes(r.ev)) > 0 {
			speaker = r
			break
		}
	}
	versions := map[[2]string]bool{}
	var each []string
	for _, r := range answered {
		versions[[2]string{r.ev.ServiceVersion, r.ev.AdapterVersion}] = true
		each = append(each, fmt.Sprintf("pod %s: service %q, adapter %q", r.name, r.ev.ServiceVersion, r.ev.AdapterVersion))
	}
	if len(versions) > 1 {
		mixed = strings.Join(each, "; ")
	}
	return compactReport(speaker.ev), mixed, err
}

// healthyProbes are the probe lists of the reports whose probes all passed (intern.Lists):
// most adapters of a backend report the same ones, word for word.
var healthyProbes = intern.NewLists(func(p memory.ProbeResult) string {
	return p.Name + "\x00" + strconv.Itoa(len(p.Detail)) + "\x00" + p.Detail + "\x00"
})

// compactReport is a copy of ev, which the prober holds until the adapter's next read, whose
// strings every adapter repeats (the adapter's id and versions, its manifest hash, probe
// names, and the details of the probes that passed) are the ones intern.Words holds, and
// whose probe list, when every probe passed, is a shared one. A failure's detail and reason
// are left as they came: they may name an address or an error no other report repeats, which
// would fill the vocabulary with words no one shares. ev itself is left as it is: a reader
// may hand one report to several rounds.
func compactReport(ev *memory.EvidenceReport) *memory.EvidenceReport {
	w := intern.Words
	c := *ev
	c.Adapter, c.AdapterVersion, c.ManifestHash = w.Intern(ev.Adapter), w.Intern(ev.AdapterVersion), w.Intern(ev.ManifestHash)
	c.ServiceVersion, c.InitialServiceVersion = w.Intern(ev.ServiceVersion), w.Intern(ev.InitialServiceVersion)
	if ev.Probes == nil {
		return &c
	}
	c.Probes = make([]memory.ProbeResult, len(ev.Probes))
	passed := true
	for i, p := range ev.Probes {
		p.Name = w.Intern(p.Name)
		if p.OK {
			p.Detail = w.Intern(p.Detail)
		}
		c.Probes[i] = p
		passed = passed && p.OK
	}
	if passed {
		c.Probes = healthyProbes.Share(c.Probes)
	}
	return &c
}

// EndpointNames lists the endpoints' names for messages.
func EndpointNames(eps []Endpoint) string {
	names := make([]string, 0, len(eps))
	for _, e := range eps {
		names = append(names, e.Name+" ("+e.URL+")")
	}
	return strings.Join(names, ", ")
}

// PodEndpoints returns one address per adapter pod that can answer: running, with an IP,
// not being deleted. Readiness does not matter: an adapter whose evidence invalidates its
// manifest is exactly the one whose evidence must still be read. The port is the pod's
// container port named http, which the Service targets, else defaultPort.
func PodEndpoints(pods []corev1.Pod, scheme string, defaultPort int32) []Endpoint {
	var eps []Endpoint
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			continue
		}
		port := defaultPort
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == "http" {
					port = cp.ContainerPort
				}
			}
		}
		eps = append(eps, Endpoint{Name: p.Name, URL: scheme + "://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))})
	}
	slices.SortFunc(eps, func(a, b Endpoint) int { return strings.Compare(a.Name, b.Name) })
	return eps
}
