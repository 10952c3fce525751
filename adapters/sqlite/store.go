package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/sqlite/sqlitedeploy"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// AdapterID is the default implementation id published in the manifest.
const AdapterID = "sqlite"

// Defaults, chosen for a local file: a statement that has not finished in DefaultRequestTimeout
// is waiting on a lock held by a stuck writer or on a failing disk, and the caller is better
// served by MemoryAdapterUnavailable than by an unbounded wait. The busy timeout is shorter, so
// lock contention surfaces as SQLITE_BUSY with its own message before the request deadline.
const (
	DefaultRequestTimeout = sqlitedeploy.RequestTimeout
	DefaultMaxOpenConns   = 8
	kindMemoryItem        = "memory_item"
)

// Options configure Open.
type Options struct {
	// Path is the database file; it and its directory are created if missing.
	Path string
	// Scope is the namespace every row of this store carries; required.
	Scope string
	// SupportedFilters is the exact filter key set; nil means memory.DefaultSupportedFilters.
	SupportedFilters []string
	// AdapterID is the manifest's adapter id; empty means AdapterID.
	AdapterID string
	// RequestTimeout bounds each explicit call; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxItemBytes bounds one item's encoded size; 0 means memory.MaxItemBytes.
	MaxItemBytes int
	// MaxOpenConns bounds the connection pool; 0 means DefaultMaxOpenConns.
	MaxOpenConns int
	// Now is the clock that stamps each write's store time, which retention ages from;
	// nil means time.Now.
	Now func() time.Time

	// trace, set only by this package's Harness, sees every statement an explicit call sends
	// to the database, so the conformance suite can observe the transport.
	trace func(sql string, args []any)
}

// Store is a memory.ExternalStore over one SQLite file and scope. It is safe for concurrent
// use. The zero value is not usable; call Open.
type Store struct {
	db       *sql.DB
	scope    string
	manifest memory.Manifest
	timeout  time.Duration
	rules    relstore.Rules
	maxIdle  int
	trace    func(sql string, args []any)
	now      func() time.Time
	// retrieve is prepared once: a retrieve is one indexed row, and parsing and planning its
	// statement on every call was about a quarter of its cost (docs/performance.md).
	retrieve *sql.Stmt
	// immutable is set when the volume was read-only at Open and the file was opened as
	// immutable (readOnlyVolume): the journal mode its header records, "wal" or "delete".
	immutable string
	// sweepGate keeps the retention sweep's batches and the stores apart (newSweepGate).
	sweepGate *semaphore.Weighted

	closeOnce sync.Once
	closeErr  error
}

var (
	_ memory.ExternalStore = (*Store)(nil)
	_ memory.Prober        = (*Store)(nil)
)

// Open creates or opens the database file, applies the schema migrations and returns a store
// for opts.Scope. Errors never contain item data.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, memory.NewAdapterError("sqlite: options: path is required", nil)
	}
	m, err := relstore.Options{Backend: "sqlite", Scope: opts.Scope, AdapterID: opts.AdapterID,
		DefaultAdapterID: AdapterID, SupportedFilters: opts.SupportedFilters}.Manifest()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, memory.NewAdapterError("sqlite: options: path", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, memory.NewUnavailable("sqlite: create database directory", err)
	}
	// The file is created once here; the pool below opens it read-write without create, so
	// a database file that vanishes later is an error rather than a silently new empty file.
	timeout := opts.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	source, immutable := dsn(abs, "rw", timeout), ""
	if err := migrate(ctx, dsn(abs, "rwc", timeout), m.SupportedFilters); err != nil {
		// A volume already read-only when the instance starts (a pod restarted onto it)
		// refuses the migration's write lock, and after a clean shutdown it holds no -shm
		// file, without which SQLite cannot even read a WAL database there. Such an instance
		// still starts, reading the file as the immutable database it now is, so that its
		// write probe fails and says why (the manifest is invalidated and data calls get the
		// typed unavailable) instead of crash-looping behind a Deployment reason (issue 29).
		if !readOnlyVolume(abs) {
			return nil, err
		}
		source, immutable = readOnlyDSN(abs, timeout), headerJournalMode(abs)
	}
	db, err := sql.Open("sqlite", source)
	if err != nil {
		return nil, memory.NewUnavailable("sqlite: open", err)
	}
	maxOpen := opts.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpenConns
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	s := &Store{
		db: db, scope: opts.Scope, manifest: m, timeout: timeout, maxIdle: maxOpen,
		rules: relstore.Rules{MaxItemBytes: opts.MaxItemBytes}, trace: opts.trace, immutable: immutable,
		now: opts.Now, sweepGate: newSweepGate(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, classify("open", err)
	}
	if s.retrieve, err = db.PrepareContext(pctx, retrieveSQL); err != nil {
		_ = db.Close()
		return nil, classify("open", err)
	}
	return s, nil
}

