// Package metrics is a small, dependency-free implementation of the
// Prometheus text exposition format, version 0.0.4, for the Gatehouse
// gateway.
//
//	reg := metrics.NewRegistry(nil)
//	calls := reg.NewCounterVec("app_calls_total", "Tool calls by tool and outcome.", "tool", "outcome")
//	ok := calls.With("bank__charge", "ok") // resolve once, reuse on every call
//	ok.Inc()
//	mux.Handle("GET /metrics", reg.Handler())
//
// We deliberately do not depend on prometheus/client_golang: the gateway
// needs counters, gauges and fixed-bucket histograms served on one HTTP
// endpoint, and nothing more. The gateway's catalogue of metrics is in
// package gateway/internal/telemetry.
//
// # Registry
//
// A [Registry] holds metric families; there is no package-level state, so a
// process (or a test) may have as many registries as it likes. A family is
// registered once with its name, help text and label names, and the
// registry serves every family through [Registry.Handler] (or writes it with
// [Registry.WriteTo]) in a deterministic order: families sorted by name,
// series within a family sorted by their label values.
//
// # Programmer errors panic
//
// Registration validates its arguments and panics on a programmer error: a
// metric name not matching [a-zA-Z_:][a-zA-Z0-9_:]*, a label name not
// matching [a-zA-Z_][a-zA-Z0-9_]* or beginning with "__", a duplicate label
// name, a histogram label named "le", unsorted or non-finite buckets, or a
// name (including a histogram's _bucket, _sum and _count series) that is
// already registered. Metrics are registered once at start-up from constant
// names, so a panic there is found by the first test that builds the
// registry, the way regexp.MustCompile and http.ServeMux.Handle behave.
// Likewise, passing the wrong number of label values to With, or a negative
// value to Counter.Add, panics.
//
// # Hot path and cardinality
//
// Counters, gauges and histogram buckets are atomics; observing never takes
// a lock. A labelled series is looked up with a vector's With method, which
// returns a handle that may be kept and reused: a pre-resolved handle costs
// one or two atomic operations per observation and allocates nothing. With
// itself, for a series that exists, reads an immutable map through an
// atomic pointer: no lock and no allocation (label values longer than about
// 120 bytes in total cost one allocation for the lookup key). Creating a
// series takes a mutex.
//
// Every label value creates a series that lives until it is deleted, so label
// values must come from a small, closed set that Gatehouse itself controls:
// projected tool names (already restricted to [a-zA-Z0-9_-]{1,64}), server
// names from the operator's configuration, outcome codes and drift kinds
// defined in code. Never pass a caller's free text (an unknown tool name a
// caller asked for, an error message, a subject) as a label value; map it
// to one fixed value of the closed set first. As a last line of defence
// each vector holds at most [RegistryOptions].MaxSeriesPerVec series;
// beyond that, new label values are counted in one more series whose label
// values are all [OverflowLabelValue], so nothing is lost and memory stays
// bounded.
//
// # Format details
//
// Label values are escaped as the format requires (backslash, double quote
// and line feed become \\, \" and \n); help text escapes backslash and line
// feed. Invalid UTF-8 in a label value or help text is replaced, byte by
// byte, with U+FFFD, and label values that become equal that way share one
// series. An empty help text omits the HELP line. A gauge registered with
// [Registry.NewGaugeFuncOptional] has only its HELP and TYPE lines while its
// function reports no value. Histogram _count is the +Inf bucket read in
// the same pass, so the two always agree; _sum may miss observations in
// flight during the scrape. Values are written in the shortest form that
// parses back exactly (+Inf, -Inf and NaN as such); counters of whole
// increments are exact integers up to 2^64.
package metrics
