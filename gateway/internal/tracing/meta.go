package tracing

import (
	"bytes"
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// The _meta keys of the W3C trace context (SEP-414: unprefixed).
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// metaTrace returns the caller's _meta.traceparent and tracestate (from
// meta, or from the object metaJSON when meta is nil); "" for one that is
// absent or not a string.
func metaTrace(meta map[string]any, metaJSON json.RawMessage) (tp, ts string) {
	if meta != nil {
		tp, _ = meta[metaTraceparent].(string)
		ts, _ = meta[metaTracestate].(string)
		return tp, ts
	}
	if len(metaJSON) == 0 {
		return "", ""
	}
	jsonscan.Object(metaJSON, func(key []byte, escaped bool, val []byte) bool {
		k := string(key)
		if escaped {
			if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
				return true
			}
		}
		switch k {
		case metaTraceparent:
			_ = json.Unmarshal(val, &tp)
		case metaTracestate:
			_ = json.Unmarshal(val, &ts)
		}
		return true
	})
	return tp, ts
}

// injectMeta returns the _meta to send upstream: the caller's (meta, or
// metaJSON when meta is nil) with traceparent and tracestate replaced by
// tp and ts (ts "" removes it). meta is copied, never modified; a metaJSON
// is rewritten as bytes when its keys are plain, else decoded into a map.
func injectMeta(meta map[string]any, metaJSON json.RawMessage, tp, ts string) (map[string]any, json.RawMessage) {
	if meta == nil && len(metaJSON) > 0 {
		if out, ok := rewriteMetaJSON(metaJSON, tp, ts); ok {
			return nil, out
		}
		if json.Unmarshal(metaJSON, &meta) != nil {
			meta = nil // not an object: the relay reports it
			return nil, metaJSON
		}
	}
	out := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	out[metaTraceparent] = tp
	delete(out, metaTracestate)
	if ts != "" {
		out[metaTracestate] = ts
	}
	return out, nil
}

// rewriteMetaJSON rewrites the object obj with traceparent and tracestate
// first and the caller's members after them, less the caller's
// traceparent and tracestate. ok=false when obj is not one valid object or
// has an escaped key (which might spell one of the two).
func rewriteMetaJSON(obj json.RawMessage, tp, ts string) (json.RawMessage, bool) {
	out := make([]byte, 0, len(obj)+len(tp)+len(ts)+32)
	out = append(out, `{"traceparent":`...)
	out = jsonscan.AppendString(out, tp)
	if ts != "" {
		out = append(out, `,"tracestate":`...)
		out = jsonscan.AppendString(out, ts)
	}
	plain := true
	ok := jsonscan.Object(obj, func(key []byte, escaped bool, val []byte) bool {
		if escaped {
			plain = false
			return false
		}
		if bytes.Equal(key, []byte(metaTraceparent)) || bytes.Equal(key, []byte(metaTracestate)) {
			return true
		}
		out = append(out, ',', '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		out = append(out, val...)
		return true
	})
	if !ok || !plain {
		return nil, false
	}
	return append(out, '}'), true
}