// dsn builds a modernc.org/sqlite URI: WAL for concurrent readers beside one writer, a busy
// timeout so writers queue instead of failing, and full sync so an acknowledged write
// survives power loss. The busy timeout is four fifths of the request timeout (4 s of the
// default 5 s), so lock contention surfaces as SQLITE_BUSY with its own message before the
// request deadline.
func dsn(abs, mode string, requestTimeout time.Duration) string {
	u := url.URL{Scheme: "file", Path: abs}
	q := url.Values{}
	q.Set("mode", mode)
	q.Set("_busy_timeout", fmt.Sprint((requestTimeout * 4 / 5).Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	u.RawQuery = q.Encode()
	return u.String()
}

// readOnlyVolume reports whether the database file exists on a read-only filesystem with no
// write-ahead log left to replay (a -wal file with frames: reading the file as immutable would
// miss them, so that case keeps failing loudly).
func readOnlyVolume(abs string) bool {
	if _, err := os.Stat(abs); err != nil {
		return false
	}
	if st, err := os.Stat(abs + "-wal"); err == nil && st.Size() > 0 {
		return false
	}
	return errors.Is(unix.Access(filepath.Dir(abs), unix.W_OK), unix.EROFS)
}

// headerJournalMode reads the journal mode a database file's header records: bytes 18 and 19
// (the file format write and read versions) are 2 in WAL mode, 1 otherwise.
func headerJournalMode(abs string) string {
	f, err := os.Open(abs)
	if err != nil {
		return "unknown"
	}
	defer func() { _ = f.Close() }()
	hdr := make([]byte, 20)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return "unknown"
	}
	if hdr[18] == 2 && hdr[19] == 2 {
		return "wal"
	}
	return "delete"
}

// readOnlyDSN opens the file read-only as immutable (no locks, no -shm, no WAL), with no
// journal-mode pragma, which would be a write; every write then fails with SQLITE_READONLY.
func readOnlyDSN(abs string, requestTimeout time.Duration) string {
	u := url.URL{Scheme: "file", Path: abs}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	q.Set("_busy_timeout", fmt.Sprint((requestTimeout * 4 / 5).Milliseconds()))
	u.RawQuery = q.Encode()
	return u.String()
}

// schema is the versioned schema, its ledger in mao_schema_migrations.
var schema = relstore.Schema{
	Backend:       "sqlite",
	Ledger:        "mao_schema_migrations",
	LedgerColumns: "version INTEGER PRIMARY KEY, applied_at_us INTEGER NOT NULL",
	Record: func(v int) (string, []any) {
		return `INSERT INTO mao_schema_migrations (version, applied_at_us) VALUES (?, ?)`, []any{v, time.Now().UnixMicro()}
	},
	Migrations: []string{
		1: `CREATE TABLE memory_items (
		seq           INTEGER PRIMARY KEY AUTOINCREMENT,
		scope         TEXT NOT NULL,
		id            TEXT NOT NULL,
		kind          TEXT NOT NULL DEFAULT 'memory_item',
		created_at_us INTEGER NOT NULL,
		metadata      TEXT NOT NULL,
		content       TEXT NOT NULL,
		search_text   TEXT NOT NULL,
		tags          TEXT NOT NULL,
		UNIQUE (scope, id)
	);
	CREATE INDEX memory_items_scope_seq ON memory_items (scope, seq);`,
		// The tag index: one (scope, tag, seq) row per distinct string tag of a row, so a tag
		// search finds a rare or absent tag without reading the scope (a json_each over every
		// row's tags was 1.16 s at 1M items for a tag no item has; docs/performance.md).
		// Triggers keep it in the statement that writes the row, hence in its transaction,
		// whatever writes it (Store's upsert, a bulk load, a harness's DELETE). The CASE
		// keeps a stored row SQLite's JSON parser refuses from failing its own write; such a
		// row has no tags to find, as json_each in the search raised on it before.
		2: `CREATE TABLE memory_item_tags (
		scope TEXT NOT NULL,
		tag   TEXT NOT NULL,
		seq   INTEGER NOT NULL,
		PRIMARY KEY (scope, tag, seq)
	) WITHOUT ROWID;
	INSERT OR IGNORE INTO memory_item_tags (scope, tag, seq)
		SELECT m.scope, t.value, m.seq FROM memory_items AS m,
			json_each(CASE WHEN json_valid(m.tags) THEN m.tags ELSE '[]' END) AS t
		WHERE t.type = 'text';
	CREATE TRIGGER memory_items_tags_insert AFTER INSERT ON memory_items BEGIN
		INSERT OR IGNORE INTO memory_item_tags (scope, tag, seq)
			SELECT new.scope, value, new.seq FROM json_each(CASE WHEN json_valid(new.tags) THEN new.tags ELSE '[]' END)
			WHERE type = 'text';
	END;
	CREATE TRIGGER memory_items_tags_update AFTER UPDATE OF scope, seq, tags ON memory_items BEGIN
		DELETE FROM memory_item_tags WHERE scope = old.scope AND seq = old.seq AND tag IN
			(SELECT value FROM json_each(CASE WHEN json_valid(old.tags) THEN old.tags ELSE '[]' END) WHERE type = 'text');
		INSERT OR IGNORE INTO memory_item_tags (scope, tag, seq)
			SELECT new.scope, value, new.seq FROM json_each(CASE WHEN json_valid(new.tags) THEN new.tags ELSE '[]' END)
			WHERE type = 'text';
	END;
	CREATE TRIGGER memory_items_tags_delete AFTER DELETE ON memory_items BEGIN
		DELETE FROM memory_item_tags WHERE scope = old.scope AND seq = old.seq AND tag IN
			(SELECT value FROM json_each(CASE WHEN json_valid(old.tags) THEN old.tags ELSE '[]' END) WHERE type = 'text');
	END;`,
		// The text index: FTS5's trigram tokenizer over search_text (already lower-cased by
		// Go), case-sensitive so that it folds nothing itself, contentless with deletes
		// (SQLite 3.43+) so that it stores only the trigrams and a delete needs no old text.
		// A text search probes it with the needle as a phrase of trigrams, which every row
		// containing the needle matches, and instr still decides (textCandidates). Kept by
		// triggers in the writing statement, like the tag index.
		3: `CREATE VIRTUAL TABLE memory_items_text USING fts5(search_text, content='', contentless_delete=1,
		tokenize='trigram case_sensitive 1');
	INSERT INTO memory_items_text (rowid, search_text) SELECT seq, search_text FROM memory_items;
	CREATE TRIGGER memory_items_text_insert AFTER INSERT ON memory_items BEGIN
		INSERT INTO memory_items_text (rowid, search_text) VALUES (new.seq, new.search_text);
	END;
	CREATE TRIGGER memory_items_text_update AFTER UPDATE OF seq, search_text ON memory_items BEGIN
		DELETE FROM memory_items_text WHERE rowid = old.seq;
		INSERT INTO memory_items_text (rowid, search_text) VALUES (new.seq, new.search_text);
	END;
	CREATE TRIGGER memory_items_text_delete AFTER DELETE ON memory_items BEGIN
		DELETE FROM memory_items_text WHERE rowid = old.seq;
	END;`,
		// created_at as the client's double, bit for bit (contract.md §3, revised 2026-12):
		// the text of its shortest form, which parses back to the same double (-0.0
		// included; a REAL column would store -0.0 as the integer 0). Rows written by
		// version 1's integer microseconds become the decimal the wire wrote for them then,
		// so a client reads back exactly the double it read before the upgrade.
		4: `ALTER TABLE memory_items ADD COLUMN created_at TEXT NOT NULL DEFAULT '0.0';
	UPDATE memory_items SET created_at =
		CASE WHEN created_at_us < 0 THEN '-' ELSE '' END || (abs(created_at_us) / 1000000) || '.' ||
		printf('%06d', abs(created_at_us) % 1000000);
	ALTER TABLE memory_items DROP COLUMN created_at_us;`,
		// Retention and quotas (issue 46): when the adapter stored the row, by its own clock
		// in Unix microseconds, and the item's size as memory.ItemSize counts it. Rows of
		// earlier versions age from this migration (nothing says when they were stored, and
		// none may be removed before its time) and are sized by their stored texts. The
		// partial index serves the retention sweep (oldest first, only the rows it removes)
		// and the usage count (an index-only count and sum, never the rows).
		5: `ALTER TABLE memory_items ADD COLUMN stored_at_us INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE memory_items ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
	UPDATE memory_items SET stored_at_us = CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER),
		size_bytes = length(CAST(content AS BLOB)) + length(CAST(metadata AS BLOB)) + length(CAST(tags AS BLOB));
	CREATE INDEX memory_items_retention ON memory_items (scope, stored_at_us, size_bytes)
		WHERE kind = 'memory_item';`,
		// The long-needle text index (issue 44): a sampled suffix index in relstore's shape
		// (TextGramStride 4, TextGramBytes 12, TextIndexBytes 2048, spelled out below), as
		// PostgreSQL's migration 7 builds it. search_text's UTF-8 bytes get one (scope, gram,
		// seq) entry at every 4th byte (1, 5, 9, ... up to the last with three bytes left),
		// gram being the 12 bytes from there, so a primary-key range lists every sampled
		// position where a byte string starts, and a needle of six bytes or more is found
		// through four ranges (relstore.TextRanges, gramProbe). The trigram index answers such
		// a needle too, but by intersecting its trigrams' posting lists across FTS5's
		// segments, which grows with the scope (text-rare took 2.0-2.8 times its 10k time at
		// 1M items); a range of a B-tree does not. A text longer than 2048 bytes gets no
		// entries, only one in the partial index memory_items_long_text that every probe reads
		// too, so a store writes at most 512 entries. SQLite has no series function and
		// triggers no common table expressions, so the sampled positions are the rows of
		// memory_item_gram_offsets, filled once here. Kept by triggers in the statement that
		// writes the row, like the tag index (the update only when the text, scope or seq
		// changed: a replacement that keeps its text writes nothing); backfilled here.
		// DISTINCT, because a text repeats grams and OR IGNORE does not hold inside a
		// trigger fired by Store's upsert, whose own conflict policy (ABORT) overrides it.
		6: `CREATE TABLE memory_item_gram_offsets (pos INTEGER PRIMARY KEY);
	INSERT INTO memory_item_gram_offsets (pos)
		WITH RECURSIVE p(pos) AS (SELECT 1 UNION ALL SELECT pos + 4 FROM p WHERE pos + 4 <= 2046)
		SELECT pos FROM p;
	CREATE TABLE memory_item_grams (
		scope TEXT NOT NULL,
		gram  BLOB NOT NULL,
		seq   INTEGER NOT NULL,
		PRIMARY KEY (scope, gram, seq)
	) WITHOUT ROWID;
	CREATE INDEX memory_items_long_text ON memory_items (scope, seq) WHERE octet_length(search_text) > 2048;
	INSERT OR IGNORE INTO memory_item_grams (scope, gram, seq)
		SELECT DISTINCT m.scope, substr(CAST(m.search_text AS BLOB), o.pos, 12), m.seq
		FROM memory_items AS m, memory_item_gram_offsets AS o
		WHERE octet_length(m.search_text) <= 2048 AND o.pos <= octet_length(m.search_text) - 2;
	CREATE TRIGGER memory_items_grams_insert AFTER INSERT ON memory_items
		WHEN octet_length(new.search_text) <= 2048 BEGIN
		INSERT OR IGNORE INTO memory_item_grams (scope, gram, seq)
			SELECT DISTINCT new.scope, substr(CAST(new.search_text AS BLOB), pos, 12), new.seq
			FROM memory_item_gram_offsets WHERE pos <= octet_length(new.search_text) - 2;
	END;
	CREATE TRIGGER memory_items_grams_update AFTER UPDATE OF scope, seq, search_text ON memory_items
		WHEN old.search_text IS NOT new.search_text OR old.scope IS NOT new.scope OR old.seq IS NOT new.seq BEGIN
		DELETE FROM memory_item_grams WHERE octet_length(old.search_text) <= 2048
			AND scope = old.scope AND seq = old.seq AND gram IN
			(SELECT substr(CAST(old.search_text AS BLOB), pos, 12) FROM memory_item_gram_offsets
				WHERE pos <= octet_length(old.search_text) - 2);
		INSERT OR IGNORE INTO memory_item_grams (scope, gram, seq)
			SELECT DISTINCT new.scope, substr(CAST(new.search_text AS BLOB), pos, 12), new.seq
			FROM memory_item_gram_offsets
			WHERE octet_length(new.search_text) <= 2048 AND pos <= octet_length(new.search_text) - 2;
	END;
	CREATE TRIGGER memory_items_grams_delete AFTER DELETE ON memory_items
		WHEN octet_length(old.search_text) <= 2048 BEGIN
		DELETE FROM memory_item_grams WHERE scope = old.scope AND seq = old.seq AND gram IN
			(SELECT substr(CAST(old.search_text AS BLOB), pos, 12) FROM memory_item_gram_offsets
				WHERE pos <= octet_length(old.search_text) - 2);
	END;`,
		// Deleted rows' suffix entries are compacted, not deleted one by one (issue 46): a
		// row's entries (one per 4 bytes of its text, about eight for a benchmark item) lie
		// at random places of the biggest B-tree, so deleting them in the delete trigger
		// dirtied a page each, and a retention sweep of ~108 items took
		// 39-44 ms instead of 14-27 at 1M items (on/off 1.11-1.13, over issue 46's 1.10).
		// The delete trigger now records the dead seq in memory_item_gram_dead, with the
		// walk's pass at whose end every entry of it will have been walked (the current one
		// when the cursor is at the start, else the next) and its text's entry count (at most;
		// a text repeats grams), and adds that count to the walk's debt. Each sweep batch then walks the
		// index in key order from the cursor in memory_item_gram_walk, in proportion to the
		// debt (compactGrams), deleting the entries of dead seqs it passes: a page read and
		// dirtied once for all its dead entries. A dead seq is forgotten at the end of its
		// pass. Until the walk passes them its entries stay, harmless: seq is
		// AUTOINCREMENT, so no row ever takes a dead seq again, and every probe's candidates
		// join the rows and instr decides (the count toward a probe's bound only ends it
		// sooner, which falls back to a walk). The cursor starts below every key ('' x'' 0).
		7: `CREATE TABLE memory_item_gram_dead (
		seq     INTEGER PRIMARY KEY,
		pass    INTEGER NOT NULL,
		entries INTEGER NOT NULL
	);
	CREATE TABLE memory_item_gram_walk (
		id    INTEGER PRIMARY KEY CHECK (id = 1),
		scope TEXT NOT NULL,
		gram  BLOB NOT NULL,
		seq   INTEGER NOT NULL,
		pass  INTEGER NOT NULL,
		owed  INTEGER NOT NULL
	);
	INSERT INTO memory_item_gram_walk (id, scope, gram, seq, pass, owed) VALUES (1, '', x'', 0, 0, 0);
	DROP TRIGGER memory_items_grams_delete;
	CREATE TRIGGER memory_items_grams_delete AFTER DELETE ON memory_items
		WHEN octet_length(old.search_text) BETWEEN 3 AND 2048 BEGIN
		INSERT INTO memory_item_gram_dead (seq, pass, entries)
			SELECT old.seq, pass + (seq <> 0), (octet_length(old.search_text) + 1) / 4 FROM memory_item_gram_walk;
		UPDATE memory_item_gram_walk SET owed = owed + (octet_length(old.search_text) + 1) / 4;
	END;`,
	},
}

// SchemaVersion is the schema version this build writes and expects.
var SchemaVersion = schema.Version()

// sqlConn is the relstore.Conn of a database/sql transaction or pool.
type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type conn struct{ c sqlConn }

func (c conn) Exec(ctx context.Context, query string, args ...any) error {
	_, err := c.c.ExecContext(ctx, query, args...)
	return err
}

func (c conn) QueryInt(ctx context.Context, query string, args ...any) (int, error) {
	var v int
	err := c.c.QueryRowContext(ctx, query, args...).Scan(&v)
	return v, err
}

// migrateTimeout bounds Open's migration transaction. A migration that adds an index
// backfills it from every row, so its time grows with the file: migration 6 (the suffix
// index) took 2 min 9 s for a million short items on a loaded 2-core machine, where 30 s
// cut a million-item file's upgrade off and Open failed every time. Waiting for another
// writer's lock is bounded by the busy timeout, not by this.
const migrateTimeout = 15 * time.Minute

// migrate applies the schema migrations and creates the filter index of every supported key
// that has one (filterIndex), in one immediate transaction.
func migrate(ctx context.Context, source string, filterKeys []string) error {
	db, err := sql.Open("sqlite", source)
	if err != nil {
		return memory.NewUnavailable("sqlite: open for migration", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	// _txlock=immediate makes BeginTx take the write lock at once, so two processes opening
	// the same new file serialize here instead of both creating the table.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classify("migrate", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := schema.Migrate(ctx, conn{tx}); err != nil {
		return classify("migrate", err)
	}
	for _, k := range filterKeys {
		if ddl, ok := filterIndex(k); ok {
			if _, err := tx.ExecContext(ctx, ddl); err != nil {
				return classify("migrate: filter index", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return classify("migrate", err)
	}
	return nil
}

func (s *Store) traceSQL(query string, args []any) {
	if s.trace != nil {
		s.trace(query, args)
	}
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.execOn(ctx, s.db, query, args...)
}

// execOn is exec through c, the pool or a transaction.
func (s *Store) execOn(ctx context.Context, c sqlConn, query string, args ...any) (sql.Result, error) {
	s.traceSQL(query, args)
	return c.ExecContext(ctx, query, args...)
}

// Manifest implements memory.ExternalStore; it never changes for the store's lifetime.
func (s *Store) Manifest() memory.Manifest { return s.manifest }

// Scope returns the namespace fixed at construction.
func (s *Store) Scope() string { return s.scope }

// Close closes the connection pool. It is idempotent; calls after Close fail with
// MemoryAdapterUnavailable.
func (s *Store) Close() error {
	// The prepared retrieve is left to the pool: closing the pool finalizes it on every
	// connection, and a retrieve after Close then fails as "database is closed", which is
	// Unavailable, where a closed statement's own error would not be.
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
	return s.closeErr
}

// insertRow inserts one memory row; its arguments are rowArgs. Store adds the upsert clause;
// the benchmarks' bulk loaders use it as is, so loaded rows are exactly what Store writes.
const insertRow = `INSERT INTO memory_items
		(scope, id, kind, created_at, metadata, content, search_text, tags, stored_at_us, size_bytes)
		VALUES (?, ?, 'memory_item', ?, ?, ?, ?, ?, ?, ?)`

// rowArgs are insertRow's arguments for a prepared item in scope stored at storedAt: the
// tags as one JSON array text, the other columns as relstore.Prepare made them.
func rowArgs(scope string, p relstore.Prepared, storedAt time.Time) []any {
	tags, _ := json.Marshal(p.Tags)
	return []any{scope, p.ID.String(), memory.FormatTimestamp(p.CreatedAt), string(p.Metadata), string(p.Content), p.SearchText, string(tags),
		storedAt.UnixMicro(), p.Size}
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
	if err := s.awaitSweep(ctx); err != nil {
		return uuid.Nil, err
	}
	defer s.sweepGate.Release(1)
	res, err := s.exec(ctx, insertRow+`
		ON CONFLICT (scope, id) DO UPDATE SET
			created_at = excluded.created_at, metadata = excluded.metadata,
			content = excluded.content, search_text = excluded.search_text, tags = excluded.tags,
			stored_at_us = excluded.stored_at_us, size_bytes = excluded.size_bytes
		WHERE memory_items.kind = 'memory_item'`,
		rowArgs(s.scope, p, s.now())...)
	if err != nil {
		return uuid.Nil, classify("store", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return uuid.Nil, classify("store", err)
	}
	if n == 0 {
		return uuid.Nil, relstore.NotWritten()
	}
	return p.ID, nil
}

// retrieveSQL reads one row by its primary key.
const retrieveSQL = `SELECT kind, created_at, metadata, content, tags
	FROM memory_items WHERE scope = ? AND id = ?`

// Retrieve reads the item with id in this scope; an unknown id or a record of another kind is
// (nil, nil).
func (s *Store) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		kind, createdAt      string
		meta, content, tagsJ string
	)
	idS := id.String()
	if s.trace != nil {
		// Only for a tracing harness: the argument list escapes, and building it on every
		// call was three allocations and a second id.String() a retrieve need not pay.
		s.trace(retrieveSQL, []any{s.scope, idS})
	}
	err := s.retrieve.QueryRowContext(ctx, s.scope, idS).
		Scan(&kind, &createdAt, &meta, &content, &tagsJ)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("retrieve", err)
	}
	if kind != kindMemoryItem {
		return nil, nil
	}
	it, err := decodeRow(id, createdAt, meta, content, tagsJ)
	if err != nil {
		return nil, err
	}
	return &it, nil
}

func decodeRow(id uuid.UUID, createdAt, meta, content, tagsJ string) (memory.Item, error) {
	ts, err := memory.ParseTimestamp(createdAt)
	if err != nil {
		return memory.Item{}, memory.NewAdapterError("decode stored created_at", err)
	}
	m, err := relstore.DecodeMetadata(meta)
	if err != nil {
		return memory.Item{}, err
	}
	it := memory.Item{ID: id, CreatedAt: ts, Metadata: m, Content: json.RawMessage(content)}
	if err := json.Unmarshal([]byte(tagsJ), &it.Tags); err != nil || it.Tags == nil {
		return memory.Item{}, memory.NewAdapterError("decode stored tags", err)
	}
	if !json.Valid(it.Content) {
		return memory.Item{}, memory.NewAdapterError("decode stored content: not valid JSON", nil)
	}
	return it, nil
}

// Search returns items of this scope matching q in insertion order. Filters are checked
// against the manifest before any I/O; a zero limit returns an empty list without I/O.
func (s *Store) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	out := []memory.Item{}
	if run, err := relstore.CheckSearch(s.manifest, q); !run {
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	plan, err := s.planSearch(ctx, q)
	if err != nil {
		return nil, err
	}
	if plan.none {
		return out, nil
	}
	sqlText, args, exact := buildSearchWith(s.scope, q, plan)
	s.traceSQL(sqlText, args)
	rows, err := s.db.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, classify("search", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			idS, createdAt       string
			meta, content, tagsJ string
		)
		if err := rows.Scan(&idS, &createdAt, &meta, &content, &tagsJ); err != nil {
			return nil, classify("search", err)
		}
		id, err := uuid.Parse(idS)
		if err != nil {
			return nil, memory.NewAdapterError("search: stored id is not a UUID", err)
		}
		it, err := decodeRow(id, createdAt, meta, content, tagsJ)
		if err != nil {
			return nil, err
		}
		if !exact && !filtersMatch(it, q.Filters) {
			continue
		}
		out = append(out, it)
		if len(out) == q.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, classify("search", err)
	}
	return out, nil
}

func filtersMatch(it memory.Item, filters map[string]json.RawMessage) bool {
	for k, want := range filters {
		got, ok := it.Metadata[k]
		if !ok || !memory.JSONEqual(got, want) {
			return false
		}
	}
	return true
}

// searchPlan is what Search learns from the indexes before its statement (planSearch).
type searchPlan struct {
	// single maps a number filter whose key's range holds one stored value to that value
	// (singleNumbers); the statement compares the key's indexed value with it.
	single map[string]any
	// tagIn, when set, is the probe that found at most relstore.TagProbeLimit seqs in the
	// tag index for the query's tags; the statement reads only the rows it lists.
	tagIn indexSeqs
	// textIn is the same from the text indexes for the query's text.
	textIn indexSeqs
	// walk, when set, is a statement that lists seqs in ascending order from an index (a
	// walk: tagWalk, textWalk), with walkArgs its arguments; the search reads the rows it
	// names, in its order, until the limit fills, instead of walking the scope.
	walk     string
	walkArgs []any
	// none is set when the tag index holds no row for any of the query's tags, or the text
	// index none for its text: no item can match, and no statement is needed.
	none bool
}

// indexSeqs is a statement that lists seqs from an index (tagProbe, textWalk, gramProbe),
// with its arguments; an empty query is none.
type indexSeqs struct {
	query string
	args  []any
}

// planSearch probes the indexes for q: the number filters' single values, then the tag
// and the text index (planIndexes).
func (s *Store) planSearch(ctx context.Context, q memory.Query) (searchPlan, error) {
	single, err := s.singleNumbers(ctx, q)
	if err != nil {
		return searchPlan{}, err
	}
	plan, err := planIndexes(ctx, s.db, s.trace, s.scope, q)
	plan.single = single
	return plan, err
}

// planIndexes chooses how the search finds q's candidates through the tag and text indexes.
// Without filters, a query with only tags walks the tag index, and one with only a short
// text (three to five bytes) its trigram matches: both list seqs in insertion order, so
// the search reads rows in the order they come and stops at the limit, a common tag or text
// after about limit rows and a rare one after its few entries, whatever the scope's size
// (the walk of the scope it replaces read limit × scope / matches rows, and the probe before
// it relstore.TagProbeLimit + 1 entries); a probe for one entry first answers an absent tag
// or text without the search statement. Otherwise the indexes are probed for up to
// relstore.TagProbeLimit + 1 entries: the tags', and a text's through the suffix index
// (gramProbe) when it is six bytes or more, else the trigram index, so that few
// candidates, when a probe finds few, are the only rows read. When none finds few and there
// are no filters, the walk of the tag index or, for a text alone, of the trigram matches
// reads the rest. Filters leave the choice to the planner as before, which can use a filter
// index: a tag walk under a rare filter would read every item of a common tag.
func planIndexes(ctx context.Context, db *sql.DB, trace func(string, []any), scope string, q memory.Query) (searchPlan, error) {
	var plan searchPlan
	var err error
	needle, trigrams := "", false
	if q.Text != nil {
		needle = memory.Needle(*q.Text)
		trigrams = textIndexed(needle)
	}
	grams, gramArgs, suffix := gramProbe(scope, needle)
	suffix = suffix && q.Text != nil
	walk, walkArgs, walkOnly := "", []any(nil), false
	switch {
	case len(q.Filters) > 0:
	case len(q.Tags) > 0 && q.Text == nil:
		walk, walkArgs = tagWalk(scope, q.Tags)
		walkOnly = true
	case len(q.Tags) > 0:
		walk, walkArgs = tagWalk(scope, q.Tags)
	case trigrams:
		walk, walkArgs = textWalk(needle)
		walkOnly = !suffix
	}
	if walkOnly {
		n, err := countProbe(ctx, db, trace, indexSeqs{walk, walkArgs}, 1)
		plan.none = n == 0
		if err == nil && !plan.none {
			plan.walk, plan.walkArgs = walk, walkArgs
		}
		return plan, err
	}
	// narrow counts a probe's seqs up to the bound: none means no row can match, fewer
	// than the bound that the search reads only those rows.
	narrow := func(p indexSeqs) (indexSeqs, error) {
		n, err := countProbe(ctx, db, trace, p, relstore.TagProbeLimit+1)
		plan.none = n == 0
		if err != nil || n == 0 || n > relstore.TagProbeLimit {
			return indexSeqs{}, err
		}
		return p, nil
	}
	if len(q.Tags) > 0 {
		query, args := tagProbe(scope, q.Tags)
		if plan.tagIn, err = narrow(indexSeqs{query, args}); err != nil || plan.none {
			return plan, err
		}
	}
	switch {
	case suffix:
		plan.textIn, err = narrow(indexSeqs{grams, gramArgs})
	case trigrams:
		query, args := textWalk(needle)
		plan.textIn, err = narrow(indexSeqs{query, args})
	}
	if err == nil && !plan.none && plan.tagIn.query == "" && plan.textIn.query == "" {
		// Nothing narrowed: the walk (with tags, of the tag index, a subset of the scope's
		// rows in the same order, where instr decides), or the scope's.
		plan.walk, plan.walkArgs = walk, walkArgs
	}
	return plan, err
}

// tagProbe is the statement and arguments that read the tag index (memory_item_tags,
// migration 2) for tags in scope: a primary-key range per tag, so an absent tag costs one
// lookup.
func tagProbe(scope string, tags []string) (string, []any) {
	var b strings.Builder
	args := []any{scope}
	b.WriteString(`SELECT seq FROM memory_item_tags WHERE scope = ? AND tag IN (`)
	for i, t := range tags {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("?")
		args = append(args, t)
	}
	b.WriteString(`)`)
	return b.String(), args
}

// tagWalk is the statement and arguments that list, in ascending order, the seqs the tag
// index holds for any of tags in scope: each tag's primary-key range is already in seq
// order, and a compound UNION with ORDER BY is merged by SQLite (MERGE (UNION), no sort),
// which also drops a seq that two of the tags share, so the walk reads only as many
// entries as the search needs.
func tagWalk(scope string, tags []string) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 2*len(tags))
	for i, t := range tags {
		if i > 0 {
			b.WriteString(` UNION `)
		}
		b.WriteString(`SELECT seq FROM memory_item_tags WHERE scope = ? AND tag = ?`)
		args = append(args, scope, t)
	}
	b.WriteString(` ORDER BY 1`)
	return b.String(), args
}

