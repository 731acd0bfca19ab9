// Package sqlite is the default store.Store: one SQLite file through
// modernc.org/sqlite (pure Go, driver name "sqlite").
//
//	st, err := sqlite.Open(ctx, "/var/lib/gatehouse/gatehouse.db", &store.Options{Durability: store.DurabilityPower})
//	if err != nil { ... }
//	defer st.Close()
//
// Open creates the file if needed and migrates its schema; a DSN
// ("sqlite:PATH?durability=power") opens the same through store/dsn.
// Open creates the file's folder too, but only when that folder's parent
// exists (the default .gatehouse/gatehouse.db beside a config, data/g.db):
// a deeper missing path is refused, naming its first missing folder, so a
// typo in a parent is caught instead of building a tree. With
// store.Options.MustExist it creates nothing: a path that holds no
// Gatehouse store is refused with store.ErrNoStore before SQLite opens it
// for writing (see probe).
//
// The store is private to its user. A file Open creates is made 0600 and a
// directory it creates 0700, whatever the process's umask; SQLite gives the
// -wal and -shm files the mode of the database file, so they are 0600 too.
// An existing file or directory keeps the mode its operator gave it (Open
// never loosens or tightens it: chmod 600 the three files to make an older
// store private).
//
// Open switches the file to journal_mode=WAL (a property of the file,
// retried while another process holds the lock), and every connection runs
// with foreign_keys=ON, a busy timeout (Options.BusyTimeout, default 10 s)
// so writers from several processes wait for each other instead of
// failing, and synchronous=NORMAL
// (durability "process": survives a crash of the process, may lose the last
// commits on power loss) or synchronous=FULL (durability "power"). Every
// transaction starts with BEGIN IMMEDIATE, so a write transaction takes the
// write lock up front and never fails half-way on a lock upgrade. Several
// processes may share one file on a local filesystem (not over NFS). The
// writers of one process (its transactions and single-statement writes)
// take turns, first come first served, before they ask SQLite for the
// lock: SQLite's busy handler sleeps and polls and is not fair, so only
// writers of different processes meet there, and the busy timeout bounds
// only that wait.
//
// Every write of the process goes on one connection of its own, kept for
// the store's life, a write returning rows (UPDATE ... RETURNING) too;
// reads go on the pool (Options.MaxConns connections). A read that holds
// every connection of the pool (a long export, say) does not hold up the
// journal, and the writer's page cache stays valid from one transaction
// to the next: a connection that writes after another one committed must
// drop its cache and read its pages again. A read that finds every
// connection of the pool taken waits for one with its context (see
// readSlots).
//
// A statement is not interrupted by its context once it runs: the context
// is checked before each statement (one whose context is done is not run)
// and before a transaction's commit (a transaction whose context ended is
// rolled back), not watched during it. SQLite statements are local and
// short, and a wait for another process's write lock is bounded by the
// busy timeout; watching the context cost a goroutine per statement.
//
// The store checkpoints the WAL from a goroutine of its own, not inside a
// writer's commit as SQLite does by default, so that its writers never
// wait for the checkpoint's copy and fsyncs; the WAL stays bounded under a
// steady load (see checkpoint.go).
//
// On linux/amd64 and linux/arm64 SQLite's pread, pwrite and the fcntl
// locks that never wait are made as raw system calls, through the unix
// VFS's table of system calls (rawsys_linux.go): the same calls with the
// same results, without telling the Go scheduler that each may block,
// which woke its monitor thread on every commit of a process that goes
// idle between them. fsync and every call that may wait are libc's.
//
// SQLite has one writer at a time, so journal Claims and Completes made
// concurrently would queue for the write lock and pay a commit (an fsync
// with durability "power") each. Group commit, on by default
// (store.Options.GroupCommit), lets those arriving while a commit is under
// way share the next transaction; a lone caller runs alone, undelayed.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/commitdelay"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// Store is a store.Store on one SQLite file.
type Store struct {
	*sqlstore.Store
	path string
}

