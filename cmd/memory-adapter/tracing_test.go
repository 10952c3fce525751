package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func TestTracingEnabled(t *testing.T) {
	cases := map[string]struct {
		// env is the process's environment.
		env map[string]string
		// on says whether traces are exported.
		on bool
		// usage says the variables are refused.
		usage bool
	}{
		"nothing set":                  {},
		"an endpoint":                  {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true},
		"a traces endpoint":            {env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true},
		"the otlp exporter":            {env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		"exporter none over endpoint":  {env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		"a list with otlp":             {env: map[string]string{"OTEL_TRACES_EXPORTER": "none, otlp"}, on: true},
		"the SDK disabled":             {env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}},
		"the SDK not disabled":         {env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		"an exporter not built in":     {env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, usage: true},
		"gRPC":                         {env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_EXPORTER": "otlp"}, usage: true},
		"gRPC for traces only":         {env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, usage: true},
		"http/protobuf for traces":     {env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true},
		"disabled wins over a refusal": {env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "zipkin"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			on, err := tracingEnabled(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.usage {
				t.Fatalf("error %v, want one: %v", err, tc.usage)
			}
			if on != tc.on {
				t.Errorf("enabled %v, want %v", on, tc.on)
			}
		})
	}
}

// collector is an OTLP/HTTP receiver that keeps the bodies posted to /v1/traces.
type collector struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *collector) all() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.bodies, nil)
}

// TestStartTracingExportsOnStop sends one span to a real OTLP/HTTP receiver: the spans
// still batched are flushed by stopTracing, under the service name the variables give.
func TestStartTracingExportsOnStop(t *testing.T) {
	cases := map[string]struct {
		// serviceName is OTEL_SERVICE_NAME; "" leaves it unset.
		serviceName string
		// want is the service.name the export must carry.
		want string
	}{
		"the default service name":   {want: defaultServiceName},
		"OTEL_SERVICE_NAME honoured": {serviceName: "team-a-memory", want: "team-a-memory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &collector{}
			hs := httptest.NewServer(c)
			t.Cleanup(hs.Close)
			t.Setenv("OTEL_SDK_DISABLED", "")
			t.Setenv("OTEL_TRACES_EXPORTER", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", hs.URL+"/v1/traces")
			t.Setenv("OTEL_SERVICE_NAME", tc.serviceName)
			log := slog.New(slog.DiscardHandler)
			tr, err := startTracing(context.Background(), log, &backendConfig{Backend: "sqlite"})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Provider == nil || tr.Backend != "sqlite" || tr.Scope != "default" {
				t.Fatalf("tracing %+v, want a provider for backend sqlite, scope default", tr)
			}
			_, span := tr.Provider.Tracer("test").Start(context.Background(), "span-to-export")
			span.End()
			if got := c.all(); len(got) != 0 {
				t.Fatalf("exported before stop: the test would not show the flush")
			}
			stopTracing(tr.Provider, log)
			got := c.all()
			if !bytes.Contains(got, []byte("span-to-export")) || !bytes.Contains(got, []byte(tc.want)) {
				t.Errorf("the receiver got %q, want the span under service.name %q", got, tc.want)
			}
		})
	}
}

func TestStartTracingOffHasNoProvider(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := startTracing(context.Background(), slog.New(slog.DiscardHandler), &backendConfig{Backend: "redis", Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Provider != nil {
		t.Errorf("tracing off gave provider %T, want none (nothing wrapped)", tr.Provider)
	}
	stopTracing(tr.Provider, slog.New(slog.DiscardHandler))
}
