package v1alpha1

// AdapterTracing turns on OpenTelemetry tracing of the adapter's calls: one span per data
// call (operation, backend, scope, outcome, problem type; never item content, a query, an
// item id or a token), the backend call as its child, continuing the W3C trace context a
// client sends. The operator passes it to the adapter container as the standard OTEL_*
// variables (docs/operator.md, Tracing).
type AdapterTracing struct {
	// endpoint is the URL the adapter posts its spans to with OTLP over HTTP
	// (protobuf), the whole traces path included, for example
	// http://otel-collector.observability:4318/v1/traces. It must be http or
	// https and carry no credentials: this object is readable by whoever may
	// read the MemoryAdapter.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="endpoint must be an absolute http or https URL"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="endpoint must not carry credentials"
	Endpoint string `json:"endpoint"`

	// samplingPermille is the share of new traces the adapter records, in
	// thousandths: 1000 records every call, 0 none. A call that continues a
	// client's trace follows that trace's own decision (the parent-based
	// sampler). Omitted, every new trace is recorded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	SamplingPermille *int32 `json:"samplingPermille,omitempty"`
}
