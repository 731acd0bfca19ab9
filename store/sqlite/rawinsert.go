package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// rawInserts runs the writer's multi-row INSERTs inside its transactions
// (sqlstore.Inserter: the audit trail's batches, 14 parameters a row, up
// to 64 rows) on modernc.org/sqlite's own statements, taken through
// sql.Conn.Raw, with the arguments passed as they are: database/sql's
// Stmt.ExecContext converts and checks every argument, allocates their
// []driver.NamedValue and takes the statement's and the connection's
// locks for each statement. The statements are the same texts as the
// statement cache's, prepared a second time on the writer's connection on
// their first use; the results (rows affected, last insert ID) and errors
// are the driver's, as through database/sql.
//
// A rawInserts is used only in the writer's turn (InTx), which guards its
// fields.
type rawInserts struct {
	conn  *sql.Conn
	stmts map[string]driver.Stmt
	args  []driver.NamedValue // reused from one statement to the next
}

// errRawDriver is a driver connection or statement without the context
// methods modernc.org/sqlite has.
var errRawDriver = errors.New("sqlite: driver connection without PrepareContext or ExecContext")

// insert runs query with args and returns the rows it changed and the last
// insert ID.
func (r *rawInserts) insert(ctx context.Context, query string, args []any) (n, last int64, err error) {
	err = r.conn.Raw(func(dc any) error {
		st := r.stmts[query]
		if st == nil {
			if len(r.stmts) >= maxCachedStmts {
				return errRawFull
			}
			cp, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errRawDriver
			}
			var err error
			if st, err = cp.PrepareContext(ctx, query); err != nil {
				return err
			}
			if r.stmts == nil {
				r.stmts = make(map[string]driver.Stmt)
			}
			r.stmts[query] = st
		}
		ex, ok := st.(driver.StmtExecContext)
		if !ok {
			return errRawDriver
		}
		nv := r.args[:0]
		for i, a := range args {
			if !driver.IsValue(a) {
				v, err := driver.DefaultParameterConverter.ConvertValue(a)
				if err != nil {
					return fmt.Errorf("sql: converting argument $%d type: %w", i+1, err)
				}
				a = v
			}
			nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: a})
		}
		res, err := ex.ExecContext(ctx, nv)
		clear(nv) // keep no entry's strings alive until the next batch
		r.args = nv[:0]
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		last, err = res.LastInsertId()
		return err
	})
	return n, last, err
}

// errRawFull is insert's answer for a statement past maxCachedStmts: the
// caller runs it through database/sql.
var errRawFull = errors.New("sqlite: raw statements full")

// close closes the statements.
func (r *rawInserts) close() {
	if len(r.stmts) == 0 {
		return
	}
	_ = r.conn.Raw(func(any) error {
		for _, st := range r.stmts {
			_ = st.Close()
		}
		return nil
	})
	r.stmts = nil
}
