package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/postgres/postgresdeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterID is the default implementation id published in the manifest.
const AdapterID = "postgres"

// DefaultSchema is the schema holding the adapter's tables when Options.Schema is empty.
const DefaultSchema = "memory_adapter"

// Defaults. A memory call is a single indexed statement that finishes in milliseconds on a
// healthy server, so five seconds means the server or the network is in trouble and the
// caller should see MemoryAdapterUnavailable. Connecting gets the same bound: a TCP or TLS
// handshake that takes longer is a network fault, not load.
const (
	DefaultRequestTimeout = postgresdeploy.RequestTimeout
	DefaultConnectTimeout = postgresdeploy.ConnectTimeout
	DefaultMaxConns       = 8
	kindMemoryItem        = "memory_item"
)

// DefaultRetry is each call's retry policy when Options leave it unset: one retry after a
// pause of 50 to 100 ms (the jitter keeps many adapters reconnecting after a restart from
// stampeding). Whatever the policy, a call is repeated only when pgx reports that nothing
// reached the server, the one case where a retry cannot apply a statement twice.
var DefaultRetry = postgresdeploy.Retry

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Options configure Open.
type Options struct {
	// URL is a PostgreSQL connection URL or keyword/value string; it is never logged.
	URL string
	// Scope is the namespace every row of this store carries; required.
	Scope string
	// Schema holds the tables; empty means DefaultSchema. Lower-case identifier only.
	Schema string
	// SupportedFilters is the exact filter key set; nil means memory.DefaultSupportedFilters.
	SupportedFilters []string
	// AdapterID is the manifest's adapter id; empty means AdapterID.
	AdapterID string
	// RequestTimeout bounds each explicit call, including its retries; 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// StoreRetry, RetrieveRetry and SearchRetry are the calls' retry policies; a zero
	// policy means DefaultRetry.
	StoreRetry, RetrieveRetry, SearchRetry memory.RetryPolicy
	// ConnectTimeout bounds establishing one connection; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxConns bounds the pool; 0 means DefaultMaxConns.
	MaxConns int32
	// MaxItemBytes bounds one item's encoded size; 0 means memory.MaxItemBytes.
	MaxItemBytes int
	// Now is the clock that stamps each write's store time, which retention ages from;
	// nil means time.Now.
	Now func() time.Time

	// trace, set only by this package's Harness, sees every statement pgx sends, so the
	// conformance suite can observe the transport.
	trace func(sql string, args []any)
}

// queryTracer forwards pgx's query-start events to a trace function.
type queryTracer struct{ fn func(string, []any) }

func (t queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.fn(d.SQL, d.Args)
	return ctx
}