// textIndexed reports whether the text index can answer for a lower-cased needle: one under
// three characters has no trigram (FTS5 matches nothing for it, so those searches walk the
// scope), and one that is not valid UTF-8 or holds U+0000 is left to instr's byte
// comparison.
func textIndexed(needle string) bool {
	return utf8.RuneCountInString(needle) >= 3 && utf8.ValidString(needle) && strings.IndexByte(needle, 0) < 0
}

// textWalk is the statement and arguments that list, in ascending order, the seqs the text
// index (memory_items_text, migration 3) matches for a needle textIndexed accepts. The
// needle is one quoted phrase: rows whose text holds its trigrams consecutively, every row
// containing it among them. FTS5 returns a match's rowids in ascending order and consumes
// the ORDER BY itself. The index spans all scopes; the search restricts to this one.
func textWalk(needle string) (string, []any) {
	return `SELECT rowid AS seq FROM memory_items_text WHERE memory_items_text MATCH ? ORDER BY rowid`,
		[]any{`"` + strings.ReplaceAll(needle, `"`, `""`) + `"`}
}

// gramProbe is the statement and arguments that read the suffix index (memory_item_grams,
// migration 6) for a lower-cased needle in scope, or false when it cannot answer
// (relstore.TextRanges: a needle under six bytes): each of the needle's ranges, and the rows
// whose text is too long for the index (through their partial index, whose predicate the
// statement repeats), each cut at the probe's bound, so a common needle reads at most a few
// bounds' worth of entries. A row may come twice (the needle twice in its text), which
// only makes the probe give up sooner.
func gramProbe(scope, needle string) (string, []any, bool) {
	lo, hi := relstore.TextRanges(needle)
	if lo == nil {
		return "", nil, false
	}
	bound := relstore.TagProbeLimit + 1
	var b strings.Builder
	var args []any
	for i := range lo {
		b.WriteString(`SELECT seq FROM (SELECT seq FROM memory_item_grams WHERE scope = ? AND gram >= ? AND gram < ? LIMIT ?) UNION ALL `)
		args = append(args, scope, lo[i], hi[i], bound)
	}
	b.WriteString(`SELECT seq FROM (SELECT seq FROM memory_items WHERE scope = ? AND octet_length(search_text) > ` +
		strconv.Itoa(relstore.TextIndexBytes) + ` LIMIT ?)`)
	args = append(args, scope, bound)
	return b.String(), args, true
}

