package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Export formats.
const (
	// FormatJSONL writes one JSON object per entry per line (JSONEntry).
	FormatJSONL = "jsonl"
	// FormatOTel writes one OTLP/JSON logs document
	// (ExportLogsServiceRequest, {"resourceLogs": [...]}) per line, each
	// holding one log record: a line can be POSTed as is to a collector's
	// /v1/logs.
	FormatOTel = "otel"
)

// JSONEntry is an entry as FormatJSONL writes it.
type JSONEntry struct {
	ID         int64           `json:"id"`
	Chain      string          `json:"chain"`
	Seq        int64           `json:"seq"`
	At         time.Time       `json:"at"`
	Kind       string          `json:"kind"`
	Subject    string          `json:"subject,omitempty"`
	Server     string          `json:"server,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	ArgsDigest string          `json:"argsDigest,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	DurationMS float64         `json:"durationMs,omitempty"`
	Instance   string          `json:"instance,omitempty"`
	Detail     json.RawMessage `json:"detail,omitempty"`
	PrevHash   string          `json:"prevHash,omitempty"`
	Hash       string          `json:"hash"`
}

// ToJSON returns e as FormatJSONL writes it.
func ToJSON(e store.AuditEntry) JSONEntry {
	return JSONEntry{ID: e.ID, Chain: e.Chain, Seq: e.Seq, At: e.At, Kind: e.Kind, Subject: e.Subject, Server: e.Server,
		Tool: e.Tool, ArgsDigest: e.ArgsDigest, Outcome: e.Outcome, DurationMS: float64(e.Duration.Microseconds()) / 1000,
		Instance: e.Instance, Detail: e.Detail, PrevHash: e.PrevHash, Hash: e.Hash}
}

// ExportOptions configure Export.
type ExportOptions struct {
	// Filter selects the entries (its AfterID and Limit are Export's to
	// set while paging).
	Filter store.AuditFilter
	// Format is FormatJSONL (the default) or FormatOTel.
	Format string
	// Page is how many entries are read at a time; 0 means 1,000.
	Page int
}

// Export writes the entries o.Filter selects to w, in ID order, a page at
// a time, and returns how many it wrote.
func Export(ctx context.Context, st store.AuditStore, w io.Writer, o *ExportOptions) (int64, error) {
	var opts ExportOptions
	if o != nil {
		opts = *o
	}
	if opts.Page <= 0 {
		opts.Page = 1000
	}
	enc := json.NewEncoder(w)
	var line func(store.AuditEntry) any
	switch opts.Format {
	case "", FormatJSONL:
		line = func(e store.AuditEntry) any { return ToJSON(e) }
	case FormatOTel:
		line = func(e store.AuditEntry) any { return OTelLogs(e) }
	default:
		return 0, fmt.Errorf("audit: export format %q: want %q or %q", opts.Format, FormatJSONL, FormatOTel)
	}
	f := opts.Filter
	f.Limit = opts.Page
	var n int64
	for {
		page, err := st.ListAudit(ctx, f)
		if err != nil {
			return n, err
		}
		for _, e := range page {
			if err := enc.Encode(line(e)); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < opts.Page {
			return n, nil
		}
		f.AfterID = page[len(page)-1].ID
	}
}

// OTLP/JSON types (opentelemetry-proto's JSON mapping): what FormatOTel
// writes.
type (
	otelDoc struct {
		ResourceLogs []otelResourceLogs `json:"resourceLogs"`
	}
	otelResourceLogs struct {
		Resource  otelResource    `json:"resource"`
		ScopeLogs []otelScopeLogs `json:"scopeLogs"`
	}
	otelResource struct {
		Attributes []otelKV `json:"attributes"`
	}
	otelScopeLogs struct {
		Scope      otelScope       `json:"scope"`
		LogRecords []otelLogRecord `json:"logRecords"`
	}
	otelScope struct {
		Name string `json:"name"`
	}
	otelLogRecord struct {
		TimeUnixNano         string    `json:"timeUnixNano"`
		ObservedTimeUnixNano string    `json:"observedTimeUnixNano"`
		SeverityNumber       int       `json:"severityNumber"`
		SeverityText         string    `json:"severityText"`
		EventName            string    `json:"eventName"`
		Body                 otelValue `json:"body"`
		Attributes           []otelKV  `json:"attributes"`
	}
	otelKV struct {
		Key   string    `json:"key"`
		Value otelValue `json:"value"`
	}
	otelValue struct {
		StringValue *string  `json:"stringValue,omitempty"`
		IntValue    *string  `json:"intValue,omitempty"` // int64 as a decimal string, per the JSON mapping
		DoubleValue *float64 `json:"doubleValue,omitempty"`
	}
)

func str(k, v string) otelKV { return otelKV{Key: k, Value: otelValue{StringValue: &v}} }
func i64(k string, v int64) otelKV {
	s := strconv.FormatInt(v, 10)
	return otelKV{Key: k, Value: otelValue{IntValue: &s}}
}

// OTelLogs returns e as one OTLP/JSON logs document with one log record:
// the event name and body are the kind, the attributes the entry's fields
// (gatehouse.audit.*), the subject as enduser.id and the tool as
// gen_ai.tool.name.
func OTelLogs(e store.AuditEntry) any {
	ns := strconv.FormatInt(e.At.UnixNano(), 10)
	attrs := []otelKV{
		str("gatehouse.audit.chain", e.Chain),
		i64("gatehouse.audit.seq", e.Seq),
		i64("gatehouse.audit.id", e.ID),
		str("gatehouse.audit.kind", e.Kind),
		str("gatehouse.audit.hash", e.Hash),
	}
	if e.PrevHash != "" {
		attrs = append(attrs, str("gatehouse.audit.prev_hash", e.PrevHash))
	}
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, str(k, v))
		}
	}
	add("enduser.id", e.Subject)
	add("gatehouse.server", e.Server)
	add("gen_ai.tool.name", e.Tool)
	add("gatehouse.args_digest", e.ArgsDigest)
	add("gatehouse.outcome", e.Outcome)
	if e.Duration > 0 {
		ms := float64(e.Duration.Microseconds()) / 1000
		attrs = append(attrs, otelKV{Key: "gatehouse.duration_ms", Value: otelValue{DoubleValue: &ms}})
	}
	add("gatehouse.audit.detail", string(e.Detail))
	res := []otelKV{str("service.name", "gatehouse")}
	if e.Instance != "" {
		res = append(res, str("service.instance.id", e.Instance))
	}
	kind := e.Kind
	return otelDoc{ResourceLogs: []otelResourceLogs{{
		Resource: otelResource{Attributes: res},
		ScopeLogs: []otelScopeLogs{{
			Scope: otelScope{Name: "gatehouse.audit"},
			LogRecords: []otelLogRecord{{TimeUnixNano: ns, ObservedTimeUnixNano: ns, SeverityNumber: 9, SeverityText: "INFO",
				EventName: "gatehouse.audit." + kind, Body: otelValue{StringValue: &kind}, Attributes: attrs}},
		}},
	}}}
}
