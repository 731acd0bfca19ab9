// Package telemetry is the catalogue of the gateway's metrics, exposed
// with package internal/metrics, and the gateway's instruments
// (NewInstruments: the catalogue in its registry, with the store queries
// made at scrape time, and the /metrics handler).
//
//	reg := metrics.NewRegistry(nil)
//	m := telemetry.New(reg) // registers every gatehouse_* family
//	m.SetApprovalsPendingSource(countPendingApprovals)
//	m.SetJournalSource(oldestStartedRecord)
//
//	transfer := m.Tool("bank__transfer") // once per served tool
//	transfer.ObserveCall(telemetry.OutcomeOK, time.Since(start))
//	m.ObserveCall(telemetry.UnknownTool, "denied", time.Since(start))
//
//	mux.Handle("GET /metrics", reg.Handler()) // on its own listener
//
// # Families
//
// [New] registers the gateway's metric families in a [metrics.Registry]
// and returns a [Metrics] whose methods the gateway calls:
//
//	gatehouse_calls_total{tool,outcome}        counter    ObserveCall
//	gatehouse_call_duration_seconds{tool}      histogram  ObserveCall
//	gatehouse_upstream_up{server}              gauge      SetUpstreamUp, RemoveUpstream
//	gatehouse_drift_events_total{server,kind}  counter    DriftEvent
//	gatehouse_sessions                         gauge      SessionOpened, SessionClosed
//	gatehouse_notifications_dropped_total{server,kind}  counter  NotificationDropped
//	gatehouse_upstream_sessions_capped_total{server,cap}  counter  UpstreamSessionCapped
//	gatehouse_approvals_pending                gauge      SetApprovalsPendingSource
//	gatehouse_journal_lag_seconds              gauge      SetJournalSource
//
// The last two are computed at scrape time from the function given to
// their Set...Source method; until it is set, and whenever it fails, the
// family is exposed with its HELP and TYPE lines and no sample (see
// [metrics.Registry.NewGaugeFuncOptional]), never with a made-up value.
//
// # Label values
//
// Every label value is a series that lives as long as the registry, so
// label values come from small, closed sets that the gateway controls: a
// tool is a projected tool name, or [UnknownTool] for a name that is not
// one (a caller-chosen name never becomes a label value); an outcome is an
// Outcome constant ([OutcomeOK], ...) or a refusal code from CONTRACTS.md
// §4; a server is a name from the operator's configuration; a drift kind
// is a Drift constant ([DriftQuarantined], ...); a cap is a Capped
// constant ([CappedServer], [CappedSubject]).
//
// # Hot path
//
// [Metrics.ObserveCall] allocates nothing once its tool and outcome have
// been seen. A [ToolMetrics] handle from [Metrics.Tool] has the lookups for
// its tool done once, and records an [OutcomeOK] call with no lookup at all.
// All methods are safe for concurrent use.
package telemetry
