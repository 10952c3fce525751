package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	goredis "github.com/redis/go-redis/v9"
)

// SentinelScheme is the connection form of a Sentinel-managed Redis:
//
//	redis-sentinel://[user[:password]@]host1[:port],host2[:port],.../[db]?master_name=NAME
//
// The user and password are the data nodes' (what a redis:// URL carries); the sentinels'
// own credentials, when they have any, are the sentinel_username and sentinel_password
// parameters. A host without a port means 26379, Sentinel's port.
const SentinelScheme = "redis-sentinel"

// DefaultSentinelPort is the port a sentinel host without one is dialled on.
const DefaultSentinelPort = "26379"

// DefaultWaitTimeout is how long a store waits for its replicas when min_replicas is set
// and wait_timeout is not: a replica on the same network acknowledges in about a
// millisecond, so half a second is only spent when one is missing or far behind.
const DefaultWaitTimeout = 500 * time.Millisecond

const (
	maxSentinels    = 16
	maxMinReplicas  = 16
	maxMasterName   = 256
	maxSentinelPool = 256
)

// replicaPromise is "acknowledged means replicated": every store waits (WAIT) for
// minReplicas replicas for at most timeout, on the connection that wrote.
type replicaPromise struct {
	minReplicas int
	timeout     time.Duration
}

// splitPromise removes the adapter's own parameters (min_replicas, wait_timeout) from the
// query of a redis:// or redis-sentinel:// URL, so that the rest parses as go-redis or the
// Sentinel parser expects. Errors never quote the URL: it may hold a password.
func splitPromise(raw string) (string, replicaPromise, error) {
	var p replicaPromise
	if strings.Contains(raw, "#") {
		// A '#' would end the URL; in a password it must be escaped (%23).
		return "", p, errors.New("url: a fragment (#) is not allowed")
	}
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw, p, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", p, errors.New("url: the query is not valid")
	}
	if vs, ok := q["min_replicas"]; ok {
		n, err := strconv.Atoi(vs[len(vs)-1])
		if err != nil || n < 0 || n > maxMinReplicas {
			return "", p, fmt.Errorf("url: min_replicas must be an integer from 0 to %d", maxMinReplicas)
		}
		p.minReplicas = n
		delete(q, "min_replicas")
	}
	if vs, ok := q["wait_timeout"]; ok {
		d, err := time.ParseDuration(vs[len(vs)-1])
		if err != nil || d < time.Millisecond {
			return "", p, errors.New("url: wait_timeout must be a duration of 1ms or more, such as 500ms")
		}
		p.timeout = d
		delete(q, "wait_timeout")
	}
	if len(q) == 0 {
		return base, p, nil
	}
	return base + "?" + q.Encode(), p, nil
}

// sentinelURL is a redis-sentinel:// URL split into its parts: net/url cannot parse a host
// list ("h1:26379,h2:26379" reads as a bad port).
type sentinelURL struct {
	userinfo string // before the last '@' of the authority, still escaped
	hosts    []string
	path     string
	query    string
}

func isSentinelURL(raw string) bool {
	return strings.HasPrefix(strings.ToLower(raw), SentinelScheme+"://")
}

func splitSentinelURL(raw string) (sentinelURL, error) {
	var u sentinelURL
	if !isSentinelURL(raw) {
		return u, errors.New("url: not a " + SentinelScheme + ":// URL")
	}
	rest := raw[len(SentinelScheme)+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	rest = rest[end:]
	if strings.HasPrefix(rest, "#") || strings.Contains(rest, "#") {
		return u, errors.New("url: a fragment (#) is not allowed")
	}
	u.path, u.query, _ = strings.Cut(rest, "?")
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		u.userinfo, authority = authority[:at], authority[at+1:]
	}
	if authority == "" {
		return u, errors.New("url: no sentinel host")
	}
	for h := range strings.SplitSeq(authority, ",") {
		addr, err := sentinelAddr(h)
		if err != nil {
			return u, err
		}
		u.hosts = append(u.hosts, addr)
	}
	if len(u.hosts) > maxSentinels {
		return u, fmt.Errorf("url: %d sentinel hosts; at most %d", len(u.hosts), maxSentinels)
	}
	return u, nil
}

