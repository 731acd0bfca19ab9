// Package telemetry is the catalogue of the gateway's metrics, recorded
// through the OpenTelemetry metrics SDK, and the gateway's instruments
// (NewInstruments: a meter provider whose reader is the OpenTelemetry
// Prometheus exporter, the store queries made at scrape time, and the
// /metrics handler).
//
//	ins := telemetry.NewInstruments(st, life, countSessions)
//	m := ins.Metrics
//
//	transfer := m.Tool("bank__transfer") // once per served tool
//	transfer.ObserveCall(telemetry.OutcomeOK, time.Since(start))
//	m.ObserveCall(telemetry.UnknownTool, "denied", time.Since(start))
//
//	mux.Handle("GET /metrics", ins.Handler()) // on its own listener
//
// # Families
//
// [New] creates the gateway's instruments in an OpenTelemetry meter and
// returns a [Metrics] whose methods the gateway calls:
//
//	gatehouse_calls_total{tool,outcome}        counter    ObserveCall
//	gatehouse_call_duration_seconds{tool}      histogram  ObserveCall
//	gatehouse_upstream_up{server}              gauge      SetUpstreamUp, RemoveUpstream
//	gatehouse_drift_events_total{server,kind}  counter    DriftEvent
//	gatehouse_sessions                         gauge      SetSessionsSource (or SessionOpened, SessionClosed)
//	gatehouse_notifications_dropped_total{server,kind}  counter  NotificationDropped
//	gatehouse_upstream_sessions_capped_total{server,cap}  counter  UpstreamSessionCapped
//	gatehouse_approvals_pending                gauge      SetApprovalsPendingSource
//	gatehouse_journal_lag_seconds              gauge      SetJournalSource
//
// The instruments carry these names verbatim, with no unit: the exporter
// is told to add no suffix (the counters' names have their _total), no
// otel_scope_* label and no target_info, so the Prometheus exposition is
// the one Gatehouse has always written. The histogram's buckets are
// [LatencyBuckets]. The exposition puts each family's labels in the order
// above (the Prometheus client would sort them by name) and its series in
// the order of their label values. A family with no series yet is not
// written at all (the Prometheus client writes no family without a
// sample).
//
// The gauges are observed when a reader collects (a scrape): upstream
// health from what SetUpstreamUp last recorded, sessions from the source
// given to SetSessionsSource, and the last two from the functions given to
// their Set...Source methods; until such a source is set, and whenever it
// fails, the family has no data point, never a made-up value.
//
// # Label values
//
// Every label value is a series that lives as long as the meter provider,
// so label values come from small, closed sets that the gateway controls:
// a tool is a projected tool name, or [UnknownTool] for a name that is not
// one (a caller-chosen name never becomes a label value); an outcome is an
// Outcome constant ([OutcomeOK], ...) or a refusal code of
// docs/reference/refusals.md; a server is a name from the operator's configuration; a drift kind
// is a Drift constant ([DriftQuarantined], ...); a cap is a Capped
// constant ([CappedServer], [CappedSubject]). As a last line of defence
// each instrument keeps at most 10,000 series (the SDK's cardinality
// limit): beyond it, new label values are counted in one series labelled
// otel_metric_overflow="true". Invalid UTF-8 in a label value becomes
// U+FFFD, byte by byte.
//
// # OTLP
//
// [OTLPFromEnv] reads the standard OTEL_* environment variables and, when
// they ask for it (OTEL_METRICS_EXPORTER=otlp, or an
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT),
// returns the meter provider options that also export the same
// instruments over OTLP/HTTP, periodically; [Instruments.Close] sends the
// last export and stops. It is off by default: no exporter and no
// goroutine.
//
// # Hot path
//
// [Metrics.ObserveCall] allocates nothing once its tool and outcome have
// been seen: each series' attribute set is computed once and kept in an
// immutable map read through an atomic pointer. A [ToolMetrics] handle
// from [Metrics.Tool] has its tool's sets resolved once, and records an
// [OutcomeOK] call with no lookup at all. Exemplars are off (the text
// format does not carry them). All methods are safe for concurrent use.
package telemetry
