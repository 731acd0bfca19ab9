package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// The kinds of entry.
const (
	// KindCall is a call sent upstream (or answered from the journal), its
	// Outcome "ok", "tool_error", "rpc_error", "error" or "no_answer".
	KindCall = "call"
	// KindRefusal is a call the gateway refused; Outcome is the refusal
	// code (or "unknown_tool").
	KindRefusal = "refusal"
	// KindApprovalRequested is an approval asked for a call; Detail holds
	// its approval ID.
	KindApprovalRequested = "approval.requested"
	// KindApprovalDecided is an operator's decision; Subject is who
	// decided, Outcome "approved" or "denied", Detail the approval ID.
	KindApprovalDecided = "approval.decided"
	// KindTrust is a server's listing trusted by an operator (Subject).
	KindTrust = "trust"
	// KindDrift is a drift observed in a server's listing.
	KindDrift = "drift"
	// KindPurge is a subject's journal records and approvals purged by
	// an operator; Detail holds the subject purged and the rows deleted.
	KindPurge = "purge"
	// KindConnection is an upstream server found lost ("lost") or back
	// ("up").
	KindConnection = "connection"
	// KindConnectionsList, KindConnectionsRevoke and KindConnectionsRekey
	// are an operator's `gatehouse connections list`, `revoke` and `rekey`
	// on the token vault; Detail holds the subject, server and how many
	// connections (never a token).
	KindConnectionsList   = "connections.list"
	KindConnectionsRevoke = "connections.revoke"
	KindConnectionsRekey  = "connections.rekey"
	// KindConnectionsConnect is an operator's `gatehouse connect SERVER`:
	// the service connection stored; Detail holds the tools listed.
	KindConnectionsConnect = "connections.connect"
	// KindConnectFlow is the end of a subject's connect flow (a connect
	// URL opened in a browser): Subject the flow's subject, Server the
	// upstream, Outcome "connected" (its token set stored) or
	// "another_identity" (the browser proved another subject: nothing
	// stored, the flow spent); Detail holds the proof ("token", "openid",
	// "none") and, when connected, the upstream account ('' unknown).
	KindConnectFlow = "connect.flow"
	// KindConfigReload is the configuration read again. Gatehouse has no
	// reload today; the kind is reserved.
	KindConfigReload = "config.reload"
)

// OperatorChain is the chain the operators' commands (gatehouse approvals,
// trust, runs purge) append to, serialized by the store.
const OperatorChain = "operator"

// hashDomain separates an entry's hash from every other SHA-256 Gatehouse
// computes.
const hashDomain = "gatehouse/audit/entry/v1"

// Hash returns the hash of e (hex SHA-256): over a length-prefixed encoding
// of its chain, seq, time (ms), kind, subject, server, tool, arguments
// digest, outcome, duration (µs), instance, detail and previous hash. The
// store's ID and e.Hash itself are not covered. Times and durations are
// taken as stored: round them first (Round).
func Hash(e store.AuditEntry) string {
	var buf [512]byte // an entry without a long detail is encoded here, not on the heap
	b := buf[:0]
	b = appendString(b, hashDomain)
	b = appendString(b, e.Chain)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(msOf(e.At)))
	b = appendString(b, e.Kind)
	b = appendString(b, e.Subject)
	b = appendString(b, e.Server)
	b = appendString(b, e.Tool)
	b = appendString(b, e.ArgsDigest)
	b = appendString(b, e.Outcome)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Duration.Microseconds()))
	b = appendString(b, e.Instance)
	b = appendString(b, string(e.Detail))
	b = appendString(b, e.PrevHash)
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Round returns e with its time and duration as the store keeps them
// (UTC milliseconds, microseconds), so that its hash survives the store.
func Round(e store.AuditEntry) store.AuditEntry {
	if !e.At.IsZero() {
		e.At = time.UnixMilli(e.At.UnixMilli()).UTC()
	}
	e.Duration = e.Duration.Truncate(time.Microsecond)
	if len(e.Detail) == 0 {
		e.Detail = nil
	}
	return e
}

// Link numbers e as the entry after head and hashes it.
func Link(e store.AuditEntry, head store.AuditHead) store.AuditEntry {
	e = Round(e)
	e.Chain, e.Seq, e.PrevHash = head.Chain, head.Last+1, head.Hash
	e.Hash = Hash(e)
	return e
}

// ArgsDigest returns the SHA-256 (hex) of a call's arguments in canonical
// JSON (RFC 8785), so that the same arguments give the same digest however
// they were written; arguments that are not canonicalizable JSON are
// digested as sent, prefixed "raw:". Absent arguments digest as {}.
// Arguments already in canonical form (the common case: a client's JSON
// encoder sorts an object's keys and writes no blanks) are digested as
// they are, without building their canonical form again (isCanonical).
func ArgsDigest(args json.RawMessage) string {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if isCanonical(args) {
		sum := sha256.Sum256(args)
		return hex.EncodeToString(sum[:])
	}
	c, err := pin.Canonical(args)
	prefix := ""
	if err != nil {
		c, prefix = args, "raw:"
	}
	sum := sha256.Sum256(c)
	return prefix + hex.EncodeToString(sum[:])
}

// Detail encodes v (a map or struct) as an entry's Detail, or nil when it
// cannot (it never fails an entry).
func Detail(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
