package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ShutdownWait bounds Shutdown when its context has no deadline: the
// spans not exported by then are dropped.
const ShutdownWait = 5 * time.Second

// Options configure New. A nil *Options means defaults.
type Options struct {
	// Getenv reads the environment; nil means os.Getenv. The exporter and
	// the resource read the process environment whatever it is: only the
	// decision to trace (ParseEnv) goes through Getenv.
	Getenv func(string) string
	// Version is the service.version resource attribute ("" leaves it out).
	Version string
}

// Tracer makes the gateway's spans. A nil *Tracer, and one the environment
// left off, makes none and costs a nil check a call.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// New returns the tracer the OTEL_* environment asks for (see ParseEnv):
// off (nil, nil) unless traces are to be exported, else an OTLP/HTTP
// exporter behind a batch span processor, with the resource of the
// environment (service.name defaults to "gatehouse"). Nothing is dialed
// before the first batch. An environment it cannot use is an *EnvError.
func New(ctx context.Context, o *Options) (*Tracer, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	env, err := ParseEnv(opts.Getenv)
	if err != nil || !env.On {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "gatehouse")}
	if opts.Version != "" {
		attrs = append(attrs, attribute.String("service.version", opts.Version))
	}
	// Later detectors win: the environment's service name and attributes
	// over the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource of OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	var eopts []otlptracehttp.Option
	if env.Protocol == "http/json" {
		eopts = append(eopts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	}
	exp, err := otlptracehttp.New(ctx, eopts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{tp: tp, tracer: tp.Tracer("github.com/gatehouse-dev/gatehouse/gateway")}, nil
}

// On reports whether t makes spans.
func (t *Tracer) On() bool { return t != nil && t.tp != nil }

// Shutdown exports the spans still queued and stops the exporter, within
// ctx's deadline or ShutdownWait. Spans ended after it are dropped.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ShutdownWait)
		defer cancel()
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flushing spans: %w", err)
	}
	return nil
}

// traceContext is the only propagator: W3C traceparent and tracestate.
// Baggage is not read or sent.
var traceContext propagation.TraceContext

// parent returns the context a call's server span starts from: the
// caller's _meta.traceparent when it is valid (as OTel's MCP conventions
// say), else the caller's traceparent header; and the header's span as a
// link when both are there and differ. An invalid traceparent is ignored.
func parent(ctx context.Context, hdr http.Header, tp, ts string) (context.Context, []trace.Link) {
	var fromHeader trace.SpanContext
	if hdr != nil && hdr.Get("Traceparent") != "" {
		fromHeader = trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(hdr)))
	}
	if tp != "" {
		mc := propagation.MapCarrier{"traceparent": tp}
		if ts != "" {
			mc["tracestate"] = ts
		}
		if sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), mc)); sc.IsValid() {
			var links []trace.Link
			if fromHeader.IsValid() && !fromHeader.Equal(sc) {
				links = []trace.Link{{SpanContext: fromHeader}}
			}
			return trace.ContextWithRemoteSpanContext(ctx, sc), links
		}
	}
	if fromHeader.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, fromHeader), nil
	}
	return ctx, nil
}

// errorType is the error.type of a failed upstream call: the JSON-RPC
// error code, or the gateway's code for the failure.
func errorType(err error) string {
	var rpc *jsonrpc.Error
	var te *toolset.Error
	switch {
	case errors.As(err, &rpc):
		return strconv.FormatInt(rpc.Code, 10)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &te) && te.Code != "":
		return te.Code
	}
	return "_OTHER"
}