func (queryTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Store is a memory.ExternalStore over one PostgreSQL database, schema and scope. It is safe
// for concurrent use. The zero value is not usable; call Open.
type Store struct {
	pool     *pgxpool.Pool
	pin      *versionPin
	scope    string
	table    string // quoted schema.memory_items
	schema   string
	manifest memory.Manifest
	timeout  time.Duration
	// retries holds the store, retrieve and search policies, in that order.
	retries  [3]memory.RetryPolicy
	rules    relstore.Rules
	versions relstore.Schema
	// storeSQL and retrieveSQL are Store's and Retrieve's statements, built once (the
	// benchmark's driver arm runs the same text).
	storeSQL, retrieveSQL string
	now                   func() time.Time

	closeOnce sync.Once
}

var (
	_ memory.ExternalStore = (*Store)(nil)
	_ memory.Prober        = (*Store)(nil)
)

// Open connects, checks the server, applies the schema migrations and returns a store for
// opts.Scope. Errors never contain the connection string.
func Open(ctx context.Context, opts Options) (*Store, error) {
	var retries [3]memory.RetryPolicy
	for i, p := range []memory.RetryPolicy{opts.StoreRetry, opts.RetrieveRetry, opts.SearchRetry} {
		if p == (memory.RetryPolicy{}) {
			p = DefaultRetry
		}
		if err := p.Validate(); err != nil {
			return nil, memory.NewAdapterError(fmt.Sprintf("postgres: %s retry policy", [3]string{"store", "retrieve", "search"}[i]), err)
		}
		retries[i] = p
	}
	m, err := relstore.Options{Backend: "postgres", Scope: opts.Scope, AdapterID: opts.AdapterID,
		DefaultAdapterID: AdapterID, SupportedFilters: opts.SupportedFilters}.Manifest()
	if err != nil {
		return nil, err
	}
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaName.MatchString(schema) {
		return nil, memory.NewAdapterError("postgres: options: schema must be a lower-case identifier", nil)
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		// The parse error may quote the string, password included: do not wrap it.
		return nil, memory.NewAdapterError("postgres: options: URL is not a valid PostgreSQL connection string", nil)
	}
	cfg.ConnConfig.ConnectTimeout = orDefault(opts.ConnectTimeout, DefaultConnectTimeout)
	cfg.MaxConns = opts.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.MinConns = 0
	cfg.HealthCheckPeriod = 10 * time.Second
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.ConnConfig.RuntimeParams["application_name"] = "memory-adapter"
	if opts.trace != nil {
		cfg.ConnConfig.Tracer = queryTracer{opts.trace}
	}
	pin := &versionPin{}
	cfg.PrepareConn = pin.prepare
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, memory.NewUnavailable("postgres: create pool", redacted(err))
	}
	s := &Store{
		pool: pool, pin: pin, scope: opts.Scope, schema: schema, manifest: m, versions: schemaOf(schema),
		table:   pgx.Identifier{schema, "memory_items"}.Sanitize(),
		timeout: orDefault(opts.RequestTimeout, DefaultRequestTimeout),
		retries: retries,
		rules:   relstore.Rules{MaxItemBytes: opts.MaxItemBytes, RejectNUL: true},
		now:     opts.Now,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.storeSQL, s.retrieveSQL = storeSQL(s.table), retrieveSQL(s.table)
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// migrations are the schema's versions; %[1]s is the quoted schema. Never edit a released
// migration; append a new one.
var migrations = []string{
	1: `CREATE TABLE %[1]s.memory_items (
		seq         bigint GENERATED ALWAYS AS IDENTITY,
		scope       text NOT NULL,
		id          uuid NOT NULL,
		kind        text NOT NULL DEFAULT 'memory_item',
		created_at  timestamptz NOT NULL,
		metadata    jsonb NOT NULL,
		content     jsonb NOT NULL,
		search_text text NOT NULL,
		tags        text[] NOT NULL,
		PRIMARY KEY (scope, id)
	);
	CREATE INDEX memory_items_scope_seq ON %[1]s.memory_items (scope, seq);
	CREATE INDEX memory_items_tags ON %[1]s.memory_items USING gin (tags);`,
	// jsonb prints numbers expanded (1e131071 becomes 131,072 digits), so a 9 KB item could
	// read back as 131 MB. The exact compact text the adapter was given is kept beside the
	// jsonb, which stays the column filters compare; reads return the text, so a read is never
	// larger than the write. Rows from version 1 have NULL text and read the jsonb.
	2: `ALTER TABLE %[1]s.memory_items ADD COLUMN metadata_text text, ADD COLUMN content_text text;`,
	// A trigram index for the text predicate, which the search states as an escaped LIKE
	// (docs/performance.md). pg_trgm is a trusted extension (PostgreSQL 13+; Debian ships it
	// with the server), so a role with CREATE on the database may install it; where it
	// cannot be installed the migration still succeeds without the index and text searches
	// walk the scope (docs/adapters/postgres.md). The advisory lock serializes CREATE
	// EXTENSION across schemas migrating at once, so the loser of the race sees the winner's
	// extension instead of failing to create it. Filters get their indexes per key at Open
	// (filterIndexes), because the keys are the store's options, not the schema's.
	// The larger statistics target keeps the planner's estimate for LIKE '%text%' stable: it
	// counts matches in the column's histogram, and with the default 101 entries a text on 2 %
	// of items is missing from it one ANALYZE in eight, after which the planner fetched all
	// its matches through the index and sorted them (216 ms at 1M items) instead of reading
	// seq order and stopping at the limit.
	3: `ALTER TABLE %[1]s.memory_items ALTER COLUMN search_text SET STATISTICS 1000;
	DO $mao$
	DECLARE
		ns text;
	BEGIN
		PERFORM pg_advisory_xact_lock(hashtext('memory-adapter-extension:pg_trgm'));
		BEGIN
			CREATE EXTENSION IF NOT EXISTS pg_trgm;
		EXCEPTION WHEN OTHERS THEN
			RAISE NOTICE 'pg_trgm is not available (%%): text searches scan', SQLERRM;
		END;
		SELECT n.nspname INTO ns FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
			WHERE e.extname = 'pg_trgm';
		IF ns IS NOT NULL THEN
			EXECUTE format('CREATE INDEX memory_items_search_trgm ON %[1]s.memory_items USING gin (search_text %%I.gin_trgm_ops)', ns);
		END IF;
	END
	$mao$;`,
	// The write probe's table (Store.writeProbe): one short-lived row per scope, never
	// memory_items, so proving a write is durable touches no user data and no search.
	4: `CREATE TABLE %[1]s.memory_write_probe (scope text PRIMARY KEY, token text NOT NULL);`,
	// The tag index: one (scope, tag hash, seq) entry per distinct tag of a row, kept by a
	// trigger in the statement that writes the row, hence in its transaction, whoever writes
	// it (Store's upsert, COPY, a purge's DELETE). A tag search probes it first and reads at
	// most relstore.TagProbeLimit + 1 entries, then reads only those rows when the tags are
	// that rare (tagCandidates). The GIN index on tags cannot serve that probe: a bitmap scan
	// cannot stop after a bound, and for a tag outside the column's most-common list (an
	// absent or rare tag) the planner assumes a fixed 0.5 % and walks (scope, seq) instead,
	// 1.37 s at 1M items for a tag no item has (docs/performance.md). The hash, not the tag,
	// is indexed because a B-tree entry is limited to about 2.7 KB and a tag may be 4 KB;
	// two tags with one hash only add candidates, and the search's own tags && condition
	// still decides. hashtextextended is the hash PostgreSQL's hash partitioning relies on,
	// stable across versions.
	5: `CREATE TABLE %[1]s.memory_item_tags (
		scope    text NOT NULL,
		tag_hash bigint NOT NULL,
		seq      bigint NOT NULL,
		PRIMARY KEY (scope, tag_hash, seq)
	);
	INSERT INTO %[1]s.memory_item_tags (scope, tag_hash, seq)
		SELECT DISTINCT m.scope, hashtextextended(t, 0), m.seq FROM %[1]s.memory_items AS m, unnest(m.tags) AS t
		WHERE t IS NOT NULL;
	CREATE FUNCTION %[1]s.memory_item_tags_sync() RETURNS trigger LANGUAGE plpgsql AS $mao$
	BEGIN
		IF TG_OP IN ('UPDATE', 'DELETE') THEN
			DELETE FROM %[1]s.memory_item_tags WHERE scope = OLD.scope AND seq = OLD.seq
				AND tag_hash IN (SELECT hashtextextended(t, 0) FROM unnest(OLD.tags) AS t);
		END IF;
		IF TG_OP IN ('UPDATE', 'INSERT') THEN
			INSERT INTO %[1]s.memory_item_tags (scope, tag_hash, seq)
				SELECT DISTINCT NEW.scope, hashtextextended(t, 0), NEW.seq FROM unnest(NEW.tags) AS t
				WHERE t IS NOT NULL
				ON CONFLICT DO NOTHING;
		END IF;
		RETURN NULL;
	END
	$mao$;
	CREATE TRIGGER memory_items_tags_insert AFTER INSERT ON %[1]s.memory_items
		FOR EACH ROW EXECUTE FUNCTION %[1]s.memory_item_tags_sync();
	CREATE TRIGGER memory_items_tags_update AFTER UPDATE OF scope, seq, tags ON %[1]s.memory_items
		FOR EACH ROW WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.scope IS DISTINCT FROM NEW.scope OR OLD.seq IS DISTINCT FROM NEW.seq)
		EXECUTE FUNCTION %[1]s.memory_item_tags_sync();
	CREATE TRIGGER memory_items_tags_delete AFTER DELETE ON %[1]s.memory_items
		FOR EACH ROW EXECUTE FUNCTION %[1]s.memory_item_tags_sync();`,
	// created_at as the client's double, bit for bit (contract.md §3, revised 2026-12): a
	// timestamptz keeps microseconds, so lionagi's time.time() values came back altered.
	// float8 is an IEEE-754 double and pgx moves it in binary, -0.0 included. A row written
	// as a timestamptz becomes the double nearest its microseconds, which is the double a
	// client read from the wire for it before the upgrade. The rewrite holds the table's
	// lock for its duration (seconds per million rows), once.
	6: `ALTER TABLE %[1]s.memory_items ALTER COLUMN created_at TYPE double precision
		USING extract(epoch FROM created_at)::double precision;`,
	// The text index (issue 44): a sampled suffix index in relstore's shape (TextGramStride
	// 4, TextGramBytes 12, TextIndexBytes 2048, spelled out below). search_text's UTF-8
	// bytes get one (scope, gram, seq) entry at every 4th byte (1, 5, 9, ... up to the last
	// with three bytes left), gram being the 12 bytes from there, so a B-tree range finds
	// every sampled position where a byte string starts. A needle of at least 6 bytes that
	// occurs in a row starts, at one of its first 4 byte offsets, on a sampled position, so
	// the union of those offsets' prefix ranges holds every row containing it
	// (relstore.TextRanges, textCandidates). Unlike pg_trgm's trigram sets it keeps the
	// bytes' order: "lorem item" on rows that all hold "lorem" and "item" (every trigram of
	// it in every row) is an empty range, and a rare needle reads its few entries instead of
	// intersecting common trigrams' posting lists of the whole scope (0.6-0.8 s and 33 ms
	// at 1M items before). Bytes, not characters: a byte offset is found in constant time
	// (substr counts characters from the start, quadratic in a long text), and bytea
	// compares as bytes whatever the collation; no UTF-8 byte is 0xff, so gram < prefix ||
	// 0xff bounds a range. A text longer than 2048 bytes gets no entries (a 1 MiB text would
	// get 250,000), only an entry in the partial index memory_items_long_text, and every
	// probe reads those rows too, so the index stays exact and a store writes at most 512
	// entries. Kept by triggers in the statement that writes the row, like the tag index;
	// backfilled here.
	7: `CREATE TABLE %[1]s.memory_item_text (
		scope text NOT NULL,
		gram  bytea NOT NULL,
		seq   bigint NOT NULL,
		PRIMARY KEY (scope, gram, seq)
	);
	CREATE INDEX memory_items_long_text ON %[1]s.memory_items (scope, seq) WHERE octet_length(search_text) > 2048;
	CREATE FUNCTION %[1]s.memory_item_text_grams(t text) RETURNS SETOF bytea
		LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $mao$
		SELECT DISTINCT substring(x.b FROM p FOR 12)
		FROM (SELECT convert_to(t, 'UTF8') AS b) AS x, generate_series(1, octet_length(x.b) - 2, 4) AS p
		WHERE octet_length(x.b) <= 2048
	$mao$;
	INSERT INTO %[1]s.memory_item_text (scope, gram, seq)
		SELECT m.scope, g, m.seq FROM %[1]s.memory_items AS m, %[1]s.memory_item_text_grams(m.search_text) AS g;
	CREATE FUNCTION %[1]s.memory_item_text_sync() RETURNS trigger LANGUAGE plpgsql AS $mao$
	BEGIN
		IF TG_OP IN ('UPDATE', 'DELETE') THEN
			DELETE FROM %[1]s.memory_item_text WHERE scope = OLD.scope AND seq = OLD.seq
				AND gram IN (SELECT %[1]s.memory_item_text_grams(OLD.search_text));
		END IF;
		IF TG_OP IN ('UPDATE', 'INSERT') THEN
			INSERT INTO %[1]s.memory_item_text (scope, gram, seq)
				SELECT NEW.scope, g, NEW.seq FROM %[1]s.memory_item_text_grams(NEW.search_text) AS g
				ON CONFLICT DO NOTHING;
		END IF;
		RETURN NULL;
	END
	$mao$;
	CREATE TRIGGER memory_items_text_insert AFTER INSERT ON %[1]s.memory_items
		FOR EACH ROW EXECUTE FUNCTION %[1]s.memory_item_text_sync();
	CREATE TRIGGER memory_items_text_update AFTER UPDATE OF scope, seq, search_text ON %[1]s.memory_items
		FOR EACH ROW WHEN (OLD.search_text IS DISTINCT FROM NEW.search_text OR OLD.scope IS DISTINCT FROM NEW.scope OR OLD.seq IS DISTINCT FROM NEW.seq)
		EXECUTE FUNCTION %[1]s.memory_item_text_sync();
	CREATE TRIGGER memory_items_text_delete AFTER DELETE ON %[1]s.memory_items
		FOR EACH ROW EXECUTE FUNCTION %[1]s.memory_item_text_sync();`,
	// The text index's trigger with the grams computed in its own statements rather than by
	// calling memory_item_text_grams: measured row by row (an INSERT ... SELECT firing the
	// trigger, load average 22), 0.81 ms a row through the function, STRICT or not, against
	// 0.53 ms inline. ON CONFLICT DO NOTHING absorbs a gram repeated within one text, as
	// DISTINCT did; the entries are the same.
	8: `CREATE OR REPLACE FUNCTION %[1]s.memory_item_text_sync() RETURNS trigger LANGUAGE plpgsql AS $mao$
	BEGIN
		IF TG_OP IN ('UPDATE', 'DELETE') THEN
			DELETE FROM %[1]s.memory_item_text WHERE scope = OLD.scope AND seq = OLD.seq
				AND gram IN (SELECT substring(x.b FROM p FOR 12)
					FROM (SELECT convert_to(OLD.search_text, 'UTF8') AS b) AS x, generate_series(1, octet_length(x.b) - 2, 4) AS p
					WHERE octet_length(x.b) <= 2048);
		END IF;
		IF TG_OP IN ('UPDATE', 'INSERT') THEN
			INSERT INTO %[1]s.memory_item_text (scope, gram, seq)
				SELECT NEW.scope, substring(x.b FROM p FOR 12), NEW.seq
				FROM (SELECT convert_to(NEW.search_text, 'UTF8') AS b) AS x, generate_series(1, octet_length(x.b) - 2, 4) AS p
				WHERE octet_length(x.b) <= 2048
				ON CONFLICT DO NOTHING;
		END IF;
		RETURN NULL;
	END
	$mao$;`,
	// Retention and quotas (issue 46): when the adapter stored the row, by its own clock in
	// Unix microseconds, and the item's size as memory.ItemSize counts it. Rows of earlier
	// versions age from this migration (nothing says when they were stored, and none may be
	// removed before its time; now() is stable, so the default is evaluated once, without a
	// rewrite) and are sized by their stored texts, which rewrites the table once. The
	// partial index serves the retention sweep (oldest first, only the rows it removes) and
	// the usage count (an index-only count and sum, never the rows).
	9: `ALTER TABLE %[1]s.memory_items
		ADD COLUMN stored_at_us bigint NOT NULL DEFAULT (extract(epoch FROM now()) * 1000000)::bigint,
		ADD COLUMN size_bytes bigint;
	UPDATE %[1]s.memory_items SET size_bytes = octet_length(coalesce(content_text, content::text))
		+ octet_length(coalesce(metadata_text, metadata::text)) + octet_length(array_to_string(tags, '')) + 3 * cardinality(tags);
	ALTER TABLE %[1]s.memory_items ALTER COLUMN size_bytes SET DEFAULT 0, ALTER COLUMN size_bytes SET NOT NULL;
	CREATE INDEX memory_items_retention ON %[1]s.memory_items (scope, stored_at_us) INCLUDE (size_bytes)
		WHERE kind = 'memory_item';`,
}

// SchemaVersion is the schema version this build writes and expects.
var SchemaVersion = len(migrations) - 1

// schemaOf is the versioned schema inside one PostgreSQL schema, its ledger in
// <schema>.mao_schema_migrations.
func schemaOf(name string) relstore.Schema {
	q := pgx.Identifier{name}.Sanitize()
	s := relstore.Schema{
		Backend:       "postgres",
		Ledger:        q + ".mao_schema_migrations",
		LedgerColumns: "version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now()",
		Record: func(v int) (string, []any) {
			return `INSERT INTO ` + q + `.mao_schema_migrations (version) VALUES ($1)`, []any{v}
		},
		Migrations: make([]string, len(migrations)),
	}
	for v := 1; v < len(migrations); v++ {
		s.Migrations[v] = fmt.Sprintf(migrations[v], q)
	}
	return s
}

// pgConn is the relstore.Conn of a pgx transaction or pool.
type pgConn struct {
	c interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (c pgConn) Exec(ctx context.Context, query string, args ...any) error {
	_, err := c.c.Exec(ctx, query, args...)
	return err
}

func (c pgConn) QueryInt(ctx context.Context, query string, args ...any) (int, error) {
	var v int
	err := c.c.QueryRow(ctx, query, args...).Scan(&v)
	return v, err
}

func (s *Store) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var enc string
	if err := s.pool.QueryRow(ctx, `SHOW server_encoding`).Scan(&enc); err != nil {
		return classify("connect", err)
	}
	if enc != "UTF8" {
		return memory.NewAdapterError("postgres: server_encoding is "+enc+"; full fidelity needs UTF8", nil)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialize concurrent first uses of one schema across processes.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('memory-adapter-migrate:' || $1))`, s.schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return err
		}
		if err := s.versions.Migrate(ctx, pgConn{tx}); err != nil {
			return err
		}
		return s.filterIndexes(ctx, tx)
	})
	if err != nil {
		return classify("migrate", err)
	}
	return nil
}

// filterIndexes makes sure every supported filter key has a B-tree index on
// (scope, jsonb_hash(metadata -> 'key'), seq), inside the migration transaction and its
// lock. A filter search then finds its rows in insertion order, so a first page reads about
// limit rows however many match and however large the scope is, and ANALYZE keeps
// statistics on the expression, so the planner knows how selective each value is. The
// hash, not the value, is indexed: a B-tree entry is limited to about 2.7 KB and metadata
// values are not, so indexing the value would refuse stores. The DDL text is built by the
// server's format() (%I and %L quote the name and the key); a key PostgreSQL cannot hold
// (U+0000, invalid UTF-8) gets no index, and searches on it walk the scope. Each key's index
// costs one more index update per store, and building it on an existing large table holds
// writes to it for the build (seconds per million rows) once, at the first Open with the key.
//
// On PostgreSQL 14 and later each key also gets extended statistics (functional
// dependencies and most common values) over the value and its hash. Without them the
// planner multiplies the two equalities' selectivities as if independent, and with the
// exact equality's default of 0.5 % it believed a filter matching 10 % of a scope matched
// 0.05 %, so it fetched every match through a bitmap and sorted them (O(matches)) instead
// of reading the index in order and stopping at the limit (docs/performance.md).
func (s *Store) filterIndexes(ctx context.Context, tx pgx.Tx) error {
	var version int
	if err := tx.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return err
	}
	for _, k := range s.manifest.SupportedFilters {
		if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
			continue
		}
		sum := sha256.Sum256([]byte(k))
		name := "memory_items_f_" + hex.EncodeToString(sum[:8])
		// Each object is looked up first and created only when missing, so an Open of a
		// schema that has them issues no DDL (CREATE INDEX takes a lock that blocks writes
		// and needs the table's owner, even with IF NOT EXISTS). All queries take
		// $1 = object name, $2 = key, $3 = schema.
		type object struct{ exists, ddl string }
		objects := []object{{
			exists: `SELECT to_regclass(format('%I.%I', $3::text, $1::text)) IS NOT NULL AND $2::text IS NOT NULL`,
			ddl:    `SELECT format('CREATE INDEX IF NOT EXISTS %I ON ` + s.table + ` (scope, jsonb_hash(metadata -> %L), seq)', $1::text, $2::text, $3::text)`,
		}}
		if version >= 140000 {
			objects = append(objects, object{
				exists: `SELECT EXISTS (SELECT 1 FROM pg_statistic_ext e JOIN pg_namespace n ON n.oid = e.stxnamespace
					WHERE n.nspname = $3::text AND e.stxname = $1::text || '_stats') AND $2::text IS NOT NULL`,
				ddl: `SELECT format('CREATE STATISTICS IF NOT EXISTS %I.%I (dependencies, mcv) ON (metadata -> %L), jsonb_hash(metadata -> %L) FROM ` + s.table + `', $3::text, $1::text || '_stats', $2::text, $2::text)`,
			})
		}
		for _, o := range objects {
			var exists bool
			if err := tx.QueryRow(ctx, o.exists, name, k, s.schema).Scan(&exists); err != nil {
				return err
			}
			if exists {
				continue
			}
			var ddl string
			if err := tx.QueryRow(ctx, o.ddl, name, k, s.schema).Scan(&ddl); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, ddl); err != nil {
				return err
			}
		}
	}
	return nil
}

// Manifest implements memory.ExternalStore; it never changes for the store's lifetime.
func (s *Store) Manifest() memory.Manifest { return s.manifest }

// Scope returns the namespace fixed at construction.
func (s *Store) Scope() string { return s.scope }

// Close closes the pool, waiting for connections in use to be released. It is idempotent;
// calls after Close fail with MemoryAdapterUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// Indexes of Store.retries.
const (
	opStore = iota
	opRetrieve
	opSearch
)

// retry runs fn, and again after the policy's pause while attempts remain and the failure
// happened before anything reached the server (pgconn.SafeToRetry), which is the only case
// where a retry cannot apply a statement twice.
func (s *Store) retry(ctx context.Context, op int, fn func(context.Context) error) error {
	p := s.retries[op]
	err := fn(ctx)
	for n := 0; n+1 < p.MaxAttempts; n++ {
		if err == nil || !pgconn.SafeToRetry(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(p.Pause(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = fn(ctx)
	}
	return err
}

// Store writes item under its id. Storing an existing id replaces the item in place and keeps
// its original search position, as the reference store does, and restarts its retention age
// (the item is stored anew). An id held by a non-memory record in this scope is refused,
// never overwritten.
func (s *Store) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	p, err := relstore.Prepare(item, s.rules)
	if err != nil {
		return uuid.Nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	stored := s.now()
	var n int64
	err = s.retry(ctx, opStore, func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, s.storeSQL, storeArgs(s.scope, p, stored)...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return uuid.Nil, s.failed("store", err)
	}
	if n == 0 {
		return uuid.Nil, relstore.NotWritten()
	}
	return p.ID, nil
}

// storeSQL is Store's upsert into table, its arguments storeArgs. The metadata and content
// texts are each sent once, as text, and cast to jsonb on the server for the columns
// filters compare: sent twice, as the jsonb and the exact text (migration 2), they were
// two more parameters to encode and their bytes twice on the wire.
func storeSQL(table string) string {
	return `INSERT INTO ` + table + `
		(scope, id, kind, created_at, metadata, content, search_text, tags, metadata_text, content_text, stored_at_us, size_bytes)
		VALUES ($1, $2, 'memory_item', $3, $4::text::jsonb, $5::text::jsonb, $6, $7, $4::text, $5::text, $8, $9)
		ON CONFLICT (scope, id) DO UPDATE SET
			created_at = excluded.created_at, metadata = excluded.metadata,
			content = excluded.content, search_text = excluded.search_text, tags = excluded.tags,
			metadata_text = excluded.metadata_text, content_text = excluded.content_text,
			stored_at_us = excluded.stored_at_us, size_bytes = excluded.size_bytes
		WHERE memory_items.kind = 'memory_item'`
}

// storeArgs are storeSQL's arguments for p in scope, stored at storedAt.
func storeArgs(scope string, p relstore.Prepared, storedAt time.Time) []any {
	return []any{scope, p.ID, p.CreatedAt, string(p.Metadata), string(p.Content), p.SearchText, p.Tags, storedAt.UnixMicro(), p.Size}
}

// retrieveSQL is Retrieve's statement over table: $1 the scope, $2 the id.
func retrieveSQL(table string) string {
	return `SELECT kind, created_at, ` + exactColumns + `, tags FROM ` + table + ` WHERE scope = $1 AND id = $2`
}

// Retrieve reads the item with id in this scope; an unknown id or a record of another kind is
// (nil, nil).
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		found bool
		kind  string
		r     row
	)
	err := s.retry(ctx, opRetrieve, func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, s.retrieveSQL, s.scope, id).
			Scan(&kind, &r.createdAt, &r.metadata, &r.content, &r.tags)
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return nil, s.failed("retrieve", err)
	}
	if !found || kind != kindMemoryItem {
		return nil, nil
	}
	r.id = id
	it, err := r.item()
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// exactColumns reads metadata and content as the text they were written as (migration 2),
// never as jsonb's expanded rendering, which keeps reads within memory.WithinAmplification.
const exactColumns = `COALESCE(metadata_text, metadata::text), COALESCE(content_text, content::text)`

type row struct {
	id        uuid.UUID
	createdAt float64
	metadata  string
	content   string
	tags      []string
}

func (r row) item() (memory.Item, error) {
	// Written by this adapter it is always in range; a NaN another writer put there is not
	// a time.
	if !memory.TimestampInRange(r.createdAt) {
		return memory.Item{}, memory.NewAdapterError("decode stored created_at: out of range (years 1 to 9999)", nil)
	}
	meta, err := relstore.DecodeMetadata(r.metadata)
	if err != nil {
		return memory.Item{}, err
	}
	it := memory.Item{ID: r.id, CreatedAt: r.createdAt, Metadata: meta, Content: json.RawMessage(r.content), Tags: r.tags}
	if it.Tags == nil {
		it.Tags = []string{}
	}
	return it, nil
}

// Search returns items of this scope matching q in insertion order. Filters are checked
// against the manifest before any I/O; a zero limit, or a predicate no storable value can
// satisfy (U+0000 or invalid UTF-8 in it), returns an empty list without I/O.
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	out := []memory.Item{}
	if run, err := relstore.CheckSearch(s.manifest, q); !run {
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	if _, _, possible := s.buildSearch(q, nil, 0); !possible {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.retry(ctx, opSearch, func(ctx context.Context) error {
		out = out[:0]
		return s.searchPlan(ctx, s.pool, q, func(ctx context.Context, q memory.Query, seqs []int64, after int64) (int, error) {
			n := len(out)
			var err error
			out, err = s.searchRows(ctx, q, seqs, after, out)
			return len(out) - n, err
		})
	})
	if err != nil {
		return nil, s.failed("search", err)
	}
	return out, nil
}

// searchRowsFunc runs one statement of a search (buildSearch's for q, seqs and after) and
// says how many items it answered.
type searchRowsFunc func(ctx context.Context, q memory.Query, seqs []int64, after int64) (int, error)

// searchPlan sends a search's statements in order through rows: the index probes
// (candidates), then q's statement over the candidates a few at a time, and, when the
// candidates are a common tag's first entries only, the walk of the rows after them. The
// adapter and the benchmark's driver arm both run it, so the two send the same statements.
func (s *Store) searchPlan(ctx context.Context, db querier, q memory.Query, rows searchRowsFunc) error {
	c, err := s.candidates(ctx, db, q)
	if err != nil {
		return err
	}
	if c.seqs == nil {
		_, err := rows(ctx, q, nil, 0)
		return err
	}
	// The candidates in seq order, a few at a time: a chunk's hits all come before the
	// next chunk's, and the first chunk usually fills the limit, so a tag or text on a
	// few hundred items reads tens of rows rather than all of them (reading 1,000
	// scattered rows and sorting them took 8 ms at 100k items, walking seq order 1 ms).
	got := 0
	size := firstChunk(q.Limit, len(c.seqs))
	for start := 0; start < len(c.seqs) && got < q.Limit; {
		end := min(start+size, len(c.seqs))
		rest := q
		rest.Limit = q.Limit - got
		n, err := rows(ctx, rest, c.seqs[start:end], 0)
		got += n
		if err != nil {
			return err
		}
		start, size = end, size*4
	}
	if got < q.Limit && c.upTo > 0 {
		// Every row up to upTo that can match was a candidate; the rest of the scope is
		// walked in seq order from there, as a common tag's search always was.
		rest := q
		rest.Limit = q.Limit - got
		_, err := rows(ctx, rest, nil, c.upTo)
		return err
	}
	return nil
}

// firstChunk is how many of n tag candidates Search passes to its first statement for a
// query with this limit: twice the limit, at least 64, at most n.
func firstChunk(limit, n int) int { return min(n, max(64, 2*min(limit, n))) }

// searchRows runs q's statement (buildSearch, restricted to seqs when not nil and to the
// rows after the seq after when it is positive) and appends its items to out.
func (s *Store) searchRows(ctx context.Context, q memory.Query, seqs []int64, after int64, out []memory.Item) ([]memory.Item, error) {
	sqlText, args, _ := s.buildSearch(q, seqs, after)
	// An unnamed statement is planned with this call's values every time. A cached
	// prepared statement switches to a generic plan after five runs, and a generic plan
	// cannot know whether a tag, filter or text is rare (use its index, then sort) or
	// common (walk seq order and stop at the limit): for a rare text it walked the whole
	// scope, 12 ms instead of 0.2 ms at 100k items (docs/performance.md). The
	// description is still cached, so it is one round trip as before.
	rows, err := s.pool.Query(ctx, sqlText, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.createdAt, &r.metadata, &r.content, &r.tags); err != nil {
			return out, err
		}
		it, err := r.item()
		if err != nil {
			return out, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// tagsTable is the tag index's table (migration 5).
func (s *Store) tagsTable() string { return pgx.Identifier{s.schema, "memory_item_tags"}.Sanitize() }

// storableTags are the query tags a stored item can have: PostgreSQL text holds no U+0000
// and no invalid UTF-8, so other tags match nothing.
func storableTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if utf8.ValidString(t) && strings.IndexByte(t, 0) < 0 {
			out = append(out, t)
		}
	}
	return out
}

// tagProbeSQL is tagCandidates' statement: $1 the scope, $2 the tags, $3 the bound. One
// range of the primary key per tag, each in seq order and cut at the bound, so the plan is an
// index (only) scan that stops, never a bitmap of all of a common tag's entries (a bitmap
// probe of ANY(hashes) cost 5 ms at 1M items for a 1 % tag).
func (s *Store) tagProbeSQL() string {
	return `SELECT x.seq FROM unnest($2::text[]) AS q(t), LATERAL (SELECT seq FROM ` + s.tagsTable() + `
		WHERE scope = $1 AND tag_hash = hashtextextended(q.t, 0) ORDER BY seq LIMIT $3) AS x LIMIT $3`
}

// candidateSet is what the index probes found for a search. seqs nil: they do not narrow
// it, the search walks the scope. Otherwise seqs, in ascending order, are every row that
// may match, up to upTo when it is positive (a common tag's first entries: the search walks
// the rows after upTo once they are read), of the whole scope when it is zero.
type candidateSet struct {
	seqs []int64
	upTo int64
}

// tagCandidates probes the tag index (migration 5) for q's tags: no candidates when the
// query has no tags or several common ones (more than relstore.TagProbeLimit entries: the
// search walks seq order), a prefix for one common tag (its first relstore.TagProbeLimit
// entries in seq order, which are every row up to the last of them that has it: the
// search reads those rows and walks on from there only when they do not fill its limit,
// so a common tag's search reads about the limit's rows at any scope size, not the
// limit x scope / matches that a walk of the scope reads), and otherwise every seq the
// index holds for them in ascending order, an empty non-nil slice when it holds none. The
// probe is an index range per tag hash that stops at the bound; its own statement, because
// a planner cannot pick a plan by a count it learns while running. A store that commits
// between the probe and the search is concurrent with the search, which may then miss it.
func (s *Store) tagCandidates(ctx context.Context, db querier, tags []string) (candidateSet, error) {
	tags = storableTags(tags)
	if len(tags) == 0 {
		return candidateSet{}, nil
	}
	seqs, common, err := probeSeqs(ctx, db, s.tagProbeSQL(), s.scope, tags, relstore.TagProbeLimit+1)
	switch {
	case err != nil || !common:
		return candidateSet{seqs: seqs}, err
	case len(tags) == 1:
		// One tag's range is read in seq order, so its first entries are all of its
		// entries up to the last of them (several tags' ranges are cut as a whole, which
		// says nothing of the later tags').
		seqs = seqs[:relstore.TagProbeLimit]
		return candidateSet{seqs: seqs, upTo: seqs[len(seqs)-1]}, nil
	default:
		return candidateSet{}, nil
	}
}

// querier is what the index probes need of a pool: the adapter's, or the benchmark
// driver's, which runs the adapter's statements.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// probe runs an index probe (sqlText, returning at most relstore.TagProbeLimit + 1 seqs)
// and returns nil when it found more than relstore.TagProbeLimit, otherwise the seqs in
// ascending order without repeats (an item found under two tags or two grams), an empty
// non-nil slice when there are none.
func probe(ctx context.Context, db querier, sqlText string, args ...any) ([]int64, error) {
	seqs, common, err := probeSeqs(ctx, db, sqlText, args...)
	if common {
		return nil, err
	}
	return seqs, err
}

// probeSeqs runs an index probe as probe does and returns what it read, in the order the
// statement gave it, with common set when that was more than relstore.TagProbeLimit seqs;
// otherwise sorted without repeats, an empty non-nil slice when there were none.
func probeSeqs(ctx context.Context, db querier, sqlText string, args ...any) ([]int64, bool, error) {
	rows, err := db.Query(ctx, sqlText, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
	if err != nil {
		return nil, false, err
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, false, err
	}
	if len(seqs) > relstore.TagProbeLimit {
		return seqs, true, nil
	}
	slices.Sort(seqs)
	return append([]int64{}, slices.Compact(seqs)...), false, nil
}

// textTable is the text index's table (migration 7).
func (s *Store) textTable() string { return pgx.Identifier{s.schema, "memory_item_text"}.Sanitize() }

// textProbeSQL is textCandidates' statement: $1 the scope, $2 and $3 the ranges' lower and
// upper bounds, $4 the bound on entries. One range of the primary key per needle offset,
// each cut at the bound, then the rows whose text is too long for the index (their partial
// index, whose predicate the literal must repeat), and the whole cut at the bound, so a
// common needle reads at most relstore.TagProbeLimit + 1 entries before the search walks
// instead.
func (s *Store) textProbeSQL() string {
	return `SELECT x.seq FROM unnest($2::bytea[], $3::bytea[]) AS r(lo, hi), LATERAL (SELECT seq FROM ` + s.textTable() + `
		WHERE scope = $1 AND gram >= r.lo AND gram < r.hi LIMIT $4) AS x
		UNION ALL (SELECT seq FROM ` + s.table + ` WHERE scope = $1 AND octet_length(search_text) > ` + fmt.Sprint(relstore.TextIndexBytes) + ` LIMIT $4)
		LIMIT $4`
}

// textCandidates probes the text index (migration 7) for a query text, as tagCandidates
// does the tag index: nil when there is no text, the index cannot answer for it
// (textRanges) or it is common (more than relstore.TagProbeLimit entries), otherwise
// every seq whose row may contain it in ascending order, none when no row does.
func (s *Store) textCandidates(ctx context.Context, db querier, text *string) ([]int64, error) {
	if text == nil {
		return nil, nil
	}
	lo, hi := relstore.TextRanges(memory.Needle(*text))
	if lo == nil {
		return nil, nil
	}
	return probe(ctx, db, s.textProbeSQL(), s.scope, lo, hi, relstore.TagProbeLimit+1)
}

// candidates probes the tag and the text index for q and returns the rows that may match
// it (both probes' seqs when both answered in full), or none when neither narrows the
// search. An empty tag answer skips the text probe: nothing can match. A common tag's
// prefix gives way to the text's full answer, whose rows the statement still checks for
// the tag.
func (s *Store) candidates(ctx context.Context, db querier, q memory.Query) (candidateSet, error) {
	tags, err := s.tagCandidates(ctx, db, q.Tags)
	if err != nil || (tags.seqs != nil && len(tags.seqs) == 0) {
		return tags, err
	}
	text, err := s.textCandidates(ctx, db, q.Text)
	switch {
	case err != nil:
		return candidateSet{}, err
	case text == nil:
		return tags, nil
	case tags.seqs == nil || tags.upTo > 0:
		return candidateSet{seqs: text}, nil
	}
	both := []int64{}
	for _, seq := range tags.seqs {
		if _, found := slices.BinarySearch(text, seq); found {
			both = append(both, seq)
		}
	}
	return candidateSet{seqs: both}, nil
}

// buildSearch returns the statement and its arguments, or possible=false when a predicate
// can match no stored item. jsonb equality (->) compares numbers as exact numerics and
// objects regardless of key order, which is the contract's JSON equality, so the limit is
// applied in SQL. seqs, when not nil, are the rows candidates found for the query's tags
// or text; the statement then reads only those. after, when positive, restricts it to the
// rows after that seq (a common tag's walk past its prefix).
func (s *Store) buildSearch(q memory.Query, seqs []int64, after int64) (string, []any, bool) {
	var b strings.Builder
	args := []any{s.scope}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	b.WriteString(`SELECT id, created_at, ` + exactColumns + `, tags FROM `)
	if seqs != nil {
		// The few rows the indexes name, looked up in the (scope, seq) index; the tag,
		// text and filter conditions, which still decide, apply to those rows only. OFFSET
		// 0 keeps the planner from pushing them into the lookup: given them beside the
		// seqs it intersected a bitmap of the tag's whole GIN posting list with the
		// seqs' (10,000 entries for a 1 % tag at 1M items, 5.7 ms, where the 64 named rows
		// take 0.3 ms).
		b.WriteString(`(SELECT * FROM ` + s.table + ` WHERE scope = $1 AND seq = ANY (` + arg(seqs) + `::bigint[]) OFFSET 0) AS m
		WHERE kind = 'memory_item'`)
	} else {
		b.WriteString(s.table + ` WHERE scope = $1 AND kind = 'memory_item'`)
	}
	if q.Text != nil {
		needle := memory.Needle(*q.Text)
		if strings.IndexByte(needle, 0) >= 0 {
			return "", nil, false
		}
		if seqs != nil {
			// The rows are named: strpos decides, and the planner is given no trigram
			// index to prefer to the seq lookup (a bitmap of a common trigram's rows is
			// what this path avoids).
			b.WriteString(` AND strpos(search_text, ` + arg(needle) + `) > 0`)
		} else {
			// A LIKE pattern with its three special characters escaped is a literal
			// substring test, as strpos is, and unlike strpos it can use the trigram index
			// (migration 3).
			b.WriteString(` AND search_text LIKE ` + arg("%"+likeEscaper.Replace(needle)+"%"))
		}
	}
	if len(q.Tags) > 0 {
		tags := storableTags(q.Tags)
		if len(tags) == 0 {
			return "", nil, false
		}
		b.WriteString(` AND tags && ` + arg(tags) + `::text[]`)
	}
	if after > 0 {
		b.WriteString(` AND seq > ` + arg(after))
	}
	// Keys in a fixed order, so one query shape has one statement text (pgx caches the
	// statement description by text). The jsonb equality decides; the equality of the
	// values' jsonb_hash is implied by it (jsonb's hash support function hashes equal values
	// alike, 1 and 1.0 included) and, planned with the call's values, is the condition of
	// the key's index (filterIndexes).
	for _, k := range slices.Sorted(maps.Keys(q.Filters)) {
		c, err := relstore.FilterValue(q.Filters[k], s.rules)
		if err != nil || !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
			return "", nil, false
		}
		key, val := arg(k), arg(string(c))
		b.WriteString(` AND metadata -> ` + key + ` = ` + val + `::jsonb AND jsonb_hash(metadata -> ` + key + `) = jsonb_hash(` + val + `::jsonb)`)
	}
	b.WriteString(` ORDER BY seq LIMIT ` + arg(q.Limit))
	return b.String(), args, true
}

// likeEscaper escapes LIKE's wildcards and its escape character (backslash, the default).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Probe reports the server version and checks the encoding, exact jsonb numerics, the
// schema version and that a write is durable (writeProbe).
func (s *Store) Probe(ctx context.Context) (memory.Evidence, error) {
	ctx, cancel := context.WithTimeout(probing(ctx), s.timeout)
	defer cancel()
	ev := memory.Evidence{ObservedAt: time.Now().UTC()}
	var version string
	var num int
	if err := s.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('server_version_num')::int`).Scan(&version, &num); err != nil {
		return ev, s.failed("probe", err)
	}
	ev.ServiceVersion = "PostgreSQL " + version
	ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "server_version_num", OK: num >= 120000,
		Detail: fmt.Sprintf("%d (need >= 120000)", num)})
	var enc string
	err := s.pool.QueryRow(ctx, `SHOW server_encoding`).Scan(&enc)
	ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "server_encoding_utf8", OK: err == nil && enc == "UTF8", Detail: enc})
	var exact bool
	err = s.pool.QueryRow(ctx, `SELECT ('{"a":12345678901234567890123}'::jsonb -> 'a') = '12345678901234567890123.0'::jsonb
		AND ('{"a":12345678901234567890123}'::jsonb -> 'a') <> '12345678901234567890124'::jsonb`).Scan(&exact)
	ev.Probes = append(ev.Probes, memory.ProbeResult{Name: "jsonb_exact_numeric", OK: err == nil && exact})
	ev.Probes = append(ev.Probes, s.versions.Probe(ctx, pgConn{s.pool}))
	ev.Probes = append(ev.Probes, s.writeProbe(ctx))
	return ev, nil
}

