package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/adapters/redis/redisdeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterID is the default stable implementation id published in the manifest.
const AdapterID = "redis"

// Timeouts and retry values. docs/adapters/redis.md explains each choice.
const (
	// DefaultDialTimeout bounds connection setup. A loopback or in-cluster Redis answers a TCP
	// handshake in well under a millisecond; two seconds absorbs a slow DNS lookup or a busy
	// node without letting an explicit call hang.
	DefaultDialTimeout = redisdeploy.DialTimeout
	// DefaultRequestTimeout bounds one command's read and write. Every command the adapter
	// issues is O(items touched); two seconds is far above the measured latencies (see the
	// benchmarks in the docs) yet short enough that an outage surfaces quickly.
	DefaultRequestTimeout = redisdeploy.RequestTimeout
	// DefaultReadRetries is how many times retrieve and search (read-only, safe to repeat)
	// are retried after a transport failure. Store is never retried by the adapter.
	DefaultReadRetries = redisdeploy.ReadRetries
	// DefaultIndexBatch is how many stream entries the indexer applies per transaction.
	DefaultIndexBatch = 256
	// DefaultClaimIdle is how long an entry may stay pending with a consumer before another
	// consumer claims it (the owner is presumed crashed).
	DefaultClaimIdle = 30 * time.Second
	// DefaultMaxIndexLag is the index lag (entries not yet applied) beyond which the
	// capability probe reports the index unhealthy.
	DefaultMaxIndexLag = 100_000

	maxPasswordBytes = 4096
)

// DefaultReadRetry is the read calls' retry policy: three attempts, pausing 25 ms doubling up
// to 200 ms with equal jitter, repeated only after a transport failure.
var DefaultReadRetry = redisdeploy.ReadRetry

// Options configure Open. Exactly one of Addr and URL is required.
type Options struct {
	// Addr is host:port of the Redis server.
	Addr string
	// URL is a redis:// or rediss:// URL; it may carry the user, database and TLS choice.
	// A password inside the URL is honoured but never logged. A redis-sentinel:// URL
	// (SentinelScheme) names the sentinels of a Sentinel-managed primary instead, which
	// the store follows through failovers. Either form may carry min_replicas and
	// wait_timeout, MinReplicas and WaitTimeout below.
	URL string
	// Username is the ACL user, if any.
	Username string
	// Password authenticates the connection. Prefer PasswordFile; the value is never logged.
	Password string
	// PasswordFile names a file whose content (trailing newline removed) is the password,
	// the form a mounted Kubernetes Secret takes.
	PasswordFile string
	// Scope is the namespace every key lives under, fixed for the store's lifetime; it
	// must pass memory.CheckScope.
	Scope string
	// SupportedFilters is the exact filter key set to publish and index; nil means
	// memory.DefaultSupportedFilters. A scope keeps the set it was first opened with.
	SupportedFilters []string
	// AdapterID is the manifest's adapter id; empty means AdapterID.
	AdapterID string
	// DialTimeout overrides DefaultDialTimeout when positive.
	DialTimeout time.Duration
	// RequestTimeout overrides DefaultRequestTimeout when positive.
	RequestTimeout time.Duration
	// ReadRetries overrides DefaultReadRetries when positive; negative disables retries.
	// RetrieveRetry and SearchRetry, when set, replace it and DefaultReadRetry.
	ReadRetries int
	// RetrieveRetry and SearchRetry are the read calls' retry policies; a zero policy means
	// DefaultReadRetry with ReadRetries applied.
	RetrieveRetry, SearchRetry memory.RetryPolicy
	// StoreRetry may only say what the adapter does, one attempt: a reply lost after EXEC
	// leaves the write applied and its stream entry appended, so a repeat would index the
	// item twice. Zero or MaxAttempts 1; anything else is refused.
	StoreRetry memory.RetryPolicy
	// MaxItemBytes overrides memory.MaxItemBytes when positive.
	MaxItemBytes int
	// IndexBatch overrides DefaultIndexBatch when positive.
	IndexBatch int
	// ClaimIdle overrides DefaultClaimIdle when positive.
	ClaimIdle time.Duration
	// MaxIndexLag overrides DefaultMaxIndexLag when positive.
	MaxIndexLag int64
	// ConsumerName names this instance's indexer in the consumer group; empty means the
	// host name plus a random suffix.
	ConsumerName string
	// MinReplicas, when positive, makes acknowledged mean replicated: every store waits
	// (WAIT, on the connection that wrote) until that many replicas confirm it, and answers
	// MemoryAdapterUnavailable when fewer do within WaitTimeout (the write may then exist,
	// but it was not acknowledged). It overrides the URL's min_replicas.
	MinReplicas int
	// WaitTimeout bounds that wait; zero means the URL's wait_timeout, else
	// DefaultWaitTimeout. It must be shorter than the request timeout.
	WaitTimeout time.Duration
	// Now is the clock that stamps each write's store time, which retention ages from;
	// nil means time.Now.
	Now func() time.Time
}