var _ store.Store = (*Store)(nil)

// dialect is SQLite's dialect: BLOB for bytes; AUTOINCREMENT keys (never
// reused, unlike a plain rowid; audit_log's was the plain row ID since
// migration 13, and audit_blocks', which replaced it in 14, is too: see
// there why neither is ever reused); BEGIN IMMEDIATE
// (set on every connection) serialises migrators.
var dialect = sqlstore.Dialect{Name: "sqlite", Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}

// driverDSN returns the modernc.org/sqlite DSN Open uses for path. Its
// connections do not checkpoint the WAL on their own (wal_autocheckpoint
// is 0): a Store runs its checkpoints from a goroutine of its own.
func driverDSN(path string, o store.Options) string {
	sync := "NORMAL"
	if o.Durability == store.DurabilityPower {
		sync = "FULL"
	}
	busy := o.BusyTimeout.Milliseconds()
	if busy <= 0 {
		busy = defaultBusyTimeout.Milliseconds()
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy, 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+sync+")")
	// The store checkpoints the WAL itself, off its writers' path
	// (checkpoint.go): a handle opened with this DSN must too.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

// Open opens (creating it if needed) the SQLite file at path and migrates
// its schema to the latest version. opts may be nil. With
// opts.MustExist, a path that holds no Gatehouse store is refused with an
// error wrapping store.ErrNoStore and nothing is created.
func Open(ctx context.Context, path string, opts *store.Options) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(strings.ToLower(path), "file:") {
		return nil, fmt.Errorf("%w: sqlite path %q (want a file path without '?')", store.ErrInvalid, path)
	}
	o, err := store.ResolveOptions(store.DSN{}, opts)
	if err != nil {
		return nil, err
	}
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	installRawSyscalls() // SQLite's reads, writes and locks as raw system calls (rawsys_linux.go)
	connDSN := driverDSN(path, o)
	if o.MustExist {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("%w: sqlite %q: %w", store.ErrUnavailable, path, err)
		}
		if err := probe(ctx, abs, busy); err != nil {
			return nil, err
		}
		// mode=rw: should the file go between the probe and here,
		// SQLite fails instead of creating it.
		connDSN = fileURI(abs) + "?mode=rw&" + strings.TrimPrefix(driverDSN("", o), "?")
	} else if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("%w: sqlite %q: %w", store.ErrUnavailable, path, err)
	}
	db, err := sql.Open("sqlite", connDSN)
	if err != nil {
		return nil, fmt.Errorf("%w: sqlite %q: %w", store.ErrUnavailable, path, err)
	}
	maxConns := o.MaxConns
	if maxConns == 0 {
		maxConns = 4
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	// The writer's own connection, kept open for the store's life.
	wdb, err := sql.Open("sqlite", connDSN)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: sqlite %q: %w", store.ErrUnavailable, path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	adapter := &sqlDB{db: db, stmts: &stmtCache{db: db}, reads: make(readSlots, maxConns), wdb: wdb, writer: make(chan struct{}, 1)}
	if err := adapter.openWriter(ctx); err != nil {
		db.Close()
		wdb.Close()
		return nil, fmt.Errorf("%w: sqlite %q: %w", store.ErrUnavailable, path, err)
	}
	if err := retryBusy(ctx, busy, func() error { return setup(ctx, db) }); err != nil {
		db.Close()
		wdb.Close()
		return nil, fmt.Errorf("%w: sqlite %q: %w", store.ErrUnavailable, path, err)
	}
	if err := retryBusy(ctx, busy, func() error { return sqlstore.Migrate(ctx, adapter, dialect, 0) }); err != nil {
		db.Close()
		wdb.Close()
		if errors.Is(err, store.ErrSchemaTooNew) {
			return nil, fmt.Errorf("sqlite %q: %w", path, err)
		}
		return nil, fmt.Errorf("store: sqlite %q: %w", path, err)
	}
	adapter.cp = newCheckpointer(db, adapter.reads, adapter.lockWriter, adapter.unlockWriter, defaultCheckpoints())
	return &Store{Store: sqlstore.New(adapter, sqlstore.Options{Now: o.Now, GroupCommit: o.GroupCommit.Enabled(true), Delay: commitdelay.Defaults(),
		SweepQuery: sweepQuery, AuditBlocks: true}), path: path}, nil
}

