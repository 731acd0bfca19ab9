package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

// BenchDrift measures what a fleet's drift record costs a store with 50
// servers of 40 tools (contracts of about 600 bytes): recording a new
// observation (ObserveNew), seeing one again (ObserveSame: only its
// LastSeenAt moves), and the two reads replicas poll, OpenObservations
// without entries and DriftHeads. s must be empty; the benchmark fills it.
func BenchDrift(b *testing.B, s store.Store) {
	ctx := context.Background()
	const servers, tools = 50, 40
	listing := func(tag string) store.Baseline {
		out := store.Baseline{store.BaselineKey{Kind: store.KindInstructions}: {Value: "fp-instructions"}}
		for i := range tools {
			name := fmt.Sprintf("tool_%02d", i)
			out[store.BaselineKey{Kind: store.KindTool, Name: name}] = store.BaselineEntry{
				Value:    fmt.Sprintf("%064x", i) + tag,
				Contract: []byte(`{"name":"` + name + `","description":"` + strings.Repeat("d", 500) + `","inputSchema":{"type":"object"}}`),
			}
		}
		return out
	}
	for i := range servers {
		id := fmt.Sprintf("plugin/server-%02d", i)
		if err := s.PutServer(ctx, store.Server{ID: id, Name: id, Type: "http", URL: "https://x.example/mcp"}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.SaveBaseline(ctx, id, listing("")); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.ObserveListing(ctx, store.Observation{ServerID: id, Listing: "L", BaselineVersion: 1, SeenBy: "gw-1",
			Entries: listing("-drift"), Changes: []byte(`[]`), Drifted: true}); err != nil {
			b.Fatal(err)
		}
	}
	drifted := listing("-drift")
	b.Run("ObserveNew", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, added, err := s.ObserveListing(ctx, store.Observation{ServerID: "plugin/server-00", Listing: fmt.Sprint("N", i),
				BaselineVersion: 1, SeenBy: "gw-2", Entries: drifted, Changes: []byte(`[]`), Drifted: true}); err != nil || !added {
				b.Fatal(added, err)
			}
		}
	})
	b.Run("ObserveSame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, added, err := s.ObserveListing(ctx, store.Observation{ServerID: "plugin/server-01", Listing: "L",
				BaselineVersion: 1, SeenBy: "gw-1", Entries: drifted, Changes: []byte(`[]`), Drifted: true}); err != nil || added {
				b.Fatal(added, err)
			}
		}
	})
	b.Run("OpenObservations", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if open, err := s.OpenObservations(ctx, "", false); err != nil || len(open) < servers {
				b.Fatal(len(open), err)
			}
		}
	})
	b.Run("DriftHeads", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if heads, err := s.DriftHeads(ctx); err != nil || len(heads) != servers {
				b.Fatal(len(heads), err)
			}
		}
	})
}