// config is Options after validation and defaulting.
type config struct {
	// client holds the connection settings; for a Sentinel-managed primary, failover is set
	// too and newClient uses it (client then only carries the shared settings).
	client      *goredis.Options
	failover    *goredis.FailoverOptions
	promise     replicaPromise
	scope       string
	filters     []string
	adapterID   string
	readRetries int
	// retrieveRetry and searchRetry are the read policies after defaulting.
	retrieveRetry, searchRetry memory.RetryPolicy
	maxItem                    int
	batch                      int
	claimIdle                  time.Duration
	maxLag                     int64
	consumer                   string
	requestTO                  time.Duration
	now                        func() time.Time
}

func (o Options) resolve() (config, error) {
	var c config
	var errs []error
	if err := memory.CheckScope(o.Scope); err != nil {
		errs = append(errs, err)
	}
	var ro *goredis.Options
	var fo *goredis.FailoverOptions
	var promise replicaPromise
	switch {
	case o.Addr != "" && o.URL != "":
		errs = append(errs, errors.New("set exactly one of addr and url"))
	case o.Addr != "":
		ro = &goredis.Options{Addr: o.Addr}
	case o.URL != "":
		rest, p, err := splitPromise(o.URL)
		promise = p
		switch {
		case err != nil:
			errs = append(errs, err)
		case isSentinelURL(rest):
			fo, err = parseSentinelURL(rest)
			if err != nil {
				errs = append(errs, err)
			} else {
				ro = &goredis.Options{}
			}
		default:
			parsed, err := goredis.ParseURL(rest)
			if err != nil {
				// The URL may hold a password: never echo it.
				errs = append(errs, errors.New("url: not a valid redis://, rediss:// or "+SentinelScheme+":// URL"))
			} else {
				ro = parsed
			}
		}
	default:
		errs = append(errs, errors.New("set exactly one of addr and url"))
	}
	password := o.Password
	if o.PasswordFile != "" {
		if o.Password != "" {
			errs = append(errs, errors.New("set at most one of password and password file"))
		}
		b, err := readBounded(o.PasswordFile, maxPasswordBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("password file: %w", err))
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	filters := o.SupportedFilters
	if filters == nil {
		filters = memory.DefaultSupportedFilters()
	}
	filters = slices.Clone(filters)
	slices.Sort(filters)
	filters = slices.Compact(filters)
	for _, f := range filters {
		if f == "" || len(f) > 256 || !utf8.ValidString(f) {
			errs = append(errs, errors.New("supported filters: keys must be 1 to 256 bytes of UTF-8"))
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if o.Username != "" {
		ro.Username = o.Username
	}
	if password != "" {
		ro.Password = password
	}
	dial := positive(o.DialTimeout, DefaultDialTimeout)
	req := positive(o.RequestTimeout, DefaultRequestTimeout)
	if o.MinReplicas < 0 || o.MinReplicas > maxMinReplicas {
		return c, fmt.Errorf("min replicas %d is outside 0-%d", o.MinReplicas, maxMinReplicas)
	}
	if o.MinReplicas > 0 {
		promise.minReplicas = o.MinReplicas
	}
	promise.timeout = positive(o.WaitTimeout, positive(promise.timeout, DefaultWaitTimeout))
	if promise.minReplicas > 0 && promise.timeout >= req {
		// The request's deadline would end the wait first and turn "too few replicas" into a
		// timeout that says less.
		return c, fmt.Errorf("wait timeout %s must be shorter than the request timeout %s", promise.timeout, req)
	}
	ro.DialTimeout = dial
	ro.ReadTimeout = req
	ro.WriteTimeout = req
	// The adapter owns retries (reads only); go-redis must not silently repeat a write.
	ro.MaxRetries = -1
	// One dial attempt per command: a refused connection is an outage to report, not to
	// hide behind go-redis's default five attempts.
	ro.DialerRetries = 1
	ro.DialerRetryTimeout = 10 * time.Millisecond
	// RESP2 keeps push notifications (and their background machinery) out of the picture.
	ro.Protocol = 2
	ro.DisableIdentity = true
	ro.ContextTimeoutEnabled = true
	if fo != nil {
		if o.Username != "" {
			fo.Username = o.Username
		}
		if password != "" {
			fo.Password = password
		}
		// ro carries the settings newClient shares between both kinds of client.
		ro.Username, ro.Password, ro.DB, ro.PoolSize = fo.Username, fo.Password, fo.DB, fo.PoolSize
	}
	c = config{
		client:      ro,
		failover:    fo,
		promise:     promise,
		scope:       o.Scope,
		filters:     filters,
		adapterID:   o.AdapterID,
		readRetries: o.ReadRetries,
		maxItem:     o.MaxItemBytes,
		batch:       o.IndexBatch,
		claimIdle:   positive(o.ClaimIdle, DefaultClaimIdle),
		maxLag:      o.MaxIndexLag,
		consumer:    o.ConsumerName,
		requestTO:   req,
	}
	if c.adapterID == "" {
		c.adapterID = AdapterID
	}
	switch {
	case c.readRetries == 0:
		c.readRetries = DefaultReadRetries
	case c.readRetries < 0:
		c.readRetries = 0
	}
	if o.StoreRetry != (memory.RetryPolicy{}) && o.StoreRetry.MaxAttempts != 1 {
		return config{}, memory.NewAdapterError("redis: store retry policy", fmt.Errorf("%d attempts: the Redis adapter never repeats a write (a reply lost after EXEC leaves it applied and indexed)", o.StoreRetry.MaxAttempts))
	}
	def := DefaultReadRetry
	def.MaxAttempts = c.readRetries + 1
	for _, rp := range []struct {
		name string
		in   memory.RetryPolicy
		out  *memory.RetryPolicy
	}{{"retrieve", o.RetrieveRetry, &c.retrieveRetry}, {"search", o.SearchRetry, &c.searchRetry}} {
		*rp.out = def
		if rp.in != (memory.RetryPolicy{}) {
			if err := rp.in.Validate(); err != nil {
				return config{}, memory.NewAdapterError("redis: "+rp.name+" retry policy", err)
			}
			*rp.out = rp.in
		}
	}
	if c.maxItem <= 0 {
		c.maxItem = memory.MaxItemBytes
	}
	if c.batch <= 0 {
		c.batch = DefaultIndexBatch
	}
	if c.maxLag <= 0 {
		c.maxLag = DefaultMaxIndexLag
	}
	if c.consumer == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "adapter"
		}
		c.consumer = host + "-" + randomSuffix()
	}
	c.now = o.Now
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("longer than %d bytes", limit)
	}
	return b, nil
}

