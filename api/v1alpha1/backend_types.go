package v1alpha1

// BackendType names the storage service an adapter runs on.
// +kubebuilder:validation:Enum=SQLite;Postgres;Redis;Khive;External
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
	// Experimental: verified against khivefake only, until it has run against a
	// real kkernel.
	BackendKhive BackendType = "Khive"
	// BackendExternal is a server the user brings: an image that speaks the
	// memory adapter wire (api/memory/openapi.yaml) and, started in harness
	// mode, the conformance harness protocol (/harness/v1). The operator runs
	// it as it runs its own adapter and judges it over the wire; spec.image
	// must name it.
	BackendExternal BackendType = "External"
)

// BackendSpec says where the adapter keeps its items.
// +kubebuilder:validation:XValidation:rule="self.type == 'SQLite' || self.type == 'Khive' || self.type == 'External' || has(self.connectionSecretRef)",message="connectionSecretRef is required unless type is 'SQLite', 'Khive' or 'External'"
// +kubebuilder:validation:XValidation:rule="self.type != 'SQLite' || !has(self.connectionSecretRef)",message="connectionSecretRef must not be set when type is 'SQLite': the database file lives in the adapter's volume"
// +kubebuilder:validation:XValidation:rule="!has(self.sqlite) || self.type == 'SQLite'",message="sqlite options may only be set when type is 'SQLite'"
// +kubebuilder:validation:XValidation:rule="!has(self.postgres) || self.type == 'Postgres'",message="postgres options may only be set when type is 'Postgres'"
// +kubebuilder:validation:XValidation:rule="!has(self.redis) || self.type == 'Redis'",message="redis options may only be set when type is 'Redis'"
// +kubebuilder:validation:XValidation:rule="self.type != 'Khive' || !has(self.connectionSecretRef)",message="connectionSecretRef must not be set when type is 'Khive': the adapter starts kkernel itself and its database lives in the adapter's volume"
// +kubebuilder:validation:XValidation:rule="!has(self.khive) || self.type == 'Khive'",message="khive options may only be set when type is 'Khive'"
// +kubebuilder:validation:XValidation:rule="self.type != 'Khive' || has(self.khive)",message="khive options are required when type is 'Khive'"
// +kubebuilder:validation:XValidation:rule="self.type != 'External' || !has(self.connectionSecretRef)",message="connectionSecretRef must not be set when type is 'External': give the server its Secrets through external.env"
// +kubebuilder:validation:XValidation:rule="!has(self.external) || self.type == 'External'",message="external options may only be set when type is 'External'"
// +kubebuilder:validation:XValidation:rule="self.type != 'External' || has(self.external)",message="external options are required when type is 'External'"
type BackendSpec struct {
	// type selects the storage service: SQLite (embedded, no Secret needed),
	// Postgres, Redis, Khive (experimental; a kkernel child process, no Secret
	// needed) or External (a server image the user brings, see external). It
	// is fixed at creation: items written to one backend are not in another,
	// so a different backend is a new MemoryAdapter.
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

	// khive holds options for the Khive backend (experimental until it has run
	// against a real kkernel); required when type is Khive and only allowed then.
	// +optional
	Khive *KhiveOptions `json:"khive,omitempty"`

	// external is the container contract of a server the user brings;
	// required when type is External and only allowed then.
	// +optional
	External *ExternalOptions `json:"external,omitempty"`
}