// countProbe counts the seqs an index probe (tagProbe, textWalk, gramProbe) lists, up to
// bound, with trace (when set) seeing the statement: SQLite counts them itself and returns
// one row. When there are fewer than relstore.TagProbeLimit + 1, the search statement reads
// the same probe as a subquery (seq IN (…)) rather than a list the probe would return: a
// 1 % tag's 1,001 entries at 1M items took 78-81 µs to count against 184-257 µs to count
// and encode as a JSON array in SQL and 356-397 µs to read one by one through database/sql.
// A store that commits between the probe and the search is concurrent with the search,
// which may then miss it.
func countProbe(ctx context.Context, db *sql.DB, trace func(string, []any), p indexSeqs, bound int) (int, error) {
	query := `SELECT count(*) FROM (` + p.query + ` LIMIT ?)`
	args := append(slices.Clip(p.args), bound)
	if trace != nil {
		trace(query, args)
	}
	var n int
	if err := db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		return 0, classify("search", err)
	}
	return n, nil
}

// buildSearchWith returns the statement, its arguments, and whether SQL alone decides the
// filters exactly, given planSearch's result: a number filter whose key's range holds one
// stored value becomes an equality on it, and a rare tag restricts the statement to the rows
// the tag index named. SQLite's json_each yields numbers as SQL values (a number above the
// int64 range becomes a REAL) and cannot compare objects by JSON equality, so for other
// number, object and array filter values SQL only pre-selects by JSON type and Go decides
// with memory.JSONEqual; the limit is then applied in Go.
func buildSearchWith(scope string, q memory.Query, plan searchPlan) (string, []any, bool) {
	var b strings.Builder
	var args []any
	order := `memory_items.seq`
	b.WriteString(`SELECT id, created_at, metadata, content, tags FROM `)
	if plan.walk != "" {
		// The walk drives, in its order: CROSS JOIN keeps SQLite from reordering the loops,
		// and ordering by the walk's own column needs no sort (the rows' seq is the same
		// value, but SQLite would sort by it).
		b.WriteString(`(` + plan.walk + `) AS walk CROSS JOIN memory_items ON memory_items.seq = walk.seq`)
		args = append(args, plan.walkArgs...)
		order = `walk.seq`
	} else {
		b.WriteString(`memory_items`)
	}
	b.WriteString(`
		WHERE scope = ? AND kind = 'memory_item'`)
	args = append(args, scope)
	if q.Text != nil {
		// instr is a literal byte search: no pattern characters exist for it.
		b.WriteString(` AND instr(search_text, ?) > 0`)
		args = append(args, memory.Needle(*q.Text))
		if plan.textIn.query != "" {
			// Implied by instr, which still decides: the rows the text index names.
			b.WriteString(` AND memory_items.seq IN (` + plan.textIn.query + `)`)
			args = append(args, plan.textIn.args...)
		}
	}
	if len(q.Tags) > 0 {
		b.WriteString(` AND EXISTS (SELECT 1 FROM json_each(memory_items.tags) AS t WHERE t.value IN (`)
		for i, t := range q.Tags {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("?")
			args = append(args, t)
		}
		b.WriteString(`))`)
		if plan.tagIn.query != "" {
			// Implied by the clause above, which still decides: the rows whose tags the tag
			// index holds for the query, looked up by rowid, instead of a walk of the scope.
			b.WriteString(` AND memory_items.seq IN (` + plan.tagIn.query + `)`)
			args = append(args, plan.tagIn.args...)
		}
	}
	exact := true
	for k, v := range q.Filters {
		// Before the exact clause: a condition on the key's indexed value that every row the
		// clause accepts also meets, so the statement can use the key's filter index.
		if one, ok := plan.single[k]; ok {
			b.WriteString(` AND ` + filterExpr(k) + ` = ?`)
			args = append(args, one)
		} else if cond, cargs, ok := filterIndexCondition(k, v); ok {
			b.WriteString(cond)
			args = append(args, cargs...)
		}
		// json_each raises "malformed JSON" on a value SQLite's parser refuses (nested beyond
		// its 1,000 levels), which would fail the whole statement; a row written before the
		// contract's nesting limit must not take the scope's filtered search down with it, so
		// such a row simply matches no filter.
		b.WriteString(` AND EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(memory_items.metadata)
			THEN memory_items.metadata ELSE '{}' END) AS m WHERE m.key = ?`)
		args = append(args, k)
		cond, cargs, ok := filterCondition(v)
		b.WriteString(cond)
		args = append(args, cargs...)
		exact = exact && ok
		b.WriteString(`)`)
	}
	b.WriteString(` ORDER BY ` + order)
	if exact {
		b.WriteString(` LIMIT ?`)
		args = append(args, q.Limit)
	}
	return b.String(), args, exact
}

