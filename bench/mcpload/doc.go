// Command mcpload is a load harness for MCP servers and gateways, built on the
// official go-sdk client.
//
// It opens -sessions client sessions and drives each in a closed loop (call a
// tool, wait for the answer, call again) through -warmup and then a measured
// window of -duration (or -calls measured calls, -duration then being the
// most it may take). It reports calls/s, latency p50/p90/p99/max and errors,
// and the CPU time used in the window by itself, by the whole machine and by
// the process -rss-pid, whose RSS it also samples. Then it closes every
// session and exits.
//
//	mcpload -url http://127.0.0.1:8080/mcp -sessions 8 -payload 64 -verify
//	mcpload -url http://127.0.0.1:8080/mcp -header 'Authorization: Bearer x' -json
//	mcpload -cmd './echoserver -stdio' -sessions 4            # a process per session
//	mcpload -cmd './echoserver -stdio' -sessions 4 -shared    # one, 4 concurrent callers
//	mcpload -url http://127.0.0.1:8080/mcp -idle 10000 -hold 10s -rss-pid 1234
//	mcpload -report results.jsonl                              # markdown tables
//	mcpload -report -medians rounds.jsonl                      # medians over rounds
//	mcpload -url http://127.0.0.1:8080/mcp -token-file tok -keys pool:16 -verify
//
// The tool (-tool, default echo) is called with -args (a JSON object) plus,
// with -payload N, an N-byte ASCII string in argument -field (default
// "message"). The arguments are encoded once, up front. With -verify a call
// whose first text content is not that string counts as an error; a result
// with isError always does.
//
// # Keyed calls and tokens
//
// With -keys every call carries _meta.idempotencyKey, the unit of work a
// journaling gateway records: -keys unique sends a fresh key each call
// ("mcpload-<run>-<loop>-<n>", <run> 16 random hex digits, so two runs never
// share a key); -keys pool:N gives each loop N keys taken in turn, so that
// from its (N+1)th call on every call repeats a key whose call has finished
// and a gateway answers it from its journal without calling upstream. A key
// always carries the same arguments (else a gateway answers key_reused):
// with -payload, key i's payload begins with "k<i>-", so that -verify checks
// a replay against the answer to its own key's call. The result counts the
// measured calls that repeated a key (repeats); whether the gateway replayed
// them is not visible in the answer, so count the upstream's calls to know.
//
// -token-file F sends the token in F (one line, RFC 6750 syntax; blanks and
// line ends around it are ignored) as "Authorization: Bearer", so that a
// token is never on a command line; -header can send any other header.
//
// # What is measured
//
// A call is measured if it completes inside the window [start, end]. Every
// measured successful call's latency (from just before CallTool to just after
// it returns) is kept in memory, 8 bytes a call, and sorted at the end, so the
// percentiles are exact: the nearest-rank p-quantile is the smallest latency
// that at least p of the calls did not exceed (sorted[ceil(n·p)-1]), always one
// of the measured latencies, never interpolated. Failed calls count in calls
// and errors but not in the latencies or in calls_per_sec, which is
// successful calls divided by the window. A session whose connection closes
// ends its loop and is reported as lost.
//
// CPU figures are deltas over the window: this process from getrusage, the
// machine from /proc/stat (all cores, busy = not idle or iowait) and -rss-pid
// from /proc/PID/stat (user+system), each also per measured call: the
// target's CPU time per call is what -report -medians prints in µs. RSS comes from VmRSS in
// /proc/PID/status, sampled every 100 ms (250 ms in idle mode).
//
// # Idle mode
//
// With -idle N it opens N sessions (-open-concurrency at a time), makes one
// call on each, holds them all open for -hold while sampling the RSS of
// -rss-pid, reports the RSS before, the maximum and at the end, and closes
// them. Each HTTP session keeps its standalone SSE stream (a GET, so one TCP
// connection) open unless -no-sse.
//
// # Where it connects
//
// Only to -url: no proxy from the environment, no redirects followed, and
// unless -allow-remote only to loopback addresses (checked on the URL and
// again on the address each connection dials). All sessions share one HTTP
// transport with enough idle connections per host that loops reuse them.
//
// -report -medians renders results of several rounds (the same label and
// cell measured more than once) as one table of medians: calls/s, p50, p99,
// the target's CPU per call, and calls/s against the first and the second
// label of the files (bench/hardened.sh writes direct, then the plain
// gateway).
//
// The exit code is 0 on success, 1 when the run could not be made, 2 for a
// bad command line and 3 when any call or session open failed.
package main
