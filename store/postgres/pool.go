package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// connPool is a minimal pool of pgx connections: at most max open at once,
// idle ones reused, broken ones dropped. It starts no goroutine.
type connPool struct {
	cfg *pgx.ConnConfig
	sem chan struct{}

	mu     sync.Mutex
	idle   []*pgx.Conn
	closed bool
}

var _ sqlstore.DB = (*connPool)(nil)

func newConnPool(cfg *pgx.ConnConfig, max int) *connPool {
	return &connPool{cfg: cfg, sem: make(chan struct{}, max)}
}

func (p *connPool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.sem
		return nil, store.ErrClosed
	}
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !c.IsClosed() {
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return c, nil
}

func (p *connPool) release(c *pgx.Conn) {
	p.mu.Lock()
	keep := !p.closed && !c.IsClosed() && c.PgConn().TxStatus() == 'I'
	if keep {
		p.idle = append(p.idle, c)
	}
	p.mu.Unlock()
	if !keep {
		_ = c.Close(context.Background())
	}
	<-p.sem
}

func (p *connPool) ping(ctx context.Context) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(c)
	return c.Ping(ctx)
}

func (p *connPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.Close(context.Background())
	}
}

// Close implements sqlstore.DB. Connections in use close when released.
func (p *connPool) Close() error {
	p.close()
	return nil
}

func (p *connPool) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer p.release(c)
	tag, err := c.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

type poolRow struct {
	p   *connPool
	c   *pgx.Conn
	r   pgx.Row
	err error
}

func (r *poolRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	err := r.r.Scan(dest...)
	if r.p != nil {
		r.p.release(r.c)
		r.p = nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

func (p *connPool) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	c, err := p.acquire(ctx)
	if err != nil {
		return &poolRow{err: err}
	}
	return &poolRow{p: p, c: c, r: c.QueryRow(ctx, sql, args...)}
}

type poolRows struct {
	pgx.Rows
	p *connPool
	c *pgx.Conn
}

func (r *poolRows) Close() {
	r.Rows.Close()
	if r.p != nil {
		r.p.release(r.c)
		r.p = nil
	}
}

func (p *connPool) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		p.release(c)
		return nil, err
	}
	return &poolRows{Rows: rows, p: p, c: c}, nil
}

// txQuerier runs statements inside one transaction on one connection.
type txQuerier struct{ tx pgx.Tx }

func (q txQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.tx.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (q txQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return &poolRow{r: q.tx.QueryRow(ctx, sql, args...)}
}

func (q txQuerier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return &poolRows{Rows: rows}, nil
}

// InTx implements sqlstore.DB.
func (p *connPool) InTx(ctx context.Context, fn func(tx sqlstore.Querier) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(c)
	return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{}, func(tx pgx.Tx) error {
		return fn(txQuerier{tx})
	})
}