// sentinelAddr validates one host[:port] of the list and adds the default port.
func sentinelAddr(h string) (string, error) {
	if h == "" {
		return "", errors.New("url: an empty sentinel host in the list")
	}
	host, port := h, DefaultSentinelPort
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			host, port = hh, pp
		} else if !strings.HasSuffix(h, "]") {
			return "", fmt.Errorf("url: sentinel host %q is not host[:port]", h)
		} else {
			host = strings.Trim(h, "[]")
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("url: sentinel host %q has an invalid port", h)
	}
	if host == "" || len(host) > 253 || strings.ContainsFunc(host, func(r rune) bool {
		return unicode.IsSpace(r) || r == '/' || r == '@' || r == '%' || r > unicode.MaxASCII
	}) {
		return "", fmt.Errorf("url: sentinel host %q is not a host name or address", h)
	}
	return net.JoinHostPort(host, port), nil
}

// join puts the URL back together from its parts.
func (u sentinelURL) join() string {
	var b strings.Builder
	b.WriteString(SentinelScheme + "://")
	if u.userinfo != "" {
		b.WriteString(u.userinfo + "@")
	}
	b.WriteString(strings.Join(u.hosts, ","))
	b.WriteString(u.path)
	if u.query != "" {
		b.WriteString("?" + u.query)
	}
	return b.String()
}

// parseSentinelURL turns a redis-sentinel:// URL (the adapter's parameters already removed
// by splitPromise) into go-redis's failover options. Unknown parameters are refused, so a
// misspelt one is not silently ignored. Errors never quote the password.
func parseSentinelURL(raw string) (*goredis.FailoverOptions, error) {
	u, err := splitSentinelURL(raw)
	if err != nil {
		return nil, err
	}
	// The user information, path and query parse as any URL's once the host list is
	// replaced by one placeholder host.
	pu, err := url.Parse("redis://" + u.userinfoAt() + "sentinels" + u.path + queryPart(u.query))
	if err != nil {
		return nil, errors.New("url: the user, path or query is not valid")
	}
	fo := &goredis.FailoverOptions{SentinelAddrs: u.hosts}
	if pu.User != nil {
		fo.Username = pu.User.Username()
		fo.Password, _ = pu.User.Password()
	}
	switch p := strings.Trim(pu.Path, "/"); {
	case p == "":
	default:
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 || db > 15 {
			return nil, errors.New("url: the path must be a database number from 0 to 15")
		}
		fo.DB = db
	}
	q := pu.Query()
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "master_name":
			if v == "" || len(v) > maxMasterName || strings.ContainsFunc(v, unicode.IsSpace) {
				return nil, fmt.Errorf("url: master_name must be 1 to %d bytes without spaces", maxMasterName)
			}
			fo.MasterName = v
		case "sentinel_username":
			fo.SentinelUsername = v
		case "sentinel_password":
			if len(v) > maxPasswordBytes {
				return nil, fmt.Errorf("url: sentinel_password is longer than %d bytes", maxPasswordBytes)
			}
			fo.SentinelPassword = v
		case "pool_size":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxSentinelPool {
				return nil, fmt.Errorf("url: pool_size must be an integer from 1 to %d", maxSentinelPool)
			}
			fo.PoolSize = n
		default:
			return nil, fmt.Errorf("url: unknown parameter %q (known: master_name, sentinel_username, sentinel_password, pool_size, min_replicas, wait_timeout)", k)
		}
	}
	if fo.MasterName == "" {
		return nil, errors.New("url: master_name is required (the name the sentinels monitor the primary under)")
	}
	return fo, nil
}

func (u sentinelURL) userinfoAt() string {
	if u.userinfo == "" {
		return ""
	}
	return u.userinfo + "@"
}

func queryPart(q string) string {
	if q == "" {
		return ""
	}
	return "?" + q
}

// resolveMaster asks the sentinels which address the primary has now, the first that
// answers deciding. The conformance harness talks to that server directly: its fault
// injection needs one address to proxy.
func resolveMaster(ctx context.Context, fo *goredis.FailoverOptions) (string, error) {
	var errs []error
	for _, addr := range fo.SentinelAddrs {
		sc := goredis.NewSentinelClient(&goredis.Options{
			Addr: addr, Username: fo.SentinelUsername, Password: fo.SentinelPassword,
			DialTimeout: DefaultDialTimeout, ReadTimeout: DefaultRequestTimeout, WriteTimeout: DefaultRequestTimeout,
			Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		})
		hp, err := sc.GetMasterAddrByName(ctx, fo.MasterName).Result()
		_ = sc.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		if err == nil {
			err = errors.New("malformed reply")
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", addr, err))
	}
	return "", fmt.Errorf("no sentinel named the primary of %q: %w", fo.MasterName, errors.Join(errs...))
}