// newClient is the one place a go-redis client of the adapter is made (the store's, its
// indexer's, a purge's): a plain client of one server, or, for a redis-sentinel:// URL, a
// failover client that asks the sentinels for the primary and follows it when they
// promote another. Both carry the same timeouts, retry and protocol settings. A positive
// poolSize overrides the configured pool size; onConnect, when not nil, runs on every new
// connection (the store's version pin).
func newClient(c config, poolSize int, onConnect func(context.Context, *goredis.Conn) error) *goredis.Client {
	r := c.client
	if c.failover == nil {
		o := *r
		if poolSize > 0 {
			o.PoolSize = poolSize
		}
		if onConnect != nil {
			o.OnConnect = onConnect
		}
		return goredis.NewClient(&o)
	}
	fo := *c.failover
	fo.Username, fo.Password = r.Username, r.Password
	fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout = r.DialTimeout, r.ReadTimeout, r.WriteTimeout
	fo.MaxRetries = r.MaxRetries
	fo.DialerRetries, fo.DialerRetryTimeout = r.DialerRetries, r.DialerRetryTimeout
	fo.Protocol, fo.DisableIdentity, fo.ContextTimeoutEnabled = r.Protocol, r.DisableIdentity, r.ContextTimeoutEnabled
	fo.PoolSize = r.PoolSize
	if poolSize > 0 {
		fo.PoolSize = poolSize
	}
	if onConnect != nil {
		fo.OnConnect = onConnect
	}
	return goredis.NewFailoverClient(&fo)
}
