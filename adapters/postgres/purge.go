package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// PurgeScope deletes every memory item of opts.Scope and of its sub-scopes from
// <schema>.memory_items in one statement, and returns how many it deleted. Only opts.URL, Scope, Schema and
// ConnectTimeout are used. Rows of the scope of another kind (records other software keeps in
// the same table, which retrieve never coerces) and every other scope are left alone. A
// server where the adapter's table was never created holds nothing to purge: 0, no error,
// and nothing is created.
//
// Run it only when no adapter instance writes to the scope any more: a store that lands
// after the DELETE stays. Errors never contain the connection string; an unreachable server
// is memory.MemoryAdapterUnavailable, a refusal by the server memory.MemoryAdapterError.
func PurgeScope(ctx context.Context, opts Options) (int64, error) {
	if err := memory.CheckScope(opts.Scope); err != nil {
		return 0, memory.NewAdapterError("postgres: purge: options", err)
	}
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaName.MatchString(schema) {
		return 0, memory.NewAdapterError("postgres: purge: options: schema must be a lower-case identifier", nil)
	}
	cfg, err := pgx.ParseConfig(opts.URL)
	if err != nil {
		// The parse error may quote the string, password included: do not wrap it.
		return 0, memory.NewAdapterError("postgres: purge: options: URL is not a valid PostgreSQL connection string", nil)
	}
	cfg.ConnectTimeout = orDefault(opts.ConnectTimeout, DefaultConnectTimeout)
	cfg.RuntimeParams["application_name"] = "memory-adapter-purge"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, classify("purge: connect", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()

	table := pgx.Identifier{schema, "memory_items"}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return 0, classify("purge: find the table", err)
	}
	if !exists {
		return 0, nil
	}
	// The scope's sub-scopes (memory.SubScope: the scope, the separator, a name) go with it;
	// the separator is outside every scope's alphabet, so no other scope starts like them.
	tag, err := conn.Exec(ctx, `DELETE FROM `+table+` WHERE (scope = $1 OR starts_with(scope, $1 || $3)) AND kind = $2`,
		opts.Scope, kindMemoryItem, memory.SubScopeSeparator)
	if err != nil {
		return 0, classify(fmt.Sprintf("purge: delete the items of scope %q", opts.Scope), err)
	}
	return tag.RowsAffected(), nil
}
