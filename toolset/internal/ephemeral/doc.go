// Package ephemeral is where a toolset opened without a store keeps its
// server rows and trust baselines: a Store in this process, for the
// toolset's life.
//
//	st := ephemeral.New()
//	_ = st.PutServer(ctx, store.Server{ID: "config:bank", Name: "bank"})
//	added, _ := st.SaveBaseline(ctx, "config:bank", map[string]string{"transfer": fp})
//	v, _ := st.BaselineVersion(ctx, "config:bank") // 1
//
// It has the semantics of store.ServerStore that drift judging relies on:
// baselines are insert-only, clearing is the only way to replace one, and
// every change bumps the server's baseline version.
package ephemeral
