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
//
// The tool (-tool, default echo) is called with -args (a JSON object) plus,
// with -payload N, an N-byte ASCII string in argument -field (default
// "message"). The arguments are encoded once, up front. With -verify a call
// whose first text content is not that string counts as an error; a result
// with isError always does.
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
// from /proc/PID/stat, each also per measured call. RSS comes from VmRSS in
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
// The exit code is 0 on success, 1 when the run could not be made, 2 for a
// bad command line and 3 when any call or session open failed.
package main
