package health

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/intern"
)

func TestFoldReads(t *testing.T) {
	valid := func(svc, adapter string) *memory.EvidenceReport {
		return &memory.EvidenceReport{ServiceVersion: svc, AdapterVersion: adapter, ManifestValid: true}
	}
	invalid := &memory.EvidenceReport{ServiceVersion: "17.10", AdapterVersion: "v1", Reason: "service version changed"}
	probeFailed := &memory.EvidenceReport{ServiceVersion: "17.9", AdapterVersion: "v1", ManifestValid: true,
		Probes: []memory.ProbeResult{{Name: "write", Detail: "read-only"}}}
	for name, tc := range map[string]struct {
		reads      []podRead
		speaker    *memory.EvidenceReport
		mixed, err []string
	}{
		"no pod":               {reads: nil},
		"one pod":              {reads: []podRead{{name: "a", ev: valid("17.9", "v1")}}, speaker: valid("17.9", "v1")},
		"the first pod speaks": {reads: []podRead{{name: "b", ev: valid("17.9", "v1")}, {name: "a", ev: valid("17.9", "v1")}}, speaker: valid("17.9", "v1")},
		"an invalid pod speaks": {reads: []podRead{{name: "a", ev: valid("17.10", "v1")}, {name: "b", ev: invalid}},
			speaker: invalid, mixed: nil},
		"a failed probe speaks": {reads: []podRead{{name: "a", ev: valid("17.9", "v1")}, {name: "b", ev: probeFailed}}, speaker: probeFailed},
		"versions differ": {reads: []podRead{{name: "a", ev: valid("17.9", "v1")}, {name: "b", ev: valid("17.9", "v2")}},
			speaker: valid("17.9", "v1"), mixed: []string{`pod a: service "17.9", adapter "v1"`, `pod b: service "17.9", adapter "v2"`}},
		"a failed read names its pod and the others still count": {reads: []podRead{{name: "a", err: errors.New("connection refused")}, {name: "b", ev: valid("17.9", "v1")}},
			speaker: valid("17.9", "v1"), err: []string{"pod a: connection refused"}},
		"every read failed": {reads: []podRead{{name: "a", err: errors.New("timeout")}, {name: "b"}},
			err: []string{"pod a: timeout", "pod b: no report"}},
	} {
		t.Run(name, func(t *testing.T) {
			ev, mixed, err := foldReads(tc.reads)
			if ev != nil && tc.speaker != nil && !sameEvidence(ev, tc.speaker, true) || (ev == nil) != (tc.speaker == nil) {
				t.Fatalf("speaker %+v, want %+v", ev, tc.speaker)
			}
			if (mixed != "") != (tc.mixed != nil) {
				t.Fatalf("mixed %q, want %q", mixed, tc.mixed)
			}
			for _, m := range tc.mixed {
				if !strings.Contains(mixed, m) {
					t.Errorf("mixed %q does not name %q", mixed, m)
				}
			}
			if (err != nil) != (tc.err != nil) {
				t.Fatalf("error %v, want one naming %q", err, tc.err)
			}
			for _, m := range tc.err {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

func TestPodEndpoints(t *testing.T) {
	pod := func(name, ip string, phase corev1.PodPhase, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase, PodIP: ip},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "adapter", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9090}}}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	got := PodEndpoints([]corev1.Pod{
		pod("b", "10.0.0.2", corev1.PodRunning, false),
		pod("a", "fd00::1", corev1.PodRunning, false),
		pod("pending", "", corev1.PodPending, false),
		pod("leaving", "10.0.0.3", corev1.PodRunning, true),
		pod("done", "10.0.0.4", corev1.PodSucceeded, false),
	}, "https", 8080)
	want := []Endpoint{{Name: "a", URL: "https://[fd00::1]:9090"}, {Name: "b", URL: "https://10.0.0.2:9090"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("endpoints %v, want %v (running pods with an IP, not being deleted, at the http port, by name)", got, want)
	}
}

// scriptedReader answers per address: a hang blocks until the read's context ends, as an
// adapter that accepts the connection and never answers does under the reader's deadline.
type scriptedReader struct {
	mu       sync.Mutex
	answers  map[string]func() (*memory.EvidenceReport, error)
	reads    map[string][]time.Time
	deadline time.Duration
}

func (s *scriptedReader) ReadEvidence(ctx context.Context, t EvidenceTarget) (*memory.EvidenceReport, error) {
	url := t.URL
	s.mu.Lock()
	s.reads[url] = append(s.reads[url], time.Now())
	answer := s.answers[url]
	s.mu.Unlock()
	if answer == nil {
		ctx, cancel := context.WithTimeout(ctx, s.deadline)
		defer cancel()
		<-ctx.Done()
		return nil, fmt.Errorf("evidence read: %w", ctx.Err())
	}
	return answer()
}

func (s *scriptedReader) count(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads[url])
}

// waitFor polls cond every 10 ms until it holds, and fails the test when the limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(limit).WithPolling(10*time.Millisecond).Should(gomega.BeTrue(), what)
}

func startProber(t *testing.T, p *Prober) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func adapterNamed(i int) *memoryv1alpha1.MemoryAdapter {
	return &memoryv1alpha1.MemoryAdapter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("a", i), UID: types.UID(fmt.Sprint("uid-", i))}}
}

