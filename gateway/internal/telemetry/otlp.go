package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// ErrOTLPConfig is wrapped by the errors of OTLPFromEnv: an OTEL_*
// variable that asks for what Gatehouse cannot do, or that is malformed.
var ErrOTLPConfig = errors.New("telemetry: OTLP metrics configuration")

// OTLPFromEnv returns the options of a meter provider (for
// NewInstruments) that export the metrics over OTLP/HTTP (protobuf) every
// OTEL_METRIC_EXPORT_INTERVAL (60 s by default), when the standard
// environment variables ask for it: OTEL_METRICS_EXPORTER lists "otlp",
// or, with OTEL_METRICS_EXPORTER unset, OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set. Otherwise (the default) it
// returns none: no exporter, no goroutine. OTEL_METRICS_EXPORTER=none
// turns it off whatever the endpoints say; "prometheus" names the
// /metrics endpoint, always served. The endpoint, headers, timeout,
// compression and TLS files are read from their OTEL_EXPORTER_OTLP_*
// variables by the OpenTelemetry exporter; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES describe the resource (service.name defaults
// to "gatehouse").
//
// OTEL_SDK_DISABLED=true turns it off whatever else is set (as it does
// the traces).
//
// It fails, with an error wrapping ErrOTLPConfig, on an exporter name
// other than otlp, prometheus and none (or none beside another), a
// protocol other than http/protobuf, an endpoint that is not an http or
// https URL with a host, and malformed resource attributes.
func OTLPFromEnv(ctx context.Context) ([]sdkmetric.Option, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil // the SDK off for every signal (the tracer reads the same variable)
	}
	on := false
	if names, set := os.LookupEnv("OTEL_METRICS_EXPORTER"); set && strings.TrimSpace(names) != "" {
		list := strings.Split(names, ",")
		for i := range list {
			list[i] = strings.TrimSpace(list[i])
			switch list[i] {
			case "otlp":
				on = true
			case "prometheus", "none":
			default:
				return nil, fmt.Errorf("%w: OTEL_METRICS_EXPORTER=%q: %q is not an exporter of Gatehouse's metrics (otlp, prometheus or none)", ErrOTLPConfig, names, list[i])
			}
		}
		if slices.Contains(list, "none") && len(list) > 1 {
			return nil, fmt.Errorf("%w: OTEL_METRICS_EXPORTER=%q: none beside another exporter", ErrOTLPConfig, names)
		}
	} else {
		on = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
	}
	if !on {
		return nil, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(name); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("%w: %s=%q: Gatehouse exports metrics over http/protobuf only", ErrOTLPConfig, name, p)
			}
			break // the signal's own variable wins
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if e := os.Getenv(name); e != "" {
			u, err := url.Parse(e)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("%w: %s=%q is not an http or https URL with a host", ErrOTLPConfig, name, e)
			}
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "gatehouse")),
		resource.WithFromEnv(), // later detectors win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w", ErrOTLPConfig, err)
	}
	exp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOTLPConfig, err)
	}
	return []sdkmetric.Option{sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res)}, nil
}