// writeProbe is the "write" capability probe: it stores a row of its own in
// memory_write_probe (keyed by probeRowKey, so the replicas of one scope, which probe the
// same server at the same time, never read or remove each other's rows), reads it back and
// removes it, each statement committed on its own. A
// server that has gone read-only (default_transaction_read_only, a hot standby after a
// failover, a full disk, revoked privileges) answers every Store with an error while every
// read probe passes; this is what makes that evidence. Three one-row statements per probe.
func (s *Store) writeProbe(ctx context.Context) memory.ProbeResult {
	table := pgx.Identifier{s.schema, "memory_write_probe"}.Sanitize()
	token := uuid.NewString()
	fail := func(step string, err error) memory.ProbeResult {
		s.dropIfGone(err)
		return memory.ProbeResult{Name: "write", OK: false, Detail: fmt.Sprintf("%s a probe row: %v", step, redacted(err))}
	}
	key := probeRowKey(s.scope, token)
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+table+` (scope, token) VALUES ($1, $2)`, key, token); err != nil {
		return fail("store", err)
	}
	var got string
	if err := s.pool.QueryRow(ctx, `SELECT token FROM `+table+` WHERE scope = $1`, key).Scan(&got); err != nil {
		return fail("read back", err)
	}
	if got != token {
		return memory.ProbeResult{Name: "write", OK: false, Detail: "read back a probe row that is not the one just stored"}
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+table+` WHERE scope = $1`, key); err != nil {
		return fail("remove", err)
	}
	return memory.ProbeResult{Name: "write", OK: true, Detail: "stored, read back and removed a probe row"}
}