// filterCondition maps one filter value to a json_each condition and reports whether it is
// exact.
func filterCondition(v json.RawMessage) (string, []any, bool) {
	trimmed := strings.TrimSpace(string(v))
	switch {
	case trimmed == "null":
		return ` AND m.type = 'null'`, nil, true
	case trimmed == "true":
		return ` AND m.type = 'true'`, nil, true
	case trimmed == "false":
		return ` AND m.type = 'false'`, nil, true
	case strings.HasPrefix(trimmed, `"`):
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return ` AND m.type = 'text' AND m.atom = ?`, []any{s}, true
		}
	case strings.HasPrefix(trimmed, "{"):
		return ` AND m.type = 'object'`, nil, false
	case strings.HasPrefix(trimmed, "["):
		return ` AND m.type = 'array'`, nil, false
	default:
		return ` AND m.type IN ('integer', 'real')`, nil, false
	}
	// Invalid JSON matches nothing (JSONEqual is false for it).
	return ` AND 0`, nil, true
}

// filterKeyPattern is the filter keys that get an index: they need no escaping inside the
// JSON path's double quotes or the SQL string literal the index expression embeds (an index
// expression cannot take the path as a parameter).
var filterKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// filterExpr is the indexed expression of filter key k: its value in the row's metadata as
// json_extract returns it (the text of a string, the number of a number), NULL for a row
// whose metadata SQLite's parser refuses, so that a stored row can never make the index
// expression raise an error.
func filterExpr(k string) string {
	return `json_extract(CASE WHEN json_valid(metadata) THEN metadata ELSE '{}' END, '$."` + k + `"')`
}

