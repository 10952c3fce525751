package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// outageGrace is how long after the backend is back that 503s still count as the outage's:
// the adapter's evidence is re-probed every second and its pool reconnects on demand.
const outageGrace = 5 * time.Second

type soakRun struct {
	cfg   config
	base  string
	token string
	http  *http.Client

	requests         atomic.Int64
	transportErrs    atomic.Int64
	transportOutside atomic.Int64
	mismatches       atomic.Int64
	unexpected       atomic.Int64
	fiveXXOutside    atomic.Int64
	fiveXXInOutage   atomic.Int64

	mu          sync.Mutex
	codes       map[int]int64
	acked       map[uuid.UUID]memory.Item
	ackOrder    []uuid.UUID
	outageFrom  time.Time
	outageUntil time.Time
	note        string
	firstOdd    []string
}

func newRun(c config, base, token string) *soakRun {
	return &soakRun{
		cfg: c, base: base, token: token,
		http:  &http.Client{Timeout: 30 * time.Second},
		codes: map[int]int64{}, acked: map[uuid.UUID]memory.Item{},
	}
}

func (r *soakRun) inOutage(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.outageFrom.IsZero() && !t.Before(r.outageFrom) && (r.outageUntil.IsZero() || t.Before(r.outageUntil))
}

// outage kills the backend hard, keeps it down for d, restarts it, and waits until the
// adapter is ready again. For the embedded backends the adapter process is the backend.
func (r *soakRun) outage(be *backend, ad *adapter, d time.Duration) error {
	r.mu.Lock()
	r.outageFrom = time.Now()
	r.mu.Unlock()
	embedded := be.conn == ""
	if embedded {
		ad.kill()
	} else if err := be.kill(); err != nil {
		return err
	}
	time.Sleep(d)
	if embedded {
		if r.cfg.backend == "inmemory" {
			// The reference store keeps nothing across a restart, by design.
			r.mu.Lock()
			r.acked = map[uuid.UUID]memory.Item{}
			r.ackOrder = nil
			r.note = "inmemory keeps nothing across a restart, so only writes acknowledged after it are checked"
			r.mu.Unlock()
		}
		ad.restarts++
		if err := ad.start(); err != nil {
			return err
		}
	} else {
		if err := be.resume(); err != nil {
			return err
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(ad.url() + "/readyz")
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the adapter did not become ready within 60s of the %s restart", be.name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	r.mu.Lock()
	r.outageUntil = time.Now().Add(outageGrace)
	r.mu.Unlock()
	return nil
}

type request struct {
	method, path, body, contentType, auth string
	// want lists the acceptable statuses; 503 is always acceptable during the outage.
	want []int
	// item is set for a valid store; it is acknowledged on 201.
	item *memory.Item
	// check, when set, verifies a 200's body.
	check func(body []byte) error
}

func (r *soakRun) client(ctx context.Context, rnd *mrand.Rand) {
	for ctx.Err() == nil {
		if r.requests.Add(1) > r.cfg.requests {
			r.requests.Add(-1)
			return
		}
		r.do(ctx, r.next(rnd))
	}
}

func (r *soakRun) do(ctx context.Context, q request) {
	req, err := http.NewRequestWithContext(ctx, q.method, r.base+q.path, strings.NewReader(q.body))
	if err != nil {
		r.odd("build request: " + err.Error())
		return
	}
	if q.contentType != "" {
		req.Header.Set("Content-Type", q.contentType)
	}
	auth := "Bearer " + r.token
	if q.auth != "" {
		auth = q.auth
	}
	req.Header.Set("Authorization", auth)
	resp, err := r.http.Do(req)
	// Classified by when the answer (or the failure) came: a request in flight when the
	// backend is killed belongs to the outage.
	if err != nil {
		if ctx.Err() == nil {
			r.transportErrs.Add(1)
			if !r.inOutage(time.Now()) {
				r.transportOutside.Add(1)
				r.odd("transport error outside the outage: " + err.Error())
			}
			// Nobody is listening: back off instead of spending the budget on refusals.
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	_ = resp.Body.Close()
	if err != nil {
		r.transportErrs.Add(1)
		return
	}
	r.mu.Lock()
	r.codes[resp.StatusCode]++
	r.mu.Unlock()
	inOutage := r.inOutage(time.Now())
	if resp.StatusCode >= 500 {
		if inOutage {
			r.fiveXXInOutage.Add(1)
			// As a polite client would, rather than spinning on a down backend.
			time.Sleep(20 * time.Millisecond)
		} else {
			r.fiveXXOutside.Add(1)
			r.odd(fmt.Sprintf("%s %s: %d %s", q.method, q.path, resp.StatusCode, truncate(string(body), 300)))
		}
	}
	if !slices.Contains(q.want, resp.StatusCode) && !(inOutage && resp.StatusCode == 503) {
		r.unexpected.Add(1)
		r.odd(fmt.Sprintf("%s %s: got %d, want %v: %s", q.method, q.path, resp.StatusCode, q.want, truncate(string(body), 300)))
		return
	}
	if resp.StatusCode == 201 && q.item != nil {
		r.mu.Lock()
		r.acked[q.item.ID] = *q.item
		r.ackOrder = append(r.ackOrder, q.item.ID)
		r.mu.Unlock()
	}
	if resp.StatusCode == 200 && q.check != nil {
		if err := q.check(body); err != nil {
			r.mismatches.Add(1)
			r.odd(fmt.Sprintf("%s %s: %v", q.method, q.path, err))
		}
	}
}

func (r *soakRun) odd(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.firstOdd) < 10 {
		r.firstOdd = append(r.firstOdd, s)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func nest(n int, leaf string) string { return strings.Repeat("[", n) + leaf + strings.Repeat("]", n) }

var words = []string{"alpha", "beta", "gamma", "delta", "needle", "Grüße", "世界", "%_*", "<&>"}

// randomItem is a valid item, sometimes one of the hostile shapes every backend must store.
func randomItem(rnd *mrand.Rand) memory.Item {
	it := memory.NewItem(nil)
	w := words[rnd.IntN(len(words))]
	switch rnd.IntN(10) {
	case 0:
		it.Content = json.RawMessage(nest(memory.MaxJSONDepth, `"`+w+`"`))
	case 1:
		it.Content = json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("1e131071,", 200), ",") + "]")
	case 2:
		it.Content = json.RawMessage(`"` + strings.Repeat(w+" ", 2000) + `"`)
	default:
		it.Content = json.RawMessage(fmt.Sprintf(`{"text":"%s %d","n":%d,"f":%d.25}`, w, rnd.IntN(1000), rnd.Int64(), rnd.IntN(100)))
	}
	it.Metadata["branch_id"] = json.RawMessage(fmt.Sprintf(`"b%d"`, rnd.IntN(20)))
	if rnd.IntN(4) == 0 {
		it.Metadata["source"] = json.RawMessage(nest(memory.MaxJSONDepth-1, `1`))
	}
	for range rnd.IntN(4) {
		it.Tags = append(it.Tags, words[rnd.IntN(len(words))])
	}
	return it
}

func (r *soakRun) randomAcked(rnd *mrand.Rand) (memory.Item, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ackOrder) == 0 {
		return memory.Item{}, false
	}
	id := r.ackOrder[rnd.IntN(len(r.ackOrder))]
	it, ok := r.acked[id]
	return it, ok
}

func itemCheck(want memory.Item) func([]byte) error {
	return func(body []byte) error {
		var got memory.Item
		if err := json.Unmarshal(body, &got); err != nil {
			return fmt.Errorf("decode item: %w", err)
		}
		if !got.Equal(want) {
			return fmt.Errorf("item %s differs in %v", want.ID, got.Diff(want))
		}
		return nil
	}
}

func searchCheck(limit int) func([]byte) error {
	return func(body []byte) error {
		var res struct {
			Items []memory.Item `json:"items"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			return fmt.Errorf("decode search page: %w", err)
		}
		if len(res.Items) > limit {
			return fmt.Errorf("%d items for limit %d", len(res.Items), limit)
		}
		return nil
	}
}

const jsonType = "application/json"

func (r *soakRun) next(rnd *mrand.Rand) request {
	n := rnd.IntN(100)
	switch {
	case n < 30:
		it := randomItem(rnd)
		b, err := json.Marshal(it)
		if err != nil {
			panic(err) // randomItem only builds valid items
		}
		return request{method: "POST", path: "/v1/items", body: string(b), contentType: jsonType, want: []int{201}, item: &it}
	case n < 45:
		if it, ok := r.randomAcked(rnd); ok {
			return request{method: "GET", path: "/v1/items/" + it.ID.String(), want: []int{200}, check: itemCheck(it)}
		}
		return request{method: "GET", path: "/v1/items/" + uuid.NewString(), want: []int{404}}
	case n < 50:
		return request{method: "GET", path: "/v1/items/" + uuid.NewString(), want: []int{404}}
	case n < 70:
		limit := rnd.IntN(50)
		q := map[string]any{"limit": limit}
		switch rnd.IntN(5) {
		case 0:
			q["text"] = words[rnd.IntN(len(words))]
		case 1:
			q["tags"] = []string{words[rnd.IntN(len(words))], words[rnd.IntN(len(words))]}
		case 2:
			q["filters"] = map[string]any{"branch_id": fmt.Sprintf("b%d", rnd.IntN(20))}
		case 3:
			q["filters"] = map[string]json.RawMessage{"source": json.RawMessage(nest(memory.MaxJSONDepth-1, `1`))}
		}
		b, _ := json.Marshal(q)
		return request{method: "POST", path: "/v1/search", body: string(b), contentType: jsonType, want: []int{200}, check: searchCheck(limit)}
	default:
		return invalid(rnd)
	}
}

// invalid is a request the server must refuse with a documented 4xx, never reaching a 5xx.
func invalid(rnd *mrand.Rand) request {
	id := uuid.NewString()
	valid := fmt.Sprintf(`{"id":%q,"created_at":1700000000.5}`, id)
	cases := []request{
		{method: "POST", path: "/v1/items", body: `{"id":`, contentType: jsonType, want: []int{400}},
		{method: "POST", path: "/v1/items", body: valid, contentType: "text/plain", want: []int{415}},
		{method: "POST", path: "/v1/items", body: "id=" + id, contentType: "application/x-www-form-urlencoded", want: []int{415}},
		{method: "POST", path: "/v1/search", body: `{}`, want: []int{415}},
		{method: "POST", path: "/v1/items", body: fmt.Sprintf(`{"id":%q,"created_at":1,"content":%s}`, id, nest(1000, "1")), contentType: jsonType, want: []int{400}},
		{method: "POST", path: "/v1/items", body: fmt.Sprintf(`{"id":%q,"created_at":1,"metadata":{"source":%s}}`, id, nest(memory.MaxJSONDepth, "1")), contentType: jsonType, want: []int{400}},
		{method: "POST", path: "/v1/items", body: fmt.Sprintf("{\"id\":%q,\"created_at\":1,\"content\":\"\xff\xfe\"}", id), contentType: jsonType, want: []int{400}},
		{method: "POST", path: "/v1/search", body: `{"filters":{"branch_id":` + nest(memory.MaxJSONDepth, "1") + `}}`, contentType: jsonType, want: []int{400}},
		{method: "POST", path: "/v1/search", body: `{"filters":{"zeta":1},"limit":-1}`, contentType: jsonType, want: []int{422}},
		{method: "POST", path: "/v1/search", body: `{"limit":1e3}`, contentType: jsonType, want: []int{400}},
		{method: "GET", path: "/v1/items/not-a-uuid", want: []int{400}},
		{method: "GET", path: "/v2/items", want: []int{404}},
		{method: "DELETE", path: "/v1/items/" + id, want: []int{405}},
		{method: "POST", path: "/v1/items", body: valid, contentType: jsonType, auth: "Bearer wrong", want: []int{401}},
		{method: "POST", path: "/v1/items", body: fmt.Sprintf(`{"id":%q,"created_at":1e999999}`, id), contentType: jsonType, want: []int{400}},
		{method: "POST", path: "/v1/items", body: fmt.Sprintf(`{"id":%q,"created_at":1,"score":1}`, id), contentType: jsonType, want: []int{400}},
	}
	if rnd.IntN(100) == 0 {
		// Rare: a body over the 1 MiB limit costs a megabyte each time.
		return request{method: "POST", path: "/v1/items", body: fmt.Sprintf(`{"id":%q,"created_at":1,"content":"%s"}`, id, strings.Repeat("x", 1<<20+10)), contentType: jsonType, want: []int{413}}
	}
	return cases[rnd.IntN(len(cases))]
}

// verify reads back the acknowledged writes (all of them, or the first maxVerify) and counts
// the ones missing or altered.
func (r *soakRun) verify() (missing, checked int, err error) {
	r.mu.Lock()
	ids := slices.Clone(r.ackOrder)
	acked := r.acked
	r.mu.Unlock()
	if len(ids) > maxVerify {
		ids = ids[:maxVerify]
	}
	for _, id := range ids {
		want := acked[id]
		req, _ := http.NewRequest("GET", r.base+"/v1/items/"+id.String(), nil)
		req.Header.Set("Authorization", "Bearer "+r.token)
		resp, err := r.http.Do(req)
		if err != nil {
			return missing, checked, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return missing, checked, err
		}
		checked++
		if resp.StatusCode != 200 || itemCheck(want)(body) != nil {
			missing++
			r.odd(fmt.Sprintf("acknowledged %s not retrievable: %d %s", id, resp.StatusCode, truncate(string(body), 200)))
		}
	}
	return missing, checked, nil
}

func (r *soakRun) report(w io.Writer, c config, elapsed time.Duration, missing, checked int, ad *adapter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	codes := make([]int, 0, len(r.codes))
	var answered int64
	for code, n := range r.codes {
		codes = append(codes, code)
		answered += n
	}
	slices.Sort(codes)
	var cs bytes.Buffer
	for i, code := range codes {
		if i > 0 {
			cs.WriteString(", ")
		}
		fmt.Fprintf(&cs, "%d: %d", code, r.codes[code])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "backend\t%s (seed %d, %d clients, outage %s)\n", c.backend, c.seed, c.concurrency, c.outage)
	fmt.Fprintf(tw, "requests\t%d sent, %d answered in %s (%.0f/s)\n", r.requests.Load(), answered, elapsed.Round(time.Millisecond), float64(answered)/elapsed.Seconds())
	fmt.Fprintf(tw, "status codes\t%s\n", cs.String())
	fmt.Fprintf(tw, "transport errors\t%d, of them outside the outage %d (goal 0)\n", r.transportErrs.Load(), r.transportOutside.Load())
	fmt.Fprintf(tw, "5xx outside the outage\t%d (goal 0)\n", r.fiveXXOutside.Load())
	fmt.Fprintf(tw, "5xx during the outage\t%d (503 unavailable is the documented answer)\n", r.fiveXXInOutage.Load())
	fmt.Fprintf(tw, "unexpected statuses\t%d (goal 0)\n", r.unexpected.Load())
	fmt.Fprintf(tw, "wrong 200 bodies\t%d (goal 0)\n", r.mismatches.Load())
	fmt.Fprintf(tw, "panics in the adapter log\t%d (goal 0)\n", ad.panics())
	fmt.Fprintf(tw, "acknowledged writes not retrievable\t%d of %d checked (goal 0)\n", missing, checked)
	fmt.Fprintf(tw, "adapter peak RSS\t%.1f MiB (VmHWM, max over %d process(es))\n", float64(ad.peakRSSKiB)/1024, ad.restarts+1)
	_ = tw.Flush()
	if r.note != "" {
		fmt.Fprintln(w, "note:", r.note)
	}
	for _, s := range r.firstOdd {
		fmt.Fprintln(w, "first anomalies:", s)
	}
}