const defaultBusyTimeout = 10 * time.Second

// createPrivate creates path's directory when it is missing and its
// parent exists (mkdirPrivate; 0700) and the file itself (0600, empty:
// SQLite makes an empty file a new database) when it does not exist. The
// modes are set with chmod after creation, so no umask narrows or widens
// them. What exists already is left as it is.
func createPrivate(path string) error {
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the database file: %w", err)
	}
	err = f.Chmod(0o600)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("making the database file private: %w", err)
	}
	return nil
}

// mkdirPrivate creates dir (0700) when it is missing and its parent
// exists. A deeper missing path is refused, naming its first missing
// folder: the store builds one folder, the one it lives in, never a tree
// (a typo in a parent would otherwise be built silently).
func mkdirPrivate(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if _, err := os.Stat(parent); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the folder %s does not exist (a new store's folder is created only inside a folder that exists: check the path, or create the folders above it)", firstMissing(parent))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created by another process meanwhile: theirs
		}
		return fmt.Errorf("creating the store directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("making the store directory private: %w", err)
	}
	return nil
}

// setup switches the file to WAL (a persistent property of the file, so
// connections opened later inherit it) and checks that it took.
func setup(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, WAL could not be enabled", mode)
	}
	return nil
}

// retryBusy runs fn until it returns something other than SQLITE_BUSY or
// SQLITE_LOCKED, or until limit passes. SQLite does not always call the
// busy handler: switching a new file to WAL or reading it while another
// process initialises it can fail at once with SQLITE_BUSY.
func retryBusy(ctx context.Context, limit time.Duration, fn func() error) error {
	deadline := time.Now().Add(limit)
	wait := time.Millisecond
	for {
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}

func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// SQLDB returns the underlying *sql.DB of reads, the pool (for tests and
// diagnostics); the store's writes have a connection of their own.
func (s *Store) SQLDB() *sql.DB { return s.DB().(*sqlDB).db }

// sqlDB adapts *sql.DB to sqlstore.DB, its statements prepared once
// (stmtCache).
type sqlDB struct {
	db    *sql.DB // the pool: reads
	stmts *stmtCache
	reads readSlots // one per connection of db
	// wdb is one connection, for every write (Exec and InTx): its page
	// cache stays valid from one write to the next, where a pool's
	// connection taking a write after another connection's commit must
	// drop its cache and read the pages again.
	wdb    *sql.DB
	wconn  *sql.Conn // wdb's one connection, taken for the store's life
	wstmts *stmtCache
	raw    *rawInserts // wconn's driver statements for InTx's Inserts
	// begin, commit and rollback are the writer's transaction
	// statements, prepared once on wconn: database/sql's transactions
	// compile BEGIN and COMMIT again for each one, and watch its context
	// with a goroutine of their own, which a statement detached from its
	// context (see detach) does not need.
	begin, commit, rollback *sql.Stmt
	// writer admits one of this handle's transactions and pool-level
	// writes at a time, first come first served. SQLite's own lock is
	// not fair: a writer waiting in its busy handler sleeps and polls,
	// and writers of the same process that keep taking the lock in
	// between can make it wait past the busy timeout (SQLITE_BUSY) under
	// load. Queued here, they never meet in the busy handler; other
	// processes on the file still do.
	writer chan struct{}
	// cp runs the WAL's checkpoints (nil while Open migrates).
	cp *checkpointer
}

// lockWriter waits for the writer's turn, or ctx.
func (d *sqlDB) lockWriter(ctx context.Context) error {
	select {
	case d.writer <- struct{}{}:
		return nil
	default:
	}
	select {
	case d.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *sqlDB) unlockWriter() { <-d.writer }

type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// querier runs sqlstore's statements. Every statement is detached from
// its context's cancellation (see detach), except a multi-row query on the
// pool (whole, false): a long read there stays interruptible.
type querier struct {
	q     sqlQuerier
	whole bool // in a transaction: Query is detached too
	// raw, in the writer's transaction, runs Insert's cached statements
	// on the driver's own (see rawInserts).
	raw *rawInserts
}

// detach returns the context a statement runs in: ctx's values without its
// cancellation, or ctx's error when it is already done (the statement is
// then not run). modernc.org/sqlite watches a cancellable context with a
// goroutine per statement (and database/sql one per row set), which on the
// journal's path cost more CPU than the statement itself. A SQLite
// statement is local and short, and its wait for another process's write
// lock is bounded by the busy timeout, so once started it runs to its end;
// a transaction whose context ends is rolled back at its next statement or
// before its commit (InTx).
func detach(ctx context.Context) (context.Context, error) {
	if ctx.Done() == nil {
		return ctx, nil // never cancelled: nothing to detach
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	ctx, err := detach(ctx)
	if err != nil {
		return 0, err
	}
	res, err := q.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Insert implements sqlstore.Inserter.
func (q querier) Insert(ctx context.Context, query string, args ...any) (int64, int64, error) {
	ctx, err := detach(ctx)
	if err != nil {
		return 0, 0, err
	}
	if q.raw != nil {
		if cq, ok := q.q.(cachedQuerier); ok && cq.c.peek(query) != nil {
			n, last, err := q.raw.insert(ctx, query, args)
			if !errors.Is(err, errRawFull) {
				return n, last, err
			}
		}
	}
	res, err := q.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, 0, err
	}
	last, err := res.LastInsertId()
	return n, last, err
}

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

// errRow is the row of a statement that was not run.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	ctx, err := detach(ctx)
	if err != nil {
		return errRow{err}
	}
	return row{q.q.QueryRowContext(ctx, query, args...)}
}

// rows are a query's rows; release, if set, gives back the read slot
// they hold when they are first closed, which is at the latest when Next
// has returned false (as database/sql gives back its connection then, and
// pgx too): a caller that reads every row and then runs another statement
// before its deferred Close does not hold a slot meanwhile.
type rows struct {
	*sql.Rows
	release func()
}

func (r *rows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *rows) Close() {
	_ = r.Rows.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if q.whole {
		var err error
		if ctx, err = detach(ctx); err != nil {
			return nil, err
		}
	}
	rs, err := q.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return &rows{Rows: rs}, nil
}

// Prepare implements sqlstore.Preparer: query is prepared on the writer's
// connection, so that transactions find it in the cache.
func (d *sqlDB) Prepare(ctx context.Context, query string) { d.wstmts.get(ctx, query) }

func (d *sqlDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := d.lockWriter(ctx); err != nil {
		return 0, err
	}
	defer d.unlockWriter()
	n, err := querier{q: cachedQuerier{c: d.wstmts}}.Exec(ctx, query, args...)
	if n > 0 {
		d.cp.committed()
	}
	return n, err
}

// Insert implements sqlstore.Inserter, as Exec does.
func (d *sqlDB) Insert(ctx context.Context, query string, args ...any) (int64, int64, error) {
	if err := d.lockWriter(ctx); err != nil {
		return 0, 0, err
	}
	defer d.unlockWriter()
	n, last, err := querier{q: cachedQuerier{c: d.wstmts}}.Insert(ctx, query, args...)
	if n > 0 {
		d.cp.committed()
	}
	return n, last, err
}

// QueryRow runs a read on the pool, holding a read slot until the row is
// scanned; a statement that writes (an UPDATE ... RETURNING, say) goes on
// the writer's connection, in the writer's queue, as Exec does.
func (d *sqlDB) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if writes(query) {
		if err := d.lockWriter(ctx); err != nil {
			return errRow{err}
		}
		r := querier{q: cachedQuerier{c: d.wstmts}}.QueryRow(ctx, query, args...)
		return &heldRow{r: r, release: func() {
			d.unlockWriter()
			d.cp.committed()
		}}
	}
	if err := d.reads.enter(ctx); err != nil {
		return errRow{err}
	}
	return &heldRow{r: querier{q: cachedQuerier{c: d.stmts}}.QueryRow(ctx, query, args...), release: d.reads.leave}
}

// Query runs a read on the pool, holding a read slot until its rows are
// closed.
func (d *sqlDB) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if err := d.reads.enter(ctx); err != nil {
		return nil, err
	}
	rs, err := querier{q: cachedQuerier{c: d.stmts}}.Query(ctx, query, args...)
	if err != nil {
		d.reads.leave()
		return nil, err
	}
	r := rs.(*rows)
	r.release = d.reads.leave
	return r, nil
}

