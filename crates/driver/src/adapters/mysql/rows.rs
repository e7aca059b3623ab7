//! Statements whose rows the caller keeps, decoded as text: admin queries (SHOW STATUS,
//! SHOW GLOBAL VARIABLES) and a script's `con:query()`. The hot path never decodes a row.

use bakeoff_proto::command;
use bakeoff_proto::{text_row, Outcome, ResponseReader, Step};

use super::conn::Conn;
use crate::DriverError;

/// A statement's answer with its rows: what a script's `con:query()` hands back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub outcome: Outcome,
    /// Columns of the (last) result set; 0 when there was none.
    pub columns: u32,
    pub rows: Vec<Vec<Option<String>>>,
}

impl Conn {
    /// SHOW GLOBAL VARIABLES as a map (admin use: the manifest of a run).
    pub async fn global_variables(
        &mut self,
    ) -> Result<std::collections::BTreeMap<String, String>, DriverError> {
        let rows = self.query_rows("SHOW GLOBAL VARIABLES").await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let mut r = r.into_iter();
                Some((r.next()??, r.next().flatten().unwrap_or_default()))
            })
            .collect())
    }

    /// Run a query and decode all rows as text (admin use: SHOW STATUS, SELECT VERSION()).
    pub async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DriverError> {
        let answer = self.query_result(sql).await?;
        match answer.outcome {
            Outcome::Err(e) => Err(DriverError::Server(e)),
            _ => Ok(answer.rows),
        }
    }

    /// Run a text statement and keep its rows, decoded as text (a script's result sets); a
    /// server error is returned as [`Outcome::Err`], as [`query`](Self::query) returns it.
    /// At most `--max-rows` rows are kept: a result set past that ends the call.
    pub async fn query_result(&mut self, sql: &str) -> Result<Answer, DriverError> {
        self.wbuf.clear();
        command::query(&mut self.wbuf, sql.as_bytes());
        self.send().await?;
        let mut reader = ResponseReader::with_cached_metadata(self.cache_metadata);
        let mut rows = Vec::new();
        loop {
            let at = match self.buffered_packet() {
                Some(at) => at,
                None => self.read_packet("query").await?,
            };
            let p = self.packet(at);
            match reader.on_packet(p).map_err(|e| self.proto(e))? {
                Step::More | Step::Columns => {}
                Step::Row => {
                    self.rows_within_cap(rows.len())?;
                    rows.push(text_row(self.packet(at)).map_err(|e| self.proto(e))?)
                }
                Step::Done(outcome) => {
                    return Ok(Answer {
                        outcome,
                        columns: reader.columns() as u32,
                        rows,
                    })
                }
            }
        }
    }
}
