package v1alpha1

// BackendType names the storage service an adapter runs on.
// +kubebuilder:validation:Enum=SQLite;Postgres;Redis;Khive
type BackendType string

// The backend types this API version supports.
const (
	// BackendSQLite is the embedded default: one database file inside the
	// adapter's volume.
	BackendSQLite BackendType = "SQLite"
	// BackendPostgres is a PostgreSQL server reached through a connection
	// Secret.
	BackendPostgres BackendType = "Postgres"
	// BackendRedis is a Redis server with an asynchronously maintained search
	// index.
	BackendRedis BackendType = "Redis"
	// BackendKhive is khive, reached through a `kkernel mcp` child process that
	// the adapter starts inside its own container. The operator's adapter image
	// does not contain kkernel: spec.image must name one that does.
	BackendKhive BackendType = "Khive"
)

// BackendSpec says where the adapter keeps its items.
// +kubebuilder:validation:XValidation:rule="self.type == 'SQLite' || self.type == 'Khive' || has(self.connectionSecretRef)",message="connectionSecretRef is required unless type is 'SQLite' or 'Khive'"
// +kubebuilder:validation:XValidation:rule="self.type != 'SQLite' || !has(self.connectionSecretRef)",message="connectionSecretRef must not be set when type is 'SQLite': the database file lives in the adapter's volume"
// +kubebuilder:validation:XValidation:rule="!has(self.sqlite) || self.type == 'SQLite'",message="sqlite options may only be set when type is 'SQLite'"
// +kubebuilder:validation:XValidation:rule="!has(self.postgres) || self.type == 'Postgres'",message="postgres options may only be set when type is 'Postgres'"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || self.type == 'Redis'",message="redis options may only be set when type is 'Redis'"
// +kubebuilder:validation:XValidation:rule="self.type != 'Khive' || !has(self.connectionSecretRef)",message="connectionSecretRef must not be set when type is 'Khive': the adapter starts kkernel itself and its database lives in the adapter's volume"
// +kubebuilder:validation:XValidation:rule="!has(self.khive) || self.type == 'Khive'",message="khive options may only be set when type is 'Khive'"
// +kubebuilder:validation:XValidation:rule="self.type != 'Khive' || has(self.khive)",message="khive options are required when type is 'Khive'"
type BackendSpec struct {
	// type selects the storage service: SQLite (embedded, no Secret needed),
	// Postgres, Redis or Khive (a kkernel child process, no Secret needed). It is fixed at creation: items written to one backend
	// are not in another, so a different backend is a new MemoryAdapter.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable: create a new MemoryAdapter to use a different backend"
	Type BackendType `json:"type"`

	// connectionSecretRef names a Secret in the MemoryAdapter's namespace
	// whose key holds the connection string (a PostgreSQL DSN or a Redis URL).
	// Credentials are never written inline. Required unless type is SQLite.
	// +optional
	ConnectionSecretRef *SecretKeyReference `json:"connectionSecretRef,omitempty"`

	// scope is the namespace or collection inside the backend that holds this
	// adapter's items (the value of a scope column every row carries for
	// SQLite and Postgres, a key prefix for Redis). It is fixed at creation,
	// as the seed requires: changing it would silently point the adapter at
	// other data. Lower-case letters, digits, '_', '-' and '.', starting with
	// a letter (api/memory's ScopePattern and MaxScopeLength).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_.-]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="scope is immutable: create a new MemoryAdapter to use a different scope"
	Scope string `json:"scope"`

	// sqlite holds options for the SQLite backend; only allowed when type is
	// SQLite.
	// +optional
	SQLite *SQLiteOptions `json:"sqlite,omitempty"`

	// postgres holds options for the Postgres backend; only allowed when type
	// is Postgres.
	// +optional
	Postgres *PostgresOptions `json:"postgres,omitempty"`

	// redis holds options for the Redis backend; only allowed when type is
	// Redis.
	// +optional
	Redis *RedisOptions `json:"redis,omitempty"`

	// khive holds options for the Khive backend; required when type is Khive
	// and only allowed then.
	// +optional
	Khive *KhiveOptions `json:"khive,omitempty"`
}

