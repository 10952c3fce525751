package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// Persistence is the server's durability configuration as observed through CONFIG GET
// (falling back to INFO persistence where CONFIG is disabled, as on some managed services).
type Persistence struct {
	// Known is false when neither CONFIG GET nor INFO revealed the settings.
	Known bool `json:"known"`
	// AppendOnly reports whether the append-only file (AOF) is enabled.
	AppendOnly bool `json:"appendonly"`
	// AppendFsync is the AOF fsync policy: "always", "everysec" or "no" (empty if unknown).
	AppendFsync string `json:"appendfsync,omitempty"`
	// Save is the RDB snapshot schedule ("" means snapshots are disabled).
	Save string `json:"save"`
}

// String summarises the settings for evidence and logs.
func (p Persistence) String() string {
	if !p.Known {
		return "unknown (CONFIG and INFO did not reveal it)"
	}
	aof := "off"
	if p.AppendOnly {
		aof = "on, appendfsync " + p.AppendFsync
	}
	save := p.Save
	if save == "" {
		save = "off"
	}
	return fmt.Sprintf("aof %s; rdb save %q", aof, save)
}

// CrashLoss says what a server crash can lose under these settings (docs/adapters/redis.md
// explains each case).
func (p Persistence) CrashLoss() string {
	switch {
	case !p.Known:
		return "unknown: assume every acknowledged write since the last known backup"
	case p.AppendOnly && p.AppendFsync == "always":
		return "none of the acknowledged writes (each is fsynced before the reply), barring disk failure"
	case p.AppendOnly && p.AppendFsync == "everysec":
		return "up to about one second (at most two) of acknowledged writes"
	case p.AppendOnly:
		return "acknowledged writes not yet flushed by the operating system (typically up to 30 seconds)"
	case p.Save != "":
		return "every acknowledged write since the last RDB snapshot (schedule " + strconv.Quote(p.Save) + ")"
	default:
		return "every acknowledged write: nothing is persisted"
	}
}

// Persistence returns the settings observed when the store was opened.
func (s *Store) Persistence() Persistence { return s.openPersistence }

func (s *Store) persistence(ctx context.Context) (Persistence, error) {
	var p Persistence
	cfg, err := s.client.ConfigGet(ctx, "appendonly").Result()
	if err == nil {
		fs, err2 := s.client.ConfigGet(ctx, "appendfsync").Result()
		sv, err3 := s.client.ConfigGet(ctx, "save").Result()
		if err2 == nil && err3 == nil {
			p = Persistence{
				Known:       true,
				AppendOnly:  cfg["appendonly"] == "yes",
				AppendFsync: fs["appendfsync"],
				Save:        sv["save"],
			}
			if !p.AppendOnly {
				p.AppendFsync = ""
			}
			return p, nil
		}
		err = errors.Join(err2, err3)
	}
	if !isServerReply(err) {
		return p, classify("probe persistence", err)
	}
	// CONFIG is renamed or forbidden: INFO still tells whether AOF is on.
	info, err := s.client.Info(ctx, "persistence").Result()
	if err != nil {
		if isServerReply(err) {
			return p, nil
		}
		return p, classify("probe persistence", err)
	}
	if v, ok := infoField(info, "aof_enabled"); ok {
		p.Known = false // the fsync policy and snapshot schedule stay unknown
		p.AppendOnly = v == "1"
	}
	return p, nil
}

func (s *Store) serverVersion(ctx context.Context) (string, error) {
	info, err := s.client.Info(ctx, "server").Result()
	if err != nil {
		return "", classify("probe version", err)
	}
	v, ok := infoField(info, "redis_version")
	if !ok {
		return "", memory.NewAdapterError("probe version: INFO server has no redis_version", nil)
	}
	return v, nil
}

// replication checks that the server is a primary with at least min_replicas replicas
// connected: otherwise every store would wait for them and answer unavailable, which the
// verdict should say before a workload finds out.
func (s *Store) replication(ctx context.Context) (bool, string, error) {
	info, err := s.client.Info(ctx, "replication").Result()
	if err != nil {
		return false, "", classify("probe replication", err)
	}
	role, _ := infoField(info, "role")
	connected, _ := infoField(info, "connected_slaves")
	n, _ := strconv.Atoi(connected)
	want := s.cfg.promise.minReplicas
	detail := fmt.Sprintf("role %s, %d replicas connected; stores wait for %d (min_replicas, wait_timeout %s)", role, n, want, s.cfg.promise.timeout)
	if n > want {
		// Sentinel may promote a replica that had not confirmed a write, or the old primary
		// may keep one replica and acknowledge writes the promotion discards.
		detail += "; fewer than the replicas connected, so a failover may still lose acknowledged writes"
	}
	return role == "master" && n >= want, detail, nil
}

func infoField(info, name string) (string, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && k == name {
			return v, true
		}
	}
	return "", false
}

// atLeast reports whether a dotted version is at least major.minor.
func atLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// IndexStatus is the indexer's progress over the scope's stream.
type IndexStatus struct {
	// Lag counts acknowledged stores whose index entry is not yet applied: entries not yet
	// delivered to the group plus entries delivered but not acknowledged.
	Lag int64
	// Pending counts entries delivered to some consumer and not yet acknowledged.
	Pending int64
	// CaughtUp reports that every entry ever added was delivered and acknowledged, that is
	// every acknowledged store is visible to search.
	CaughtUp bool
}

