package server

import (
	"mime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// requestCounters is one route's request counters by method label and status code, each
// resolved once: WithLabelValues hashes three labels and formats the status (an allocation
// for any code of three digits) on every request otherwise. Both labels are bounded
// (methodLabel's eight values, HTTP's status codes), and so is the cache.
type requestCounters struct {
	vec   *prometheus.CounterVec
	route string
	// known is read without a lock; a miss copies it under mu with the new counter added.
	known atomic.Pointer[map[counterKey]prometheus.Counter]
	mu    sync.Mutex
}

type counterKey struct {
	method string
	code   int
}

func newRequestCounters(vec *prometheus.CounterVec, route string) *requestCounters {
	c := &requestCounters{vec: vec, route: route}
	c.known.Store(&map[counterKey]prometheus.Counter{})
	return c
}

// get returns the counter of route, method (a methodLabel) and code.
func (c *requestCounters) get(method string, code int) prometheus.Counter {
	key := counterKey{method, code}
	if ctr, ok := (*c.known.Load())[key]; ok {
		return ctr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	known := *c.known.Load()
	if ctr, ok := known[key]; ok {
		return ctr
	}
	ctr := c.vec.WithLabelValues(c.route, method, strconv.Itoa(code))
	next := make(map[counterKey]prometheus.Counter, len(known)+1)
	for k, v := range known {
		next[k] = v
	}
	next[key] = ctr
	c.known.Store(&next)
	return ctr
}

// isJSONMediaType reports whether a Content-Type header names application/json, with
// parameters or not; readBody asks only when the header is not exactly that.
func isJSONMediaType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// recorders recycles instrument's response recorders, one per request otherwise.
var recorders = sync.Pool{New: func() any { return new(recorder) }}