// filterIndex returns the CREATE INDEX statement of key k's filter index, or false when k
// gets none: (scope, value, seq), so an equality walks one value's rows in insertion order.
// The name holds the key in hex, because SQLite identifiers ignore case and keys do not.
func filterIndex(k string) (string, bool) {
	if !filterKeyPattern.MatchString(k) {
		return "", false
	}
	return `CREATE INDEX IF NOT EXISTS "memory_items_f_` + hex.EncodeToString([]byte(k)) +
		`" ON memory_items (scope, ` + filterExpr(k) + `, seq)`, true
}

// filterIndexCondition returns a condition on key k's indexed value that every row matching
// the filter value v meets, or false when there is none (no index for k, or a value the
// index cannot narrow: null, booleans, objects, arrays, numbers out of range). Adding it
// never changes the result, only the plan:
//
//   - a string: json_extract returns the string's text, decoded as json_each's atom that
//     the exact clause compares (metadata written by Prepare has unique keys);
//   - a number whose double f is 0 or has a magnitude in [1e-300, 1e300] and whose literal's
//     exponent is within ±300: a stored number of the same exact value (the only kind
//     memory.JSONEqual accepts) is returned by json_extract as an INTEGER or a REAL within
//     2⁻³⁰·|f| of f whatever its literal (4242, 4242.0, 4.242e3), since SQLite's and Go's
//     decimal conversions are each off by a few units in the last place at most; the
//     range admits neighbours too, which memory.JSONEqual then rejects in Go as before.
//     The range is marked rare, so the planner uses the index; Search first turns the
//     usual case, one stored value in the range, into an equality (singleNumbers), which
//     needs no sort.
func filterIndexCondition(k string, v json.RawMessage) (string, []any, bool) {
	if !filterKeyPattern.MatchString(k) {
		return "", nil, false
	}
	trimmed := strings.TrimSpace(string(v))
	switch {
	case strings.HasPrefix(trimmed, `"`):
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", nil, false
		}
		return ` AND ` + filterExpr(k) + ` = ?`, []any{s}, true
	case strings.HasPrefix(trimmed, "-") || (trimmed != "" && trimmed[0] >= '0' && trimmed[0] <= '9'):
		lo, hi, ok := numberRange(trimmed)
		if !ok {
			return "", nil, false
		}
		// likelihood marks the range as rare: without it the planner, which has no
		// statistics (the adapter never runs ANALYZE), prefers walking (scope, seq) to a
		// range scan plus a sort, and a rare number walks the whole scope.
		return ` AND likelihood(` + filterExpr(k) + ` BETWEEN ? AND ?, 0.000001)`, []any{lo, hi}, true
	}
	return "", nil, false
}

