//! The native source: sysbench's built-in OLTP workloads, written in Rust. One [`Session`]
//! is one connection with its prepared statements, its RNG and the event body.

use std::sync::Arc;

use bakeoff_driver::{
    Conn, ConnectOptions, Connection, DriverError, Outcome, Param, Protocol, ServerError,
};

use super::{EventError, StmtCounts};
use crate::statements::{random_points_sql, random_ranges_sql, Kind, KINDS};
use crate::strings::{fill_c, fill_pad, C_LEN, PAD_LEN};
use crate::{Distribution, PsMode, Rng, Unique, WorkloadKind, WorkloadSpec};

/// sysbench's bulk-insert buffer size (db_driver.c BULK_PACKET_SIZE).
const BULK_PACKET: usize = 512 * 1024;

/// What all sessions of one run share.
#[derive(Debug)]
pub struct SessionContext {
    /// The servers to connect to; session `tid` uses `endpoints[tid % len]` (one entry, or
    /// one per instance when the load is spread over several servers).
    pub endpoints: Vec<ConnectOptions>,
    pub spec: WorkloadSpec,
    /// Number of sessions in the run (sysbench's --threads), for the per-thread key ranges of
    /// select_random_* and the tables of bulk_insert.
    pub threads: u32,
    pub unique: Unique,
    /// What a TPC-C run's terminals share (its constants); unused by other workloads.
    pub tpcc: crate::tpcc::Shared,
    /// A user's script's sources, one per endpoint (`spec.script`), or why they could not be
    /// made (each session's open says it, so the run fails as any run fails); None for the
    /// built-ins.
    pub(crate) user: Option<Result<super::user::UserSources, String>>,
}

impl SessionContext {
    /// The context for `threads` sessions of `spec` against `endpoints`, the run's values
    /// unique as `unique` deals them, its TPC-C constants and a script's streams from
    /// `seed`.
    pub fn new(
        endpoints: Vec<ConnectOptions>,
        spec: WorkloadSpec,
        threads: u32,
        unique: Unique,
        seed: u64,
    ) -> SessionContext {
        let user = spec
            .script
            .as_ref()
            .map(|s| s.sources(&endpoints, threads, seed));
        SessionContext {
            endpoints,
            spec,
            threads,
            unique,
            tpcc: crate::tpcc::Shared::for_run(seed),
            user,
        }
    }

    /// The server session `tid` connects to.
    pub fn endpoint(&self, tid: u32) -> &ConnectOptions {
        &self.endpoints[tid as usize % self.endpoints.len().max(1)]
    }
}

/// A statement as this session runs it: server-side prepared, or text with `?` substituted.
struct Prepared<S> {
    sql: String,
    stmt: Option<S>,
}

/// How many statements of each group one event runs (oltp_common.lua's execute_* calls).
#[derive(Debug, Clone, Copy, Default)]
struct Plan {
    trx: bool,
    counts: [u32; KINDS],
}

impl Plan {
    fn of(spec: &WorkloadSpec) -> Plan {
        let o = &spec.options;
        let mut p = Plan {
            trx: spec.kind.transactional() && !o.skip_trx,
            counts: [0; KINDS],
        };
        let reads = matches!(
            spec.kind,
            WorkloadKind::OltpReadWrite | WorkloadKind::OltpReadOnly
        );
        let writes = matches!(
            spec.kind,
            WorkloadKind::OltpReadWrite | WorkloadKind::OltpWriteOnly
        );
        let ranges = if o.range_selects { 1 } else { 0 };
        let c = &mut p.counts;
        if reads {
            c[Kind::Point as usize] = o.point_selects;
            c[Kind::Simple as usize] = o.simple_ranges * ranges;
            c[Kind::Sum as usize] = o.sum_ranges * ranges;
            c[Kind::Order as usize] = o.order_ranges * ranges;
            c[Kind::Distinct as usize] = o.distinct_ranges * ranges;
        }
        if writes {
            c[Kind::IndexUpdate as usize] = o.index_updates;
            c[Kind::NonIndexUpdate as usize] = o.non_index_updates;
            c[Kind::Delete as usize] = o.delete_inserts;
            c[Kind::Insert as usize] = o.delete_inserts;
        }
        match spec.kind {
            // oltp_point_select.lua forces one point select per event.
            WorkloadKind::OltpPointSelect => c[Kind::Point as usize] = 1,
            WorkloadKind::OltpUpdateIndex => c[Kind::IndexUpdate as usize] = o.index_updates,
            WorkloadKind::OltpUpdateNonIndex => {
                c[Kind::NonIndexUpdate as usize] = o.non_index_updates
            }
            WorkloadKind::OltpDelete => c[Kind::Delete as usize] = 1,
            _ => {}
        }
        p
    }
}