// InTx runs fn in a transaction (BEGIN IMMEDIATE) on the writer's
// connection, with its BEGIN, COMMIT and ROLLBACK prepared once (not
// database/sql's Tx). Its statements are detached from their contexts
// (see detach); a transaction whose context ends before its commit is
// rolled back and fails with the context's error, and one whose fn fails
// or panics is rolled back too: the connection never stays in it.
func (d *sqlDB) InTx(ctx context.Context, fn func(tx sqlstore.Querier) error) error {
	return d.inTx(ctx, fn, false)
}

// InTxLazy implements sqlstore.LazyTxer: InTx whose commit does not
// hasten the next checkpoint (see checkpoint.go).
func (d *sqlDB) InTxLazy(ctx context.Context, fn func(tx sqlstore.Querier) error) error {
	return d.inTx(ctx, fn, true)
}

func (d *sqlDB) inTx(ctx context.Context, fn func(tx sqlstore.Querier) error, lazy bool) error {
	bctx, err := detach(ctx)
	if err != nil {
		return err
	}
	if err := d.lockWriter(ctx); err != nil {
		return err
	}
	defer d.unlockWriter()
	if _, err := d.begin.ExecContext(bctx); err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed { // fn failed or panicked, the context ended, or COMMIT failed
			_, _ = d.rollback.ExecContext(bctx)
		}
	}()
	if err := fn(querier{q: cachedQuerier{c: d.wstmts, inTx: true}, whole: true, raw: d.raw}); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := d.commit.ExecContext(bctx); err != nil {
		return err
	}
	committed = true
	if lazy {
		d.cp.committedLazy()
	} else {
		d.cp.committed()
	}
	return nil
}