// singleNumbers finds, for each number filter that filterIndexCondition would turn into a
// range, whether the key's index holds exactly one distinct value in that range (the
// smallest and the largest, two O(log n) index lookups in one statement, are the same SQL
// value of the same type); such filters map to that value. An equality reads the key's rows
// in seq order and stops at the limit, where the range, whose rows come ordered by value,
// must sort all of them first: a number that many items share (10 % of 1M items: 0.3–0.5 s)
// needs the equality, and a spelling that SQLite reads as a neighbouring double keeps the
// range, so nothing is missed. A store that commits a second value into the range between
// this statement and the search is concurrent with the search, which may then miss it.
func (s *Store) singleNumbers(ctx context.Context, q memory.Query) (map[string]any, error) {
	var out map[string]any
	for k, v := range q.Filters {
		if !filterKeyPattern.MatchString(k) {
			continue
		}
		lo, hi, ok := numberRange(strings.TrimSpace(string(v)))
		if !ok {
			continue
		}
		e := filterExpr(k)
		sub := `FROM memory_items WHERE scope = ? AND ` + e + ` BETWEEN ? AND ?`
		query := `SELECT (SELECT min(` + e + `) ` + sub + `), (SELECT max(` + e + `) ` + sub + `)`
		args := []any{s.scope, lo, hi, s.scope, lo, hi}
		s.traceSQL(query, args)
		var minV, maxV any
		if err := s.db.QueryRowContext(ctx, query, args...).Scan(&minV, &maxV); err != nil {
			return nil, classify("search", err)
		}
		if sameNumber(minV, maxV) {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = minV
		}
	}
	return out, nil
}

