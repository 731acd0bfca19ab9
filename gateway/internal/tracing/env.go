package tracing

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The environment variables the tracer reads itself. The OTLP exporter and
// the resource read the rest of the standard ones (headers, timeout,
// compression, certificates, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_BSP_*), and the SDK the sampler.
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
)

// Env is what the OTEL_* environment says of traces.
type Env struct {
	// On: traces are exported over OTLP. It is set by
	// OTEL_TRACES_EXPORTER=otlp or by an OTLP endpoint
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT),
	// and cleared by OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true.
	On bool
	// Endpoint is the traces endpoint named in the environment ("": the
	// exporter's default, https://localhost:4318/v1/traces).
	Endpoint string
	// Protocol is "http/protobuf" or "http/json".
	Protocol string
}

// EnvError is a variable of the OTEL_* environment the tracer cannot use.
type EnvError struct {
	Var, Value string
	Reason     string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("tracing: %s=%q: %s", e.Var, e.Value, e.Reason)
}

// ParseEnv reads the variables above through getenv and checks them: a
// value the SDK would ignore or misread is an *EnvError here, so a typo
// never silently turns tracing off or points it elsewhere. Nothing is
// checked while tracing is off, but OTEL_SDK_DISABLED and
// OTEL_TRACES_EXPORTER themselves.
func ParseEnv(getenv func(string) string) (Env, error) {
	var env Env
	switch v := strings.TrimSpace(getenv(EnvSDKDisabled)); strings.ToLower(v) {
	case "true":
		return env, nil
	case "", "false":
	default:
		return env, &EnvError{Var: EnvSDKDisabled, Value: v, Reason: "must be true or false"}
	}
	exporter := strings.TrimSpace(getenv(EnvTracesExporter))
	named := false
	if exporter != "" {
		for part := range strings.SplitSeq(exporter, ",") {
			switch strings.ToLower(strings.TrimSpace(part)) {
			case "none":
				return env, nil
			case "otlp":
				named = true
			case "":
				return env, &EnvError{Var: EnvTracesExporter, Value: exporter, Reason: "an empty exporter name in the list"}
			default:
				return env, &EnvError{Var: EnvTracesExporter, Value: exporter,
					Reason: fmt.Sprintf("exporter %q is not built in: use otlp (or none)", strings.TrimSpace(part))}
			}
		}
	}
	env.Endpoint = firstSet(getenv, EnvTracesEndpoint, EnvEndpoint)
	env.On = named || env.Endpoint != ""
	if !env.On {
		return env, nil
	}
	if env.Endpoint != "" {
		name := EnvTracesEndpoint
		if strings.TrimSpace(getenv(EnvTracesEndpoint)) == "" {
			name = EnvEndpoint
		}
		u, err := url.Parse(env.Endpoint)
		switch {
		case err != nil:
			return env, &EnvError{Var: name, Value: env.Endpoint, Reason: "not a URL"}
		case u.Scheme != "http" && u.Scheme != "https":
			return env, &EnvError{Var: name, Value: env.Endpoint, Reason: "the scheme must be http or https"}
		case u.Host == "":
			return env, &EnvError{Var: name, Value: env.Endpoint, Reason: "no host"}
		case u.RawQuery != "" || u.Fragment != "":
			return env, &EnvError{Var: name, Value: env.Endpoint, Reason: "a query or fragment is not allowed"}
		}
	}
	env.Protocol = firstSet(getenv, EnvTracesProtocol, EnvProtocol)
	protoVar := EnvTracesProtocol
	if strings.TrimSpace(getenv(EnvTracesProtocol)) == "" {
		protoVar = EnvProtocol
	}
	switch env.Protocol {
	case "":
		env.Protocol = "http/protobuf"
	case "http/protobuf", "http/json":
	case "grpc":
		return env, &EnvError{Var: protoVar, Value: env.Protocol, Reason: "OTLP over gRPC is not built in: use http/protobuf (a collector's port 4318)"}
	default:
		return env, &EnvError{Var: protoVar, Value: env.Protocol, Reason: "must be http/protobuf or http/json"}
	}
	return env, checkSampler(getenv)
}

// checkSampler checks OTEL_TRACES_SAMPLER and its argument as the SDK
// reads them (which would log a bad one and sample everything).
func checkSampler(getenv func(string) string) error {
	s := strings.TrimSpace(getenv(EnvSampler))
	arg := strings.TrimSpace(getenv(EnvSamplerArg))
	switch s {
	case "", "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
		return nil
	case "traceidratio", "parentbased_traceidratio":
		if arg == "" {
			return nil // the SDK's default ratio, 1.0
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return &EnvError{Var: EnvSamplerArg, Value: arg, Reason: "the ratio must be a number from 0 to 1"}
		}
		return nil
	}
	return &EnvError{Var: EnvSampler, Value: s,
		Reason: "must be always_on, always_off, traceidratio or their parentbased_ forms"}
}

// firstSet returns the first of the variables that is set, trimmed.
func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}