// openWriter takes wdb's connection for the store's life and prepares the
// writer's transaction statements on it.
func (d *sqlDB) openWriter(ctx context.Context) error {
	c, err := d.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	d.wconn, d.wstmts, d.raw = c, &stmtCache{db: c}, &rawInserts{conn: c}
	for _, s := range []struct {
		st   **sql.Stmt
		text string
	}{{&d.begin, "BEGIN IMMEDIATE"}, {&d.commit, "COMMIT"}, {&d.rollback, "ROLLBACK"}} {
		if *s.st, err = c.PrepareContext(ctx, s.text); err != nil {
			d.closeWriter()
			return err
		}
	}
	return nil
}

// closeWriter closes what openWriter opened.
func (d *sqlDB) closeWriter() {
	if d.raw != nil {
		d.raw.close()
	}
	if d.wstmts != nil {
		d.wstmts.close()
	}
	for _, st := range []*sql.Stmt{d.begin, d.commit, d.rollback} {
		if st != nil {
			_ = st.Close()
		}
	}
	if d.wconn != nil {
		_ = d.wconn.Close()
	}
}

func (d *sqlDB) Close() error {
	d.cp.close()
	d.stmts.close()
	d.closeWriter()
	return errors.Join(d.db.Close(), d.wdb.Close())
}
