package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// PoolOf exposes a Store's pool to the external tests.
func PoolOf(s *Store) *pgxpool.Pool { return s.pool }

// DefaultConnectTimeout gives the external tests the connect timeout Open
// sets when the URL sets none.
const DefaultConnectTimeout = defaultConnectTimeout