func specAt(ma *memoryv1alpha1.MemoryAdapter, url string, period time.Duration) Spec {
	return Spec{Key: types.NamespacedName{Namespace: ma.Namespace, Name: ma.Name}, Endpoints: []Endpoint{{Name: "p", URL: url}}, Token: "t", Period: period}
}

func TestProberHungReadsHoldOneSlotEach(t *testing.T) {
	ev := &memory.EvidenceReport{ServiceVersion: "1", AdapterVersion: "v1", ManifestValid: true}
	reader := &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){
		"http://healthy": func() (*memory.EvidenceReport, error) { return ev, nil },
	}, reads: map[string][]time.Time{}, deadline: time.Minute}
	// Three slots, two adapters that never answer: the healthy adapter keeps its own slot.
	p := &Prober{Reader: reader, Concurrency: 3}
	startProber(t, p)
	for i, url := range []string{"http://hung-1", "http://hung-2", "http://healthy"} {
		ma := adapterNamed(i)
		p.Track(ma, specAt(ma, url, 50*time.Millisecond))
	}
	waitFor(t, 10*time.Second, "the healthy adapter was not read 20 times while two reads hang", func() bool {
		return reader.count("http://healthy") >= 20
	})
	for _, url := range []string{"http://hung-1", "http://hung-2"} {
		if n := reader.count(url); n != 1 {
			t.Errorf("%s was read %d times while its first read hangs; a hung adapter's reads must not pile up", url, n)
		}
	}
}

func TestProberWakesOnlyWhenTheVerdictChanges(t *testing.T) {
	var mu sync.Mutex
	ev := &memory.EvidenceReport{ServiceVersion: "1", AdapterVersion: "v1", ManifestValid: true, ObservedAt: time.Now()}
	reader := &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){
		"http://a": func() (*memory.EvidenceReport, error) {
			mu.Lock()
			defer mu.Unlock()
			c := *ev
			c.ObservedAt = time.Now() // moves with every read, as a real adapter's does
			return &c, nil
		},
	}, reads: map[string][]time.Time{}, deadline: time.Second}
	p := &Prober{Reader: reader}
	startProber(t, p)
	ma := adapterNamed(0)
	p.Track(ma, specAt(ma, "http://a", 20*time.Millisecond))
	next := func() string {
		select {
		case e := <-p.Events():
			return e.Object.Name
		case <-time.After(10 * time.Second):
			return ""
		}
	}
	if got := next(); got != "a0" {
		t.Fatalf("the first read woke %q, want a0", got)
	}
	waitFor(t, 10*time.Second, "no further reads", func() bool { return reader.count("http://a") >= 10 })
	select {
	case e := <-p.Events():
		t.Fatalf("steady reads woke %s", e.Object.Name)
	default:
	}
	mu.Lock()
	ev.ManifestValid, ev.Reason = false, "probe write failed"
	mu.Unlock()
	if got := next(); got != "a0" {
		t.Fatalf("an invalidation woke %q, want a0", got)
	}
	if st := p.Track(ma, specAt(ma, "http://a", 20*time.Millisecond)); st.Evidence == nil || st.Evidence.ManifestValid {
		t.Fatalf("the state after an invalidation is %+v", st.Evidence)
	}
}