// classify maps a driver error to the contract's errors. An error the server itself reported
// (a *pgconn.PgError) is MemoryAdapterError unless its SQLSTATE says the server is shutting
// down, starting, out of resources or the connection broke; anything that is not the server's
// answer (connect failure, broken connection, timeout, closed pool) is
// MemoryAdapterUnavailable, because no verdict about the data was obtained.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, memory.ErrAdapter) {
		return err // already classified (our own decode or validation error)
	}
	err = redacted(err)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),                           // insufficient resources
			strings.HasPrefix(pe.Code, "58"),                           // system error
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown / starting up
			pe.Code == "25006", // read_only_sql_transaction: the server is a standby now
			pe.Code == "57014": // query canceled (statement timeout)
			return memory.NewUnavailable("postgres: "+op, err)
		}
		return memory.NewAdapterError("postgres: "+op, err)
	}
	return memory.NewUnavailable("postgres: "+op, err)
}

// failed is classify for the Store's calls, which also drops the pool's connections when err
// says their server stopped being a primary or is going away (serverGone), so the next call
// connects again through the connection string: behind an HA engine's primary Service, or a
// multi-host string with target_session_attrs=read-write, that reaches the new primary with
// no restart. Without it a connection to a demoted server, which a promotion leaves open and
// healthy, would answer every store with SQLSTATE 25006 for as long as the pool kept it.
func (s *Store) failed(op string, err error) error {
	s.dropIfGone(err)
	return classify(op, err)
}