// sameNumber reports whether a and b are the same SQL number of the same type (an INTEGER
// and a REAL are never taken as one value: converting either could round).
func sameNumber(a, b any) bool {
	switch x := a.(type) {
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return false
}

// numberRange returns the range filterIndexCondition admits for a JSON number literal, or
// false when the literal is not a number in the range it handles.
func numberRange(lit string) (float64, float64, bool) {
	if !json.Valid([]byte(lit)) {
		return 0, 0, false
	}
	mantissa := lit
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mantissa = lit[:i]
		exp, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || exp < -300 || exp > 300 {
			return 0, 0, false
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, 0, false
	}
	if f == 0 {
		// Only a literal that is zero: a tiny non-zero one that rounded to 0 is left to Go.
		return 0, 0, strings.Trim(mantissa, "-0.") == ""
	}
	if a := math.Abs(f); a < 1e-300 || a > 1e300 {
		return 0, 0, false
	}
	d := math.Abs(f) * 0x1p-30
	return f - d, f + d, true
}

// Probe reports the SQLite library version and checks WAL mode, the JSON functions, the
// schema version and that a write is durable (writeProbe).
func (s *Store) Probe(ctx context.Context) (memory.Evidence, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ev := memory.Evidence{ObservedAt: time.Now().UTC()}
	var version string
	if err := s.db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&version); err != nil {
		return ev, classify("probe", err)
	}
	ev.ServiceVersion = "SQLite " + version
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return ev, classify("probe", err)
	}
	walMode := memory.ProbeResult{Name: "wal_mode", OK: strings.EqualFold(mode, "wal"), Detail: "journal_mode=" + mode}
	if s.immutable != "" {
		// An immutable open always reports "delete"; the file's header says what it is.
		walMode = memory.ProbeResult{Name: "wal_mode", OK: s.immutable == "wal",
			Detail: "journal_mode=" + s.immutable + " (file header; opened read-only as immutable: the volume is read-only)"}
	}
	ev.Probes = append(ev.Probes, walMode)
	var jsonOK int
	err := s.db.QueryRowContext(ctx, `SELECT json_valid('{"a":[1]}') AND (SELECT count(*) FROM json_each('[1,2]')) = 2`).Scan(&jsonOK)
	ev.Probes = append(ev.Probes, probeResult("json_functions", err == nil && jsonOK == 1, err))
	ev.Probes = append(ev.Probes, schema.Probe(ctx, conn{s.db}))
	ev.Probes = append(ev.Probes, s.writeProbe(ctx))
	return ev, nil
}

// writeProbe is the "write" capability probe: it stores a row in memory_write_probe (a table
// of its own, never memory_items, so user data and search are untouched), reads it back and
// removes it, each statement committed. A database that can no longer write (a read-only
// volume, a full disk, a file whose permissions changed) answers every Store with an error;
// without this probe its evidence, all reads, would still uphold the manifest. One row per
// scope at most, and only for the moment of the probe; the server probes at most once per
// evidence TTL, so the cost is three small statements per health period.
func (s *Store) writeProbe(ctx context.Context) memory.ProbeResult {
	token := uuid.NewString()
	fail := func(step string, err error) memory.ProbeResult {
		return memory.ProbeResult{Name: "write", OK: false, Detail: fmt.Sprintf("%s a probe row: %v", step, err)}
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS memory_write_probe (scope TEXT PRIMARY KEY, token TEXT NOT NULL)`); err != nil {
		return fail("create the table of", err)
	}
	// A row of its own, keyed as PostgreSQL's probe keys it: probes that overlap (the server's
	// periodic probe and an on-demand one, or two processes opening one file) never read or
	// remove each other's rows.
	key := s.scope + "#write-probe-" + token
	if _, err := s.db.ExecContext(ctx, `INSERT INTO memory_write_probe (scope, token) VALUES (?, ?)`, key, token); err != nil {
		return fail("store", err)
	}
	var got string
	if err := s.db.QueryRowContext(ctx, `SELECT token FROM memory_write_probe WHERE scope = ?`, key).Scan(&got); err != nil {
		return fail("read back", err)
	}
	if got != token {
		return memory.ProbeResult{Name: "write", OK: false, Detail: "read back a probe row that is not the one just stored"}
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM memory_write_probe WHERE scope = ?`, key); err != nil {
		return fail("remove", err)
	}
	return memory.ProbeResult{Name: "write", OK: true, Detail: "stored, read back and removed a probe row"}
}

func probeResult(name string, ok bool, err error) memory.ProbeResult {
	r := memory.ProbeResult{Name: name, OK: ok}
	if err != nil {
		r.Detail = err.Error()
	}
	return r
}

// classify maps a driver error to the contract's errors: anything that says the database
// cannot be reached or used right now (cannot open, I/O error, locked past the busy timeout,
// full disk, closed pool, deadline) is MemoryAdapterUnavailable; everything else, such as a
// constraint or trigger refusing the write, is MemoryAdapterError.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
		return err // already classified (our own validation error)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) ||
		strings.Contains(err.Error(), "sql: database is closed") {
		return memory.NewUnavailable("sqlite: "+op, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_PERM, sqlite3.SQLITE_INTERRUPT:
			return memory.NewUnavailable("sqlite: "+op, err)
		}
	}
	return memory.NewAdapterError("sqlite: "+op, err)
}