func TestProberStartsFromStatusAndForgetsByName(t *testing.T) {
	p := &Prober{Reader: &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){}, reads: map[string][]time.Time{}, deadline: time.Second}}
	ma := adapterNamed(0)
	lag := int64(0)
	ma.Status.Evidence = &memoryv1alpha1.EvidenceStatus{Verdict: memoryv1alpha1.EvidenceInvalid, ServiceVersion: "17.10", AdapterVersion: "v1",
		Message: "service version changed", FailedProbes: []string{"write"}, IndexLag: &lag}
	// Not started: a manager that is not the leader yet tracks without reading.
	st := p.Track(ma, specAt(ma, "http://a", time.Minute))
	if !st.Rehydrated || st.Evidence == nil || st.Evidence.ManifestValid || st.Evidence.ServiceVersion != "17.10" ||
		len(st.Evidence.Probes) != 1 || st.Evidence.Probes[0].OK {
		t.Fatalf("state from status %+v (evidence %+v)", st, st.Evidence)
	}
	if p.tracked() != 1 {
		t.Fatalf("tracked %d, want 1", p.tracked())
	}
	// The name now belongs to a new object: nothing of the old one carries over.
	again := adapterNamed(0)
	again.UID = "uid-new"
	if st := p.Track(again, specAt(again, "http://a", time.Minute)); st.Evidence != nil || p.tracked() != 1 {
		t.Fatalf("a recreated adapter inherited %+v (tracked %d)", st.Evidence, p.tracked())
	}
	p.Forget(types.NamespacedName{Namespace: "ns", Name: "a0"})
	if p.tracked() != 0 {
		t.Fatalf("tracked %d after Forget, want 0", p.tracked())
	}
}

func TestProberCountsFailuresUpToTheThreshold(t *testing.T) {
	reader := &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){
		"http://down": func() (*memory.EvidenceReport, error) { return nil, errors.New("connection refused") },
	}, reads: map[string][]time.Time{}, deadline: time.Second}
	p := &Prober{Reader: reader}
	startProber(t, p)
	ma := adapterNamed(0)
	spec := specAt(ma, "http://down", 20*time.Millisecond)
	spec.Threshold = 3
	p.Track(ma, spec)
	wakes := 0
	waitFor(t, 10*time.Second, "fewer than 20 reads", func() bool {
		for {
			select {
			case <-p.Events():
				wakes++
				continue
			default:
			}
			return reader.count("http://down") >= 20
		}
	})
	if st := p.Track(ma, spec); st.Failures != 3 {
		t.Errorf("failures %d after 20 failed reads, want the threshold 3: past it the count decides nothing", st.Failures)
	}
	// 1, 2 and 3 failures change the verdict inputs; 20 reads must not wake it 20 times.
	if wakes > 3 {
		t.Errorf("an adapter that stays unreachable woke the controller %d times", wakes)
	}
}

func TestProberRetriesQuicklyOnlyWithinTheFirstFailedPeriod(t *testing.T) {
	never := State{}
	if got := readInterval(never, Spec{Period: time.Minute}); got != firstReadRetry {
		t.Errorf("before any read: %s, want the quick retry %s", got, firstReadRetry)
	}
	never.Failures = 1
	if got := readInterval(never, Spec{Period: time.Minute}); got != firstReadRetry {
		t.Errorf("within the first failed period: %s, want the quick retry %s", got, firstReadRetry)
	}
	never.Failures = 2
	if got := readInterval(never, Spec{Period: time.Minute}); got != time.Minute {
		t.Errorf("an adapter that has not answered for a period: %s, want the period: quick retries for good fill the pool", got)
	}
	answered := State{Evidence: &memory.EvidenceReport{}, Failures: 2}
	if got := readInterval(answered, Spec{Period: time.Minute}); got != time.Minute {
		t.Errorf("after evidence: %s, want the period", got)
	}
}

// TestProberStartsOnce: the prober keeps no context of its own; a second Start while one
// runs is refused instead of starting every loop twice, and a Start after the first ended
// runs again.
func TestProberStartsOnce(t *testing.T) {
	p := &Prober{Reader: &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){}, reads: map[string][]time.Time{}, deadline: time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	waitFor(t, 5*time.Second, "the prober runs", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.running })
	if err := p.Start(context.Background()); err == nil {
		t.Fatal("a second Start while the first runs returned nil, want an error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { done <- p.Start(ctx2) }()
	waitFor(t, 5*time.Second, "the prober runs again", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.running })
	cancel2()
	if err := <-done; err != nil {
		t.Fatalf("second Start: %v", err)
	}
}

// tokenReader answers by token: the pods in refuses refuse the rotation's next token, as pods
// not yet given it do; fails makes every read fail otherwise than by the token.
type tokenReader struct {
	mu      sync.Mutex
	refuses map[string]bool
	fails   map[string]bool
	tokens  map[string][]string
}

