//! Prepared statements whose rows' values the caller keeps ([`Conn::execute_into`]): a
//! workload that reads what it selects (TPC-C's d_next_o_id, i_price, the customers by
//! last name). COM_STMT_EXECUTE answers in binary rows, whose encoding each column's type
//! decides, so the types come from the column definitions: those of the execution, or where
//! a MariaDB that caches metadata left them out (unchanged since it last sent them), those it
//! sent last: at the prepare or at an execution (`keep_definition`), `Conn::stmt_columns`.

use bakeoff_proto::command::Param;
use bakeoff_proto::{
    binary_row, column_type, ColumnType, Fed, Outcome, ProtoError, ResponseReader, RowBuf, Step,
};

use super::conn::{Conn, Stmt};
use super::reader::PacketAt;
use crate::DriverError;

/// The most columns a result set's definitions may give (a prepared statement's count is
/// 16 bits): a server cannot grow the list without end.
const MAX_COLUMNS: usize = u16::MAX as usize;

impl Conn {
    /// Execute a prepared statement and keep its rows' values in `out` (cleared first); a
    /// server error is [`Outcome::Err`], as [`execute`](Self::execute) returns it, with
    /// `out` empty. Several result sets (a CALL) leave the last one's. At most `--max-rows`
    /// rows are kept: a result set past that ends the call, as `query_result`'s does.
    pub async fn execute_into(
        &mut self,
        stmt: &Stmt,
        params: &[Param<'_>],
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        let (types, held) = self.queue_execute(stmt.id, params);
        self.send().await?;
        self.read_kept(stmt.id, (types, held), out).await
    }

    /// Statement `id`'s response into `out` (cleared first), with the column types it
    /// decodes by; the parameter types it was sent with (`queue_execute`'s) settled.
    async fn read_kept(
        &mut self,
        id: u32,
        (types, held): (u64, bool),
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        out.clear();
        let mut columns = match self.cache_metadata {
            true => self.stmt_columns.remove(&id).unwrap_or_default(),
            false => std::mem::take(&mut self.result_columns),
        };
        let outcome = self.read_values(&mut columns, out).await;
        match self.cache_metadata {
            true => drop(self.stmt_columns.insert(id, columns)),
            false => self.result_columns = columns,
        }
        self.settle_types(id, types, held, &outcome);
        if !matches!(outcome, Ok(Outcome::Rows(_))) {
            out.clear();
        }
        outcome
    }

    /// Execute a batch in one round trip (see `Connection::execute_many`): every
    /// COM_STMT_EXECUTE in one write, then each response in order, as `execute_into` reads
    /// one. The server runs each command as it comes, whatever the one before it answered.
    /// Over the compressed protocol, whose frames number the commands, one at a time.
    pub async fn execute_many(
        &mut self,
        batch: &[(&Stmt, &[Param<'_>])],
        outs: &mut [RowBuf],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), DriverError> {
        outcomes.clear();
        crate::batch_fits(batch.len(), outs.len())?;
        if self.zip.is_some() {
            for ((stmt, params), out) in batch.iter().zip(outs.iter_mut()) {
                outcomes.push(self.execute_into(stmt, params, out).await?);
            }
            return Ok(());
        }
        let mut sent = [(0u64, false); crate::MAX_BATCH];
        self.wbuf.clear();
        for ((stmt, params), types) in batch.iter().zip(sent.iter_mut()) {
            *types = self.append_execute(stmt.id, params);
            // Sent with types: the server holds these from now, so a later copy in this
            // batch must not lean on what it held before (settled per reply, in order).
            if !types.1 {
                self.forget_types(stmt.id);
            }
        }
        self.send().await?;
        for (((stmt, _), out), types) in batch.iter().zip(outs.iter_mut()).zip(sent) {
            outcomes.push(self.read_kept(stmt.id, types, out).await?);
        }
        Ok(())
    }

    /// The response, each row decoded into `out` with `columns`' types (replaced by the
    /// definitions the server sends).
    async fn read_values(
        &mut self,
        columns: &mut Vec<ColumnType>,
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        let mut reader = ResponseReader::with_cached_metadata(self.cache_metadata).keeping_values();
        loop {
            let at = match self.buffered_packet() {
                Some(at) => at,
                None => self.read_packet("statement").await?,
            };
            match reader
                .on_packet(self.packet(at))
                .map_err(|e| self.proto(e))?
            {
                Step::More => {}
                Step::Columns => match reader.fed() {
                    Fed::ResultSet { columns: n, defs } => {
                        if defs {
                            columns.clear();
                        } else if columns.len() as u64 != n {
                            return Err(self.proto(unknown_types(n, columns.len())));
                        }
                        out.begin(usize::try_from(n).unwrap_or(usize::MAX));
                    }
                    Fed::Column(_) => self.push_definition(columns, at)?,
                    Fed::Other => {}
                },
                Step::Row => {
                    self.rows_within_cap(out.rows())?;
                    if columns.len() != out.columns() {
                        return Err(self.proto(unknown_types(out.columns() as u64, columns.len())));
                    }
                    binary_row(self.packet(at), columns, out).map_err(|e| self.proto(e))?;
                }
                Step::Done(o) => return Ok(o),
            }
        }
    }

    /// A column definition packet's type, onto `columns`.
    fn push_definition(
        &self,
        columns: &mut Vec<ColumnType>,
        at: PacketAt,
    ) -> Result<(), DriverError> {
        if columns.len() >= MAX_COLUMNS {
            return Err(self.proto(ProtoError::Malformed {
                what: "result set",
                detail: format!("more than {MAX_COLUMNS} column definitions"),
            }));
        }
        let t = column_type(self.packet(at)).map_err(|e| self.proto(e))?;
        columns.push(t);
        Ok(())
    }

    /// The definitions an execution that counts rows (`execute`) was sent, kept for the next
    /// `execute_into`, which the server will not send them again (only on a statement's
    /// first execution, or once its columns changed): a result set whose definitions follow
    /// forgets what was kept, each definition adds its type.
    pub(super) fn keep_definition(
        &mut self,
        id: u32,
        fed: Fed,
        at: PacketAt,
    ) -> Result<(), DriverError> {
        let fresh = matches!(fed, Fed::ResultSet { defs: true, .. });
        if !fresh && !matches!(fed, Fed::Column(_)) {
            return Ok(());
        }
        let mut columns = self.stmt_columns.remove(&id).unwrap_or_default();
        let r = if fresh {
            columns.clear();
            Ok(())
        } else {
            self.push_definition(&mut columns, at)
        };
        self.stmt_columns.insert(id, columns);
        r
    }
}

/// A result whose rows cannot be read: its column count and the definitions known for it
/// differ (where the server left them out, a statement prepared on another connection, say).
fn unknown_types(columns: u64, known: usize) -> ProtoError {
    ProtoError::Malformed {
        what: "result set",
        detail: format!(
            "its rows have {columns} columns and {known} column definitions are known for \
             them (the server sends none for a statement whose definitions it sent before)"
        ),
    }
}
