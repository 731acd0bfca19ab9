// Package gateway wires Gatehouse's packages into `gatehouse serve`: it
// reads the config of CONTRACTS.md §4, loads the plugins, connects their
// servers through a toolset, and serves the aggregated tool map through the
// hardened server with the journal, the firewall and approvals under every
// call.
//
// Config files are strict: an unknown field, a wrong type or an unsafe
// value is a *ConfigError naming the file, the field and the fix.
package gateway
