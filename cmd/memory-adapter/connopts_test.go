package main

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
)

func TestConnOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		args          []string
		backend, conn string
		// want is the rewritten connection, or with wantErr a part of the error.
		want    string
		wantErr bool
	}{
		"postgres url":               {[]string{"--postgres-sslmode", "require", "--postgres-max-conns=10"}, "postgres", "postgres://u:p@db:5432/mem?sslmode=disable", "postgres://u:p@db:5432/mem?pool_max_conns=10&sslmode=require", false},
		"postgres keyword/value":     {[]string{"--postgres-sslmode", "verify-full"}, "postgres", "host=db user=u password=p sslmode=disable", "host=db user=u password=p sslmode=disable sslmode=verify-full", false},
		"postgres untouched":         {nil, "postgres", "postgres://u:p@db/mem", "postgres://u:p@db/mem", false},
		"redis url":                  {[]string{"--redis-db=3", "--redis-tls", "required", "--redis-pool-size=20"}, "redis", "redis://:p@cache:6379/0", "rediss://:p@cache:6379/3?pool_size=20", false},
		"redis host:port":            {[]string{"--redis-db=0"}, "redis", "cache:6379", "redis://cache:6379/0", false},
		"redis tls disabled":         {[]string{"--redis-tls", "disabled"}, "redis", "rediss://cache:6379", "redis://cache:6379", false},
		"redis untouched":            {nil, "redis", "cache:6379", "cache:6379", false},
		"sqlite has no such options": {nil, "sqlite", "", "", false},
		"unknown sslmode":            {[]string{"--postgres-sslmode", "prefer"}, "postgres", "", "--postgres-sslmode", true},
		"pool too large":             {[]string{"--postgres-max-conns=1000"}, "postgres", "", "1-256", true},
		"postgres flag on redis":     {[]string{"--postgres-sslmode", "require"}, "redis", "", "--backend postgres", true},
		"redis flag on sqlite":       {[]string{"--redis-db=1"}, "sqlite", "", "--backend redis", true},
		"redis db 16":                {[]string{"--redis-db=16"}, "redis", "", "0-15", true},
		"redis tls word":             {[]string{"--redis-tls", "yes"}, "redis", "", "disabled or required", true},
		"bad redis url":              {[]string{"--redis-db=1"}, "redis", "http://u:secret@x", "not a valid redis:// URL", true},
	} {
		t.Run(name, func(t *testing.T) {
			c, fs := parseBackendFlags(t, append([]string{"--backend", tc.backend}, tc.args...)...)
			got, err := "", c.checkOptions(fs)
			if err == nil {
				got, err = c.applyConnection(tc.conn)
			}
			switch {
			case tc.wantErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.wantErr && strings.Contains(err.Error(), "secret"):
				t.Fatalf("the error quotes the connection string: %v", err)
			case !tc.wantErr && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case !tc.wantErr && got != tc.want:
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConnOptionsReachTheDrivers checks that the drivers read the overrides as meant: pgx's
// pool and go-redis parse the rewritten strings into the settings the flags name.
func TestConnOptionsReachTheDrivers(t *testing.T) {
	pg, _ := parseBackendFlags(t, "--backend", "postgres", "--postgres-sslmode", "disable", "--postgres-max-conns=7")
	for _, conn := range []string{"postgres://u:p@db:5432/mem?sslmode=require", "host=db user=u sslmode=require"} {
		out, err := pg.applyConnection(conn)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := pgxpool.ParseConfig(out)
		if err != nil {
			t.Fatalf("pgxpool cannot parse the rewritten connection: %v", err)
		}
		if cfg.MaxConns != 7 || cfg.ConnConfig.TLSConfig != nil {
			t.Fatalf("%s: max conns %d, TLS %v; want 7 and no TLS (sslmode=disable)", conn, cfg.MaxConns, cfg.ConnConfig.TLSConfig != nil)
		}
	}
	rd, _ := parseBackendFlags(t, "--backend", "redis", "--redis-db=5", "--redis-tls", "required", "--redis-pool-size=9")
	out, err := rd.applyConnection("redis://cache:6379")
	if err != nil {
		t.Fatal(err)
	}
	ro, err := goredis.ParseURL(out)
	if err != nil {
		t.Fatalf("go-redis cannot parse the rewritten URL: %v", err)
	}
	if ro.DB != 5 || ro.PoolSize != 9 || ro.TLSConfig == nil {
		t.Fatalf("db %d, pool %d, TLS %v; want 5, 9, TLS", ro.DB, ro.PoolSize, ro.TLSConfig != nil)
	}
}

// parseBackendFlags parses args as the backend part of a command line.
func parseBackendFlags(t *testing.T, args ...string) (*backendConfig, *pflag.FlagSet) {
	t.Helper()
	c := &backendConfig{}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	c.addFlags(fs, "scope")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c, fs
}