/// The random side of a session: generator, distribution and value buffers.
struct Gen {
    rng: Rng,
    dist: Distribution,
    c: [u8; C_LEN],
    pad: [u8; PAD_LEN],
    /// select_random_*'s parameters, reused so an event allocates nothing.
    ints: Vec<Param<'static>>,
}

impl Gen {
    fn id(&mut self, table_size: u32) -> i64 {
        self.dist.sample(&mut self.rng, 1, table_size) as i64
    }

    /// A fresh sysbench row for `INSERT ... (id, k, c, pad)`: new c and pad digit strings.
    fn row(&mut self, id: i64, k: i64) -> [Param<'_>; 4] {
        fill_c(&mut self.rng, &mut self.c);
        fill_pad(&mut self.rng, &mut self.pad);
        [
            Param::Int(id),
            Param::Int(k),
            Param::Str(&self.c),
            Param::Str(&self.pad),
        ]
    }
}

/// Generic over the driver family, so each statement is a direct call into its connection.
pub struct Session<C: Connection = Conn> {
    conn: C,
    ctx: Arc<SessionContext>,
    tid: u32,
    plan: Plan,
    /// Per table (index table-1), per statement kind.
    stmts: Vec<[Option<Prepared<C::Stmt>>; KINDS]>,
    begin: Option<Prepared<C::Stmt>>,
    commit: Option<Prepared<C::Stmt>>,
    /// select_random_points / select_random_ranges statement.
    special: Option<Prepared<C::Stmt>>,
    gen: Gen,
    bulk: Vec<u8>,
    bulk_rows: u64,
    /// Blocking socket I/O: this session is the only one on its thread (closed loop).
    blocking: bool,
}

impl<C: Connection> Session<C> {
    /// Connect and prepare everything this workload's events need (sysbench's thread_init).
    pub async fn open(
        ctx: Arc<SessionContext>,
        tid: u32,
        seed: u64,
        blocking: bool,
    ) -> Result<Session<C>, DriverError> {
        let conn = C::open(ctx.endpoint(tid), blocking).await?;
        let plan = Plan::of(&ctx.spec);
        let gen = Gen {
            rng: Rng::seeded(seed),
            dist: ctx.spec.distribution,
            c: [0; C_LEN],
            pad: [0; PAD_LEN],
            ints: Vec::new(),
        };
        let mut s = Session {
            conn,
            ctx,
            tid,
            plan,
            stmts: Vec::new(),
            begin: None,
            commit: None,
            special: None,
            gen,
            bulk: Vec::new(),
            bulk_rows: 0,
            blocking,
        };
        s.prepare_all().await?;
        Ok(s)
    }

    /// After a lost connection: a new connection with every statement prepared again.
    pub async fn reconnect(&mut self) -> Result<(), DriverError> {
        self.conn = C::open(self.ctx.endpoint(self.tid), self.blocking).await?;
        self.prepare_all().await
    }

    pub fn connection_id(&self) -> u32 {
        self.conn.connection_id()
    }