// KhiveOptions configure the Khive backend: the adapter starts
// `<command> mcp <args> --db <volume>/khive.db --namespace <scope>` as its
// child and speaks MCP to it over stdin and stdout (docs/adapters/khive.md).
type KhiveOptions struct {
	// command is the kkernel binary inside the image, a path or a name looked
	// up in PATH. Defaults to "kkernel".
	// +optional
	// +kubebuilder:default=kkernel
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Command string `json:"command,omitempty"`

	// args are extra kkernel arguments after "mcp" (for example "--no-embed"
	// or "--pack=name"). The operator sets --db and the adapter sets
	// --namespace (the scope), so neither may appear here.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.all(a, !a.startsWith('--db') && !a.startsWith('--namespace'))",message="khive.args must not set --db or --namespace: the operator sets the database path and the scope is the namespace"
	Args []string `json:"args,omitempty"`

	// storageSize is the size of the PersistentVolumeClaim holding kkernel's
	// database file, as a Kubernetes quantity such as "1Gi". Defaults to 1Gi.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$`
	StorageSize string `json:"storageSize,omitempty"`

	// storageClassName is the StorageClass of that claim; omitted means the
	// cluster default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// SecretKeyReference names one key of a Secret in the MemoryAdapter's
// namespace.
type SecretKeyReference struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key is the Secret data key holding the connection string. Defaults to
	// "dsn".
	// +optional
	// +kubebuilder:default=dsn
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// SQLiteJournalMode is the SQLite journal mode of the adapter's database
// file. WAL is the only one: the adapter's concurrency (readers beside one
// writer) and its wal_mode capability probe rely on it.
// +kubebuilder:validation:Enum=WAL
type SQLiteJournalMode string

// The SQLite journal modes the adapter supports.
const (
	// SQLiteJournalWAL lets readers proceed while the single writer commits.
	SQLiteJournalWAL SQLiteJournalMode = "WAL"
)

// SQLiteOptions tunes the embedded SQLite backend.
type SQLiteOptions struct {
	// storageSize is the size of the PersistentVolumeClaim holding the
	// database file, as a Kubernetes quantity such as "1Gi". Defaults to 1Gi.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$`
	StorageSize string `json:"storageSize,omitempty"`

	// storageClassName is the StorageClass of that claim; omitted means the
	// cluster default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// journalMode is the database file's journal mode; WAL, the default, is
	// the only one the adapter runs with (its volume must support shared
	// memory, as local and block volumes do; NFS does not).
	// +optional
	JournalMode SQLiteJournalMode `json:"journalMode,omitempty"`
}

// PostgresSSLMode is libpq's sslmode for the adapter's connections.
// +kubebuilder:validation:Enum=disable;require;verify-ca;verify-full
type PostgresSSLMode string

// PostgresOptions tunes the Postgres backend.
type PostgresOptions struct {
	// sslMode overrides the DSN's sslmode: disable, require, verify-ca or
	// verify-full. Omitted means the DSN decides.
	// +optional
	SSLMode PostgresSSLMode `json:"sslMode,omitempty"`

	// maxConnections caps the adapter's connection pool per replica.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	MaxConnections *int32 `json:"maxConnections,omitempty"`
}

// RedisTLSMode says whether the adapter talks TLS to Redis.
// +kubebuilder:validation:Enum=Disabled;Required
type RedisTLSMode string

// RedisOptions tunes the Redis backend.
type RedisOptions struct {
	// database is the Redis logical database number.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	Database *int32 `json:"database,omitempty"`

	// tls overrides the URL's scheme: Disabled or Required. Omitted means the
	// URL decides (rediss:// is TLS).
	// +optional
	TLS RedisTLSMode `json:"tls,omitempty"`

	// poolSize caps the adapter's connection pool per replica.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	PoolSize *int32 `json:"poolSize,omitempty"`
}

// The libpq sslmode values the Postgres backend accepts.
const (
	// PostgresSSLDisable sends everything in clear text.
	PostgresSSLDisable PostgresSSLMode = "disable"
	// PostgresSSLRequire encrypts without verifying the server certificate.
	PostgresSSLRequire PostgresSSLMode = "require"
	// PostgresSSLVerifyCA encrypts and verifies the certificate chain.
	PostgresSSLVerifyCA PostgresSSLMode = "verify-ca"
	// PostgresSSLVerifyFull encrypts and verifies the chain and the host name.
	PostgresSSLVerifyFull PostgresSSLMode = "verify-full"
)

// The TLS modes the Redis backend accepts.
const (
	// RedisTLSDisabled talks plain TCP to Redis.
	RedisTLSDisabled RedisTLSMode = "Disabled"
	// RedisTLSRequired refuses to talk to Redis without TLS.
	RedisTLSRequired RedisTLSMode = "Required"
)