func (r *tokenReader) ReadEvidence(_ context.Context, t EvidenceTarget) (*memory.EvidenceReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens[t.URL] = append(r.tokens[t.URL], t.Token)
	switch {
	case r.fails[t.URL]:
		return nil, errors.New("connection refused")
	case t.Token == "next" && r.refuses[t.URL]:
		return nil, fmt.Errorf("evidence read: HTTP 401: %w", ErrUnauthorized)
	}
	return &memory.EvidenceReport{ManifestValid: true}, nil
}

func TestProberReadsPresentTheNextTokenFirst(t *testing.T) {
	eps := []Endpoint{{Name: "given", URL: "http://given"}, {Name: "behind", URL: "http://behind"}, {Name: "down", URL: "http://down"}}
	for _, tc := range []struct {
		name      string
		next      string
		refuses   map[string]bool
		fails     map[string]bool
		tokens    map[string]string // the tokens each pod was read with, in order
		accepted  string
		anyFailed bool
	}{
		{name: "no rotation reads with the current token only", tokens: map[string]string{"http://given": "cur", "http://behind": "cur"}},
		{name: "every pod accepts the next token", next: "next", tokens: map[string]string{"http://given": "next", "http://behind": "next"}, accepted: "next"},
		{name: "a pod refusing it is read with the current token", next: "next", refuses: map[string]bool{"http://behind": true},
			tokens: map[string]string{"http://given": "next", "http://behind": "next,cur"}},
		{name: "a failure that is not the token's is not read again", next: "next", fails: map[string]bool{"http://down": true},
			tokens: map[string]string{"http://given": "next", "http://behind": "next", "http://down": "next"}, anyFailed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := &tokenReader{refuses: tc.refuses, fails: tc.fails, tokens: map[string][]string{}}
			p := &Prober{Reader: reader}
			p.init()
			spec := Spec{Endpoints: eps[:2], Token: "cur", NextToken: tc.next}
			if tc.fails != nil {
				spec.Endpoints = eps
			}
			reads := p.readEndpoints(context.Background(), spec)
			for url, want := range tc.tokens {
				if got := strings.Join(reader.tokens[url], ","); got != want {
					t.Errorf("%s was read with %q, want %q", url, got, want)
				}
			}
			if got := nextTokenAccepted(reads, tc.next); got != tc.accepted {
				t.Errorf("accepted %q, want %q", got, tc.accepted)
			}
			failed := false
			for i, r := range reads {
				if r.name != spec.Endpoints[i].Name {
					t.Errorf("read %d names %q, want %q", i, r.name, spec.Endpoints[i].Name)
				}
				failed = failed || r.err != nil
			}
			if failed != tc.anyFailed {
				t.Errorf("a read failed: %v, want %v (%+v)", failed, tc.anyFailed, reads)
			}
		})
	}
}

func TestRecordCountsFailuresOncePerPeriodUpToTheThreshold(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	spec := Spec{Period: 30 * time.Second, Threshold: 2, Endpoints: []Endpoint{{Name: "p", URL: "http://p"}}}
	down := roundResult{err: errors.New("pod p: connection refused")}
	var st State
	for _, step := range []struct {
		at       time.Duration
		r        roundResult
		failures int
	}{
		{0, down, 1},
		{2 * time.Second, down, 1},  // a quick retry within the period counts nothing
		{30 * time.Second, down, 2}, // a period after the counted failure
		{60 * time.Second, down, 2}, // past the threshold the count stays
		{62 * time.Second, roundResult{ev: &memory.EvidenceReport{ManifestValid: true}}, 0},
		{64 * time.Second, down, 1}, // consecutive failures: the count started afresh
	} {
		st.record(step.r, spec, t0.Add(step.at))
		if st.Failures != step.failures {
			t.Fatalf("at %s: failures %d, want %d", step.at, st.Failures, step.failures)
		}
		if (st.LastErr != "") != (step.r.err != nil) {
			t.Fatalf("at %s: last error %q with round error %v", step.at, st.LastErr, step.r.err)
		}
	}
	if !st.LastSuccess.Equal(t0.Add(62*time.Second)) || st.Evidence == nil || st.Addresses != "p (http://p)" || st.Endpoints != 1 {
		t.Fatalf("the state after the rounds: %+v", st)
	}
}