    /// oltp_insert on PostgreSQL with --auto-inc: the row's id is left to the SERIAL.
    fn serial_insert(&self) -> bool {
        self.ctx.spec.kind == WorkloadKind::OltpInsert
            && self.ctx.spec.options.auto_inc
            && self.ctx.endpoint(self.tid).protocol == Protocol::Postgres
    }

    async fn prepare_all(&mut self) -> Result<(), DriverError> {
        let spec = &self.ctx.spec;
        let ps = spec.options.ps_mode == PsMode::Auto;
        let serial = self.serial_insert();
        let conn = &mut self.conn;
        let mut stmts = Vec::with_capacity(spec.options.tables as usize);
        for t in 1..=spec.options.tables {
            let mut row: [Option<Prepared<C::Stmt>>; KINDS] = Default::default();
            for k in Kind::ALL {
                let text_insert = spec.kind == WorkloadKind::OltpInsert && k == Kind::Insert;
                if self.plan.counts[k as usize] > 0 || text_insert {
                    // oltp_insert.lua sends its INSERT as plain text, never prepared; on
                    // PostgreSQL with --auto-inc, without the id (the SERIAL assigns it).
                    let sql = match text_insert && serial {
                        true => format!("INSERT INTO sbtest{t} (k, c, pad) VALUES (?, ?, ?)"),
                        false => k.sql(t),
                    };
                    let sample = k.sample();
                    row[k as usize] = Some(prepare(conn, sql, ps && !text_insert, sample).await?);
                }
            }
            stmts.push(row);
        }
        self.stmts = stmts;
        if self.plan.trx {
            self.begin = Some(prepare(conn, "BEGIN".into(), ps, &[]).await?);
            self.commit = Some(prepare(conn, "COMMIT".into(), ps, &[]).await?);
        }
        let ints = |n: u32| vec![Param::Int(0); n as usize];
        self.special = match spec.kind {
            WorkloadKind::SelectRandomPoints => {
                let n = spec.options.random_points;
                Some(prepare(conn, random_points_sql(n), ps, &ints(n)).await?)
            }
            WorkloadKind::SelectRandomRanges => {
                let n = spec.options.number_of_ranges;
                Some(prepare(conn, random_ranges_sql(n), ps, &ints(2 * n)).await?)
            }
            _ => None,
        };
        Ok(())
    }

