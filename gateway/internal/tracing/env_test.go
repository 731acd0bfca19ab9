package tracing

import (
	"errors"
	"testing"
)

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Env
	}{
		{"nothing set: off", nil, Env{}},
		{"resource only: off", map[string]string{"OTEL_SERVICE_NAME": "gw", "OTEL_RESOURCE_ATTRIBUTES": "a=b"}, Env{}},
		{"exporter otlp", map[string]string{EnvTracesExporter: "otlp"}, Env{On: true, Protocol: "http/protobuf"}},
		{"exporter OTLP, spaces", map[string]string{EnvTracesExporter: " OTLP "}, Env{On: true, Protocol: "http/protobuf"}},
		{"endpoint", map[string]string{EnvEndpoint: "http://127.0.0.1:4318"}, Env{On: true, Endpoint: "http://127.0.0.1:4318", Protocol: "http/protobuf"}},
		{"traces endpoint wins", map[string]string{EnvEndpoint: "http://a:1", EnvTracesEndpoint: "https://b:2/v1/traces"},
			Env{On: true, Endpoint: "https://b:2/v1/traces", Protocol: "http/protobuf"}},
		{"none wins over an endpoint", map[string]string{EnvTracesExporter: "none", EnvEndpoint: "http://a:1"}, Env{}},
		{"none in a list", map[string]string{EnvTracesExporter: "otlp,none"}, Env{}},
		{"disabled wins", map[string]string{EnvSDKDisabled: "TRUE", EnvTracesExporter: "otlp", EnvEndpoint: "http://a:1"}, Env{}},
		{"disabled false", map[string]string{EnvSDKDisabled: "false", EnvTracesExporter: "otlp"}, Env{On: true, Protocol: "http/protobuf"}},
		{"json", map[string]string{EnvTracesExporter: "otlp", EnvProtocol: "http/json"}, Env{On: true, Protocol: "http/json"}},
		{"traces protocol wins", map[string]string{EnvTracesExporter: "otlp", EnvProtocol: "grpc", EnvTracesProtocol: "http/protobuf"}, Env{On: true, Protocol: "http/protobuf"}},
		{"off: a bad protocol is not read", map[string]string{EnvProtocol: "carrier-pigeon"}, Env{}},
		{"ratio sampler", map[string]string{EnvTracesExporter: "otlp", EnvSampler: "parentbased_traceidratio", EnvSamplerArg: "0.25"}, Env{On: true, Protocol: "http/protobuf"}},
		{"ratio without arg", map[string]string{EnvTracesExporter: "otlp", EnvSampler: "traceidratio"}, Env{On: true, Protocol: "http/protobuf"}},
	} {
		got, err := ParseEnv(getenv(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseEnv = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// Every way the environment can be wrong is an *EnvError naming the
// variable.
func TestParseEnvErrors(t *testing.T) {
	on := func(kv ...string) map[string]string {
		m := map[string]string{EnvTracesExporter: "otlp"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		var_ string
	}{
		{"disabled not a boolean", map[string]string{EnvSDKDisabled: "yes"}, EnvSDKDisabled},
		{"unknown exporter", map[string]string{EnvTracesExporter: "zipkin"}, EnvTracesExporter},
		{"console exporter", map[string]string{EnvTracesExporter: "otlp,console"}, EnvTracesExporter},
		{"empty list element", map[string]string{EnvTracesExporter: "otlp,"}, EnvTracesExporter},
		{"endpoint not a URL", on(EnvEndpoint, "http://[::1"), EnvEndpoint},
		{"endpoint without scheme", map[string]string{EnvTracesEndpoint: "127.0.0.1:4318"}, EnvTracesEndpoint},
		{"endpoint ftp", map[string]string{EnvTracesEndpoint: "ftp://collector/v1/traces"}, EnvTracesEndpoint},
		{"endpoint without host", map[string]string{EnvEndpoint: "http:///v1"}, EnvEndpoint},
		{"endpoint with a query", map[string]string{EnvEndpoint: "http://c:4318/?x=1"}, EnvEndpoint},
		{"endpoint with a fragment", map[string]string{EnvTracesEndpoint: "http://c:4318/v1/traces#x"}, EnvTracesEndpoint},
		{"grpc", on(EnvProtocol, "grpc"), EnvProtocol},
		{"traces grpc", on(EnvTracesProtocol, "grpc"), EnvTracesProtocol},
		{"unknown protocol", on(EnvTracesProtocol, "http/xml"), EnvTracesProtocol},
		{"unknown sampler", on(EnvSampler, "sometimes"), EnvSampler},
		{"jaeger_remote sampler", on(EnvSampler, "jaeger_remote"), EnvSampler},
		{"ratio not a number", on(EnvSampler, "traceidratio", EnvSamplerArg, "half"), EnvSamplerArg},
		{"ratio above 1", on(EnvSampler, "parentbased_traceidratio", EnvSamplerArg, "1.5"), EnvSamplerArg},
		{"ratio below 0", on(EnvSampler, "traceidratio", EnvSamplerArg, "-0.1"), EnvSamplerArg},
	} {
		_, err := ParseEnv(getenv(tc.env))
		var ee *EnvError
		if !errors.As(err, &ee) || ee.Var != tc.var_ || ee.Reason == "" {
			t.Errorf("%s: err = %v, want an *EnvError for %s", tc.name, err, tc.var_)
		}
	}
}

// Off, New starts nothing: no exporter, no goroutine (TestMain's goleak).
func TestNewOff(t *testing.T) {
	for _, env := range []map[string]string{nil, {EnvTracesExporter: "none", EnvEndpoint: "http://127.0.0.1:1"}, {EnvSDKDisabled: "true", EnvEndpoint: "http://127.0.0.1:1"}} {
		tr, err := New(t.Context(), &Options{Getenv: getenv(env)})
		if err != nil || tr != nil || tr.On() {
			t.Errorf("env %v: New = %v, %v; want nil (off)", env, tr, err)
		}
		ctx, call := tr.Start(t.Context(), "s", nil, nil, nil)
		if call != nil || ctx != t.Context() {
			t.Errorf("env %v: an off tracer started a span", env)
		}
		call.Event("admission")
		call.Cleared(true)
		call.End(Outcome{Label: "ok"})
		if err := tr.Shutdown(t.Context()); err != nil {
			t.Error(err)
		}
	}
	if _, err := New(t.Context(), &Options{Getenv: getenv(map[string]string{EnvTracesExporter: "jaeger"})}); err == nil {
		t.Error("New took an unknown exporter")
	}
}
