package relstore

// TagProbeLimit is how many items a tag search's probe of the tag index reads at most
// before the search itself. A query's tags held by at most this many items of the scope
// (rare or absent tags) are searched among exactly those items, found through the index:
// none means no statement at all, a few an indexed lookup of each. Tags held by more are
// searched as before, walking the scope in insertion order until the limit fills, which
// reads about limit × scope / matches rows: flat for a tag on a fixed share of the items,
// and at most limit × scope / TagProbeLimit rows for any tag (20,000 at 1M items). The
// probe itself reads at most TagProbeLimit + 1 index entries, so no tag search reads the
// whole scope. The adapters do better for one common tag: its index entries are in
// insertion order, so its first entries name every row up to the last of them that has it,
// and a search reads those rows and walks on only past them (SQLite's tagProbe walk,
// PostgreSQL's prefix), about the limit's rows at any scope size. A planner without
// statistics for a tag (SQLite has none, PostgreSQL none for a tag outside its most-common
// list) cannot make this choice itself (docs/performance.md).
const TagProbeLimit = 1000