// ExternalOptions are the container contract of a bring-your-own adapter:
// an image (spec.image) that serves the memory adapter wire and, started
// with harnessArgs, also the conformance harness protocol on a second port.
//
// The operator runs the image twice. The production Deployment runs command
// and args with these environment variables set:
//
//	MEMORY_ADAPTER_LISTEN      0.0.0.0:<port>, where the wire must listen
//	MEMORY_ADAPTER_PORT        <port>
//	MEMORY_ADAPTER_TOKEN_FILE  /var/run/memory-adapter/binding/accepted-tokens:
//	                           the bearer tokens a data request may carry, one
//	                           a line (two during a token rotation); rewritten
//	                           in place at each rotation step, which the
//	                           server must pick up without a restart
//	MEMORY_ADAPTER_SCOPE       spec.backend.scope
//	MEMORY_ADAPTER_TLS_CERT_FILE, MEMORY_ADAPTER_TLS_KEY_FILE
//	                           with spec.tls mode Operator (the default): the
//	                           serving certificate and key the wire must be
//	                           served over HTTPS with; rewritten in place at
//	                           each renewal, which the server must pick up
//
// Each conformance Job runs command and harnessArgs as a sidecar of the
// conformance container, on a disposable scope, reachable on loopback only:
//
//	MEMORY_ADAPTER_LISTEN              127.0.0.1:<port>
//	MEMORY_ADAPTER_TOKEN_FILE          a fresh per-run data token
//	MEMORY_ADAPTER_HARNESS_LISTEN      127.0.0.1:<harnessPort>
//	MEMORY_ADAPTER_HARNESS_TOKEN_FILE  a fresh per-run harness token
//	MEMORY_ADAPTER_SCOPE               a disposable scope for this run
//
// Arguments may name them as $(MEMORY_ADAPTER_LISTEN) and so on: the
// kubelet expands them. Both run as UID 65532 with a read-only root
// filesystem (Pod Security "restricted"); /tmp is writable.
// +kubebuilder:validation:XValidation:rule="!has(self.port) || !has(self.harnessPort) || self.port != self.harnessPort",message="harnessPort must differ from port"
type ExternalOptions struct {
	// command replaces the image's entrypoint in both runs; omitted keeps it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	Command []string `json:"command,omitempty"`

	// args start the production server (the wire only, never the harness).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Args []string `json:"args,omitempty"`

	// harnessArgs start the disposable harness-mode instance of the
	// conformance Job: the wire on $(MEMORY_ADAPTER_LISTEN) and the harness
	// protocol on $(MEMORY_ADAPTER_HARNESS_LISTEN), each with its token
	// file. Without a harness, every case needing one is NotApplicable and
	// the run cannot pass.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	HarnessArgs []string `json:"harnessArgs"`

	// port is where the wire listens, in both runs. Defaults to 8080; the
	// Service always exposes it as port 8080.
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// harnessPort is where the harness-mode instance serves the harness
	// protocol. Defaults to 8081; it must differ from port.
	// +optional
	// +kubebuilder:default=8081
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	HarnessPort int32 `json:"harnessPort,omitempty"`

	// env are environment variables taken from Secrets in the MemoryAdapter's
	// namespace, set in both runs. The kubelet resolves them; the operator
	// never reads them. Names starting with MEMORY_ADAPTER_ and POD_NAME are
	// the operator's.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Env []ExternalSecretEnv `json:"env,omitempty"`
}

// ExternalSecretEnv is one environment variable of an External server whose
// value is a key of a Secret.
type ExternalSecretEnv struct {
	// name is the variable's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('MEMORY_ADAPTER_') && self != 'POD_NAME'",message="env names starting with MEMORY_ADAPTER_, and POD_NAME, are set by the operator"
	Name string `json:"name"`

	// secretKeyRef names the Secret and key holding the value.
	// +required
	SecretKeyRef SecretKeySelector `json:"secretKeyRef"`
}

// SecretKeySelector names one key of a Secret in the MemoryAdapter's
// namespace, both parts required.
type SecretKeySelector struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key is the Secret data key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// KhiveOptions configure the Khive backend: the adapter starts
// `<command> mcp <args> --db <volume>/khive.db --namespace <scope>` as its
// child and speaks MCP to it over stdin and stdout (docs/adapters/khive.md).
// The backend is experimental until it has run against a real kkernel.
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
	// +listType=atomic
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