// TestProberGoroutinesDoNotGrowWithAdapters: 1,000 adapters read every 500 ms are each read
// on their period while the prober's goroutines stay those of its pool, not one per adapter
// (issue 44 item 5); a dropped adapter is read no more.
func TestProberGoroutinesDoNotGrowWithAdapters(t *testing.T) {
	const adapters, period = 1000, 500 * time.Millisecond
	ev := &memory.EvidenceReport{ServiceVersion: "1", AdapterVersion: "v1", ManifestValid: true}
	reader := &scriptedReader{answers: map[string]func() (*memory.EvidenceReport, error){}, reads: map[string][]time.Time{}}
	for i := range adapters {
		reader.answers[fmt.Sprint("http://a", i)] = func() (*memory.EvidenceReport, error) { return ev, nil }
	}
	p := &Prober{Reader: reader, Concurrency: 8}
	startProber(t, p)
	before := runtime.NumGoroutine()
	for i := range adapters {
		ma := adapterNamed(i)
		p.Track(ma, specAt(ma, fmt.Sprint("http://a", i), period))
	}
	waitFor(t, 20*time.Second, "every adapter read three times", func() bool {
		for i := range adapters {
			if reader.count(fmt.Sprint("http://a", i)) < 3 {
				return false
			}
		}
		return true
	})
	// The pool's reads come and go; a goroutine per adapter would add 1,000.
	if grown := runtime.NumGoroutine() - before; grown > 100 {
		t.Fatalf("%d more goroutines with %d adapters tracked: the prober keeps one per adapter", grown, adapters)
	}
	// Each adapter's reads are about a period apart: none read early.
	reader.mu.Lock()
	for url, at := range reader.reads {
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < period-50*time.Millisecond {
				reader.mu.Unlock()
				t.Fatalf("%s read %v after its previous read, within its period %v", url, gap, period)
			}
		}
	}
	reader.mu.Unlock()

	p.Forget(types.NamespacedName{Namespace: "ns", Name: "a0"})
	n := reader.count("http://a0")
	other := reader.count("http://a1")
	waitFor(t, 10*time.Second, "another adapter read twice more", func() bool { return reader.count("http://a1") >= other+2 })
	if got := reader.count("http://a0"); got > n+1 {
		t.Fatalf("a forgotten adapter was read %d more times", got-n)
	}
}

// The reports the prober keeps share the words every adapter repeats and, when all their
// probes passed, their probe list; a failure's own words are neither shared nor learnt.
func TestFoldedReportsShareWhatEveryAdapterRepeats(t *testing.T) {
	d := func(s string) string { return string([]byte(s)) }
	report := func(ok bool, detail string) *memory.EvidenceReport {
		return &memory.EvidenceReport{Adapter: d("sqlite"), AdapterVersion: d("v1.2.3"), ServiceVersion: d("3.50.4"), ManifestValid: true,
			ManifestHash: d("sha256:d18ecbf74ff7e52c2e76bfd1666d9f4ee6976c27b5d7369f917fea6752da351f"),
			Probes:       []memory.ProbeResult{{Name: d("wal_mode"), OK: true, Detail: d("journal_mode=wal")}, {Name: d("write"), OK: ok, Detail: d(detail)}}}
	}
	fold := func(ev *memory.EvidenceReport) *memory.EvidenceReport {
		t.Helper()
		got, _, err := foldReads([]podRead{{name: "p", ev: ev}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	a, b := fold(report(true, "stored, read back and removed a probe row")), fold(report(true, "stored, read back and removed a probe row"))
	if !same(a.ManifestHash, b.ManifestHash) || !same(a.ServiceVersion, b.ServiceVersion) || !same(a.AdapterVersion, b.AdapterVersion) || !same(a.Adapter, b.Adapter) {
		t.Error("two adapters' reports hold their versions and manifest hash twice")
	}
	if &a.Probes[0] != &b.Probes[0] {
		t.Error("two healthy reports hold two probe lists")
	}
	detail := fmt.Sprintf("insert a probe row: disk I/O error at %d", time.Now().UnixNano())
	f := fold(report(false, detail))
	if &f.Probes[0] == &a.Probes[0] || f.Probes[1].OK || f.Probes[1].Detail != detail || !same(f.Probes[0].Name, a.Probes[0].Name) {
		t.Errorf("a failing report's probes were shared or changed: %+v", f.Probes)
	}
	if intern.Words.Knows(detail) {
		t.Error("the vocabulary learnt a failure's detail")
	}
}