    /// One event (sysbench's event()): its statements, counted into `c` as they complete, so
    /// statements before a failure stay counted as sysbench counts them.
    pub async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        match self.ctx.spec.kind {
            WorkloadKind::OltpInsert => self.insert_event(c).await,
            WorkloadKind::SelectRandomPoints | WorkloadKind::SelectRandomRanges => {
                self.random_event(c).await
            }
            WorkloadKind::BulkInsert => self.bulk_event(c).await,
            _ => self.oltp_event(c).await,
        }
    }

    async fn oltp_event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let o = &self.ctx.spec.options;
        let (tables, size, range) = (o.tables, o.table_size, o.range_size as i64);
        let counts = self.plan.counts;
        if self.plan.trx {
            run(&mut self.conn, self.begin.as_ref(), &[], c).await?;
        }
        for kind in [
            Kind::Point,
            Kind::Simple,
            Kind::Sum,
            Kind::Order,
            Kind::Distinct,
        ] {
            let n = counts[kind as usize];
            if n == 0 {
                continue;
            }
            let t = self.gen.rng.uniform(1, tables);
            for _ in 0..n {
                let id = self.gen.id(size);
                let params = [Param::Int(id), Param::Int(id + range - 1)];
                let params = if kind == Kind::Point {
                    &params[..1]
                } else {
                    &params[..]
                };
                run(
                    &mut self.conn,
                    self.stmts[t as usize - 1][kind as usize].as_ref(),
                    params,
                    c,
                )
                .await?;
            }
        }
        if counts[Kind::IndexUpdate as usize] > 0 {
            let t = self.gen.rng.uniform(1, tables);
            for _ in 0..counts[Kind::IndexUpdate as usize] {
                let id = self.gen.id(size);
                run(
                    &mut self.conn,
                    self.stmts[t as usize - 1][Kind::IndexUpdate as usize].as_ref(),
                    &[Param::Int(id)],
                    c,
                )
                .await?;
            }
        }
        if counts[Kind::NonIndexUpdate as usize] > 0 {
            let t = self.gen.rng.uniform(1, tables);
            for _ in 0..counts[Kind::NonIndexUpdate as usize] {
                fill_c(&mut self.gen.rng, &mut self.gen.c);
                let id = self.gen.id(size);
                let stmt = self.stmts[t as usize - 1][Kind::NonIndexUpdate as usize].as_ref();
                run(
                    &mut self.conn,
                    stmt,
                    &[Param::Str(&self.gen.c), Param::Int(id)],
                    c,
                )
                .await?;
            }
        }
        if counts[Kind::Delete as usize] > 0 {
            let t = self.gen.rng.uniform(1, tables);
            for _ in 0..counts[Kind::Delete as usize] {
                let id = self.gen.id(size);
                let row = &self.stmts[t as usize - 1];
                run(
                    &mut self.conn,
                    row[Kind::Delete as usize].as_ref(),
                    &[Param::Int(id)],
                    c,
                )
                .await?;
                if self.ctx.spec.kind == WorkloadKind::OltpDelete {
                    continue;
                }
                let k = self.gen.id(size);
                let params = self.gen.row(id, k);
                run(
                    &mut self.conn,
                    row[Kind::Insert as usize].as_ref(),
                    &params,
                    c,
                )
                .await?;
            }
        }
        if self.plan.trx {
            run(&mut self.conn, self.commit.as_ref(), &[], c).await?;
        }
        Ok(())
    }

    /// oltp_insert.lua: one text INSERT; id 0 lets AUTO_INCREMENT assign it, otherwise a
    /// never-repeating id from sysbench.rand.unique() shifted into the signed range.
    async fn insert_event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let o = &self.ctx.spec.options;
        let t = self.gen.rng.uniform(1, o.tables);
        if self.serial_insert() {
            let k = self.gen.id(o.table_size.max(1));
            let params = self.gen.row(0, k);
            let stmt = self.stmts[t as usize - 1][Kind::Insert as usize].as_ref();
            return run(&mut self.conn, stmt, &params[1..], c).await;
        }
        let id = if o.auto_inc {
            0
        } else {
            self.ctx.unique.next() as i64 - 2_147_483_648
        };
        let k = self.gen.id(o.table_size.max(1));
        let params = self.gen.row(id, k);
        run(
            &mut self.conn,
            self.stmts[t as usize - 1][Kind::Insert as usize].as_ref(),
            &params,
            c,
        )
        .await
    }

    /// select_random_points / select_random_ranges: values from this session's slice of the
    /// key range (rlen = table_size / threads), so sessions do not overlap.
    async fn random_event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let o = &self.ctx.spec.options;
        let rlen = o.table_size as f64 / self.ctx.threads as f64;
        let rmin = rlen * (self.tid % self.ctx.threads) as f64;
        let (lo, hi) = (rmin as u32, (rmin + rlen) as u32);
        let ranges = self.ctx.spec.kind == WorkloadKind::SelectRandomRanges;
        let n = if ranges {
            o.number_of_ranges
        } else {
            o.random_points
        };
        self.gen.ints.clear();
        for _ in 0..n {
            let v = self.gen.dist.sample(&mut self.gen.rng, lo, hi.max(lo)) as i64;
            self.gen.ints.push(Param::Int(v));
            if ranges {
                self.gen.ints.push(Param::Int(v + o.delta as i64));
            }
        }
        let params = &self.gen.ints;
        run(&mut self.conn, self.special.as_ref(), params, c).await
    }

    /// bulk_insert.lua: one row per event appended to a 512 KiB multi-row INSERT into this
    /// session's own table; the statement is sent when the next row would not fit.
    async fn bulk_event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        use std::io::Write;
        self.bulk_rows += 1;
        // The row on the stack: bulk_insert's events are rows, so this is the hot path.
        let mut buf = [0u8; 48];
        let len = {
            let mut w = &mut buf[..];
            let _ = write!(w, "({0},{0})", self.bulk_rows);
            48 - w.len()
        };
        if !self.bulk.is_empty() && self.bulk.len() + len + 1 > BULK_PACKET {
            self.flush_bulk(c).await?;
        }
        if self.bulk.is_empty() {
            let _ = write!(self.bulk, "INSERT INTO sbtest{} VALUES", self.tid + 1);
        } else {
            self.bulk.push(b',');
        }
        self.bulk.extend_from_slice(&buf[..len]);
        Ok(())
    }

    async fn flush_bulk(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let sql = String::from_utf8_lossy(&std::mem::take(&mut self.bulk)).into_owned();
        let outcome = self.conn.query(&sql).await?;
        count(outcome, c).map_err(|error| EventError::Server {
            error,
            sql: truncate(&sql),
        })
    }

    /// End of the run (sysbench's thread_done): send what bulk_insert still holds, then leave.
    pub async fn finish(mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        if !self.bulk.is_empty() {
            self.flush_bulk(c).await?;
        }
        self.conn.quit().await;
        Ok(())
    }
}