// dropIfGone resets the pool when serverGone(err): idle connections close now, those in use
// when they are released.
func (s *Store) dropIfGone(err error) {
	if serverGone(err) {
		s.pool.Reset()
	}
}

// serverGone reports whether err says the pool's server cannot take this connection's writes
// any more: it became a standby (25006), it is shutting down or was terminated by an
// administrator (57P01, 57P02), it is not accepting connections yet (57P03), or the
// connection broke under the call (reset, broken pipe, end of stream). The other connections
// of the pool lead to that same server. A statement timeout, a cancelled call or a refused
// new connection is not such a sign: the pool then holds nothing to drop.
func serverGone(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "25006", "57P01", "57P02", "57P03":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// redacted drops a *pgconn.ConnectError's config from the message path; pgx already omits the
// password, but the wrapper keeps the text to host, port and cause.
func redacted(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("connect to server failed: %w", ce.Unwrap())
	}
	return err
}

// probeRowKey is the key of one write probe's row: the scope and the probe's own token, so
// concurrent probes of one scope (several replicas, or a rollout's old and new pods) each
// store, read back and remove their own row. A probe cut short between its store and its
// removal leaves one row that no later probe touches; it is a few dozen bytes.
func probeRowKey(scope, token string) string { return scope + "#write-probe-" + token }
