// Package vault is Gatehouse's token vault: the token sets of upstream
// authorizations (identity/upstream) kept in the shared store
// (store.ConnectionStore), encrypted at rest, shared by replicas and
// refreshed by one replica at a time.
//
//	keys, err := vault.LoadKeys(nil) // GATEHOUSE_SECRET_KEY, GATEHOUSE_SECRET_KEY_PREVIOUS
//	v := vault.New(st, keys, nil)
//	h, err := upstream.New(hc, &upstream.Options{Tokens: v, Server: "github", Subject: sub, ...})
//
// # What it promises
//
//   - Every token set is sealed with AES-256-GCM under the current key, a
//     random nonce per seal, the additional data binding it to the format
//     version, the key's ID and (for connections) the server and subject:
//     a row copied to another subject or server, or altered in any byte,
//     does not open. The store holds only the blob and the key's ID (a
//     domain-separated hash prefix, not the key).
//   - A blob that does not open is an [*OpenError] wrapping [ErrSealed]
//     ([ErrUnknownKey] too when the key is not held): never a panic, and no
//     error carries a token or a blob.
//   - Rotation: the previous key (GATEHOUSE_SECRET_KEY_PREVIOUS, or the
//     key file's second line) still opens what it sealed; [Vault.Rekey]
//     re-encrypts every such row under the current key (compare-and-swap
//     per row, so a concurrent refresh wins), after which the previous key
//     can be dropped.
//   - One refresher at a time: the Vault is an [upstream.RefreshLocker]; a
//     Handler whose token expired takes the store's refresh lease of
//     (server, subject), re-reads the row (another replica may have
//     refreshed it) and only then refreshes and writes back.
//
// # What it does not promise
//
//   - Whoever holds the key and the store holds every token.
//   - Token sets are plaintext in the memory of the process using them.
//   - The server names, subjects, key IDs and times of connections are not
//     encrypted: a copy of the store shows who connected to what, and when.
package vault
