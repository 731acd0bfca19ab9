// Package ephemeral is where a toolset opened without a store keeps its
// server rows, trust baselines and drift observations: a Store in this
// process, for the toolset's life.
//
//	st := ephemeral.New()
//	_ = st.PutServer(ctx, store.Server{ID: "config:bank", Name: "bank"})
//	added, _ := st.SaveBaseline(ctx, "config:bank", store.Baseline{
//		{Kind: store.KindTool, Name: "transfer"}: {Value: fp, Contract: contract},
//	})
//	v, _ := st.BaselineVersion(ctx, "config:bank") // 1
//
// It has the semantics of store.ServerStore and store.DriftStore that
// drift judging relies on: baselines are insert-only, ReplaceBaseline is
// the only way to replace one, every change bumps the server's baseline
// version, and observations are deduplicated and opened and closed by that
// version as in every store (store/storetest's conformance suite states
// them).
package ephemeral