async fn prepare<C: Connection>(
    conn: &mut C,
    sql: String,
    ps: bool,
    sample: &[Param<'_>],
) -> Result<Prepared<C::Stmt>, DriverError> {
    let stmt = if ps {
        Some(conn.prepare_typed(&sql, sample).await?)
    } else {
        None
    };
    Ok(Prepared { sql, stmt })
}

async fn run<C: Connection>(
    conn: &mut C,
    p: Option<&Prepared<C::Stmt>>,
    params: &[Param<'_>],
    c: &mut StmtCounts,
) -> Result<(), EventError> {
    // Plan::of and prepare_all derive from the same counts, so a missing statement is a bug.
    let p = p.expect("every statement an event runs was prepared for its plan");
    let outcome = match &p.stmt {
        Some(stmt) => conn.execute(stmt, params).await?,
        None => conn.query_with(&p.sql, params).await?,
    };
    match count(outcome, c) {
        Ok(()) => Ok(()),
        Err(error) => {
            // PostgreSQL: out of the transaction the error failed, so a restarted event
            // can run (sysbench's pgsql driver rolls back the same way).
            conn.recover().await?;
            Err(EventError::Server {
                error,
                sql: p.sql.trim().to_string(),
            })
        }
    }
}

fn count(o: Outcome, c: &mut StmtCounts) -> Result<(), ServerError> {
    match o {
        Outcome::Rows(_) => c.reads += 1,
        Outcome::Ok(ok) if ok.affected_rows > 0 => c.writes += 1,
        Outcome::Ok(_) => c.others += 1,
        Outcome::Err(e) => return Err(e),
    }
    Ok(())
}

fn truncate(sql: &str) -> String {
    match sql.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &sql[..i]),
        None => sql.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_spread_over_the_endpoints_round_robin() {
        let e = |p: &str| ConnectOptions::new(bakeoff_driver::Endpoint::Unix(p.into()), "u", "");
        let spec = WorkloadSpec {
            kind: WorkloadKind::OltpPointSelect,
            options: Default::default(),
            distribution: Distribution::new(crate::RandType::Uniform),
            tpcc: Default::default(),
            script: None,
        };
        let ctx = SessionContext::new(vec![e("/a"), e("/b")], spec, 4, Unique::new(1), 1);
        let seen: Vec<String> = (0..4)
            .map(|t| ctx.endpoint(t).endpoint.to_string())
            .collect();
        assert_eq!(seen, ["unix:/a", "unix:/b", "unix:/a", "unix:/b"]);
    }
}