// IndexStatus reads the consumer group's progress. A scope without a stream (nothing
// stored since it was dropped) is caught up.
func (s *Store) IndexStatus(ctx context.Context) (IndexStatus, error) {
	return indexStatus(ctx, s.client, s.k)
}

func indexStatus(ctx context.Context, c goredis.UniversalClient, k keys) (IndexStatus, error) {
	var st IndexStatus
	info, err := c.XInfoStream(ctx, k.stream()).Result()
	if err != nil {
		if isServerReply(err) && strings.Contains(err.Error(), "no such key") {
			st.CaughtUp = true
			return st, nil
		}
		return st, classify("index status", err)
	}
	groups, err := c.XInfoGroups(ctx, k.stream()).Result()
	if err != nil {
		return st, classify("index status", err)
	}
	var g *goredis.XInfoGroup
	for i := range groups {
		if groups[i].Name == groupName {
			g = &groups[i]
		}
	}
	if g == nil {
		// No group: nothing was ever consumed.
		st.Lag = info.Length
		st.CaughtUp = info.Length == 0 && info.LastGeneratedID == "0-0"
		return st, nil
	}
	st.Pending = g.Pending
	undelivered := g.Lag
	if undelivered < 0 {
		// Redis cannot tell (older server or deleted entries): count them, bounded.
		msgs, err := c.XRangeN(ctx, k.stream(), "("+g.LastDeliveredID, "+", 100_001).Result()
		if err != nil {
			return st, classify("index status", err)
		}
		undelivered = int64(len(msgs))
	}
	st.Lag = undelivered + g.Pending
	st.CaughtUp = g.Pending == 0 && g.LastDeliveredID == info.LastGeneratedID
	return st, nil
}

// WaitIndexed polls until the index has caught up with every acknowledged store or ctx
// ends; it is what a harness's MakeSearchIndexVisible calls.
func (s *Store) WaitIndexed(ctx context.Context) error {
	return waitIndexed(ctx, s.client, s.k)
}

func waitIndexed(ctx context.Context, c goredis.UniversalClient, k keys) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := indexStatus(ctx, c, k)
		if err != nil {
			return err
		}
		if st.CaughtUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return memory.NewUnavailable(fmt.Sprintf("index did not catch up (lag %d, pending %d)", st.Lag, st.Pending), ctx.Err())
		case <-t.C:
		}
	}
}

// Probe implements memory.Prober: the server version, the features the adapter relies on,
// whether the version and persistence settings still match those seen at Open, the
// indexer's health and the index lag. An unreachable server is MemoryAdapterUnavailable.
func (s *Store) Probe(ctx context.Context) (memory.Evidence, error) {
	if err := s.checkOpen("probe"); err != nil {
		return memory.Evidence{}, err
	}
	ctx = probing(ctx)
	ev := memory.Evidence{ObservedAt: time.Now().UTC()}
	version, err := s.serverVersion(ctx)
	if err != nil {
		return ev, err
	}
	s.pin.saw(version)
	ev.ServiceVersion = "Redis " + version
	add := func(name string, ok bool, detail string) {
		ev.Probes = append(ev.Probes, memory.ProbeResult{Name: name, OK: ok, Detail: detail})
	}
	add("redis_6_2", atLeast(version, 6, 2), "server "+version+"; ZUNION, ZINTER and XAUTOCLAIM need 6.2")
	add("version_unchanged", version == s.openVersion, "opened against "+s.openVersion+", now "+version)
	groupErr := s.client.XGroupCreateMkStream(ctx, s.k.stream(), groupName, "0").Err()
	switch {
	case groupErr == nil || strings.HasPrefix(groupErr.Error(), "BUSYGROUP"):
		add("stream_consumer_group", true, "XGROUP CREATE works on the scope's stream")
	case isServerReply(groupErr):
		add("stream_consumer_group", false, groupErr.Error())
	default:
		return ev, classify("probe", groupErr)
	}
	p, err := s.persistence(ctx)
	if err != nil {
		return ev, err
	}
	add("persistence_unchanged", p == s.openPersistence, "opened with "+s.openPersistence.String()+", now "+p.String()+"; a crash loses "+p.CrashLoss())
	if s.cfg.promise.minReplicas > 0 {
		ok, detail, err := s.replication(ctx)
		if err != nil {
			return ev, err
		}
		add("replicas", ok, detail)
	}
	st, err := s.IndexStatus(ctx)
	if err != nil {
		return ev, err
	}
	lag := st.Lag
	ev.IndexLag = &lag
	add("index_lag", lag <= s.cfg.maxLag, fmt.Sprintf("lag %d entries (bound %d), %d pending", lag, s.cfg.maxLag, st.Pending))
	if ierr := s.ix.status(); ierr != nil {
		add("indexer", false, "last indexer round failed: "+ierr.Error())
	} else {
		add("indexer", true, "consumer "+s.cfg.consumer+" running")
	}
	return ev, nil
}
