//! `pgbench -i`: its four tables, made and loaded step by step as pgbench 15 does (the
//! steps of -I: d drop, t create, g client-side generate, G server-side generate, v
//! vacuum, p primary keys, f foreign keys), with its messages.
//!
//! These are pgbench's tables, not bakeoff's: like pgbench, -i drops and replaces any
//! `pgbench_*` tables of these four names in the database. The pgbench guide says so.

use std::time::Instant;

use bakeoff_driver::{DriverError, Outcome, PgConn};

/// What -i was asked for.
#[derive(Debug, Clone)]
pub struct InitOptions {
    pub steps: String,
    pub scale: u32,
    pub fillfactor: u32,
    pub unlogged: bool,
    pub partitions: u32,
    /// "range" or "hash".
    pub partition_method: String,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
    /// -q: a progress line every 5 seconds instead of every 100000 rows.
    pub quiet: bool,
}

const NACCOUNTS: u64 = 100_000;
const NTELLERS: u64 = 10;

/// The four tables: name, columns (32-bit keys), columns when the scale needs 64-bit
/// keys, whether fillfactor applies, whether accounts (partitioned).
const TABLES: &[(&str, &str, &str, bool)] = &[
    (
        "pgbench_history",
        "tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)",
        "tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)",
        false,
    ),
    (
        "pgbench_tellers",
        "tid int not null,bid int,tbalance int,filler char(84)",
        "tid int not null,bid int,tbalance int,filler char(84)",
        true,
    ),
    (
        "pgbench_accounts",
        "aid    int not null,bid int,abalance int,filler char(84)",
        "aid bigint not null,bid int,abalance int,filler char(84)",
        true,
    ),
    (
        "pgbench_branches",
        "bid int not null,bbalance int,filler char(88)",
        "bid int not null,bbalance int,filler char(88)",
        true,
    ),
];

/// An init error: the step's words and the server's.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{0}")]
    Query(String),
    #[error(transparent)]
    Driver(#[from] DriverError),
}

/// Run the steps, saying each as pgbench does through `say`; the closing "done in" line
/// is the last thing said.
pub async fn initialize(
    conn: &mut PgConn,
    o: &InitOptions,
    say: &mut dyn FnMut(&str),
) -> Result<(), InitError> {
    let all = Instant::now();
    let mut times: Vec<(&str, f64)> = Vec::new();
    conn.for_ddl();
    for step in o.steps.chars() {
        let t = Instant::now();
        let name = match step {
            'd' => {
                say("dropping old tables...");
                exec(conn, "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers").await?;
                "drop tables"
            }
            't' => {
                say("creating tables...");
                create_tables(conn, o).await?;
                if o.partitions > 0 {
                    say(&format!("creating {} partitions...", o.partitions));
                    create_partitions(conn, o).await?;
                }
                "create tables"
            }
            'g' => {
                say("generating data (client-side)...");
                client_side(conn, o, say).await?;
                "client-side generate"
            }
            'G' => {
                say("generating data (server-side)...");
                server_side(conn, o).await?;
                "server-side generate"
            }
            'v' => {
                say("vacuuming...");
                for t in [
                    "pgbench_branches",
                    "pgbench_tellers",
                    "pgbench_accounts",
                    "pgbench_history",
                ] {
                    exec(conn, &format!("vacuum analyze {t}")).await?;
                }
                "vacuum"
            }
            'p' => {
                say("creating primary keys...");
                for (t, k) in [
                    ("pgbench_branches", "bid"),
                    ("pgbench_tellers", "tid"),
                    ("pgbench_accounts", "aid"),
                ] {
                    let ts = o
                        .index_tablespace
                        .as_ref()
                        .map(|s| format!(" using index tablespace {}", quote_ident(s)))
                        .unwrap_or_default();
                    exec(conn, &format!("alter table {t} add primary key ({k}){ts}")).await?;
                }
                "primary keys"
            }
            'f' => {
                say("creating foreign keys...");
                for (t, c, r) in [
                    ("pgbench_tellers", "bid", "pgbench_branches"),
                    ("pgbench_accounts", "bid", "pgbench_branches"),
                    ("pgbench_history", "bid", "pgbench_branches"),
                    ("pgbench_history", "tid", "pgbench_tellers"),
                    ("pgbench_history", "aid", "pgbench_accounts"),
                ] {
                    exec(conn, &format!("alter table {t} add constraint {t}_{c}_fkey foreign key ({c}) references {r}")).await?;
                }
                "foreign keys"
            }
            ' ' => continue,
            other => {
                return Err(InitError::Query(format!(
                    "unrecognized initialization step \"{other}\""
                )))
            }
        };
        // libpq prints the server's notices (a table dropped "if exists" that was not there).
        for n in conn.take_notices() {
            say(&n);
        }
        times.push((name, t.elapsed().as_secs_f64()));
    }
    let parts: Vec<String> = times.iter().map(|(n, s)| format!("{n} {s:.2} s")).collect();
    say(&format!(
        "done in {:.2} s ({}).",
        all.elapsed().as_secs_f64(),
        parts.join(", ")
    ));
    Ok(())
}

async fn exec(conn: &mut PgConn, sql: &str) -> Result<(), InitError> {
    match conn.query(sql).await? {
        Outcome::Err(e) => Err(InitError::Query(format!(
            "query failed: {}\npgbench: detail: Query was: {sql}",
            bakeoff_driver::libpq_error("", &e)
        ))),
        _ => Ok(()),
    }
}

async fn create_tables(conn: &mut PgConn, o: &InitOptions) -> Result<(), InitError> {
    let wide = o.scale >= 20_000;
    for (name, narrow, wide_cols, fill) in TABLES {
        let cols = if wide { wide_cols } else { narrow };
        let mut sql = format!(
            "create{} table {name}({cols})",
            if o.unlogged { " unlogged" } else { "" }
        );
        let partitioned = *name == "pgbench_accounts" && o.partitions > 0;
        if partitioned {
            sql.push_str(&format!(" partition by {} (aid)", o.partition_method));
        } else if *fill {
            sql.push_str(&format!(" with (fillfactor={})", o.fillfactor));
        }
        if let Some(ts) = &o.tablespace {
            sql.push_str(&format!(" tablespace {}", quote_ident(ts)));
        }
        exec(conn, &sql).await?;
    }
    Ok(())
}

async fn create_partitions(conn: &mut PgConn, o: &InitOptions) -> Result<(), InitError> {
    let total = NACCOUNTS * o.scale as u64;
    let part_size = total.div_ceil(o.partitions as u64);
    for p in 1..=o.partitions as u64 {
        let bounds = if o.partition_method == "range" {
            let lo = if p == 1 {
                "minvalue".to_string()
            } else {
                ((p - 1) * part_size + 1).to_string()
            };
            let hi = if p == o.partitions as u64 {
                "maxvalue".to_string()
            } else {
                (p * part_size + 1).to_string()
            };
            format!("for values from ({lo}) to ({hi})")
        } else {
            format!(
                "for values with (modulus {}, remainder {})",
                o.partitions,
                p - 1
            )
        };
        let mut sql = format!(
            "create{} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  {bounds} with (fillfactor={})",
            if o.unlogged { " unlogged" } else { "" },
            o.fillfactor
        );
        if let Some(ts) = &o.tablespace {
            sql.push_str(&format!(" tablespace {}", quote_ident(ts)));
        }
        exec(conn, &sql).await?;
    }
    Ok(())
}

async fn client_side(
    conn: &mut PgConn,
    o: &InitOptions,
    say: &mut dyn FnMut(&str),
) -> Result<(), InitError> {
    exec(conn, "begin").await?;
    exec(
        conn,
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await?;
    let scale = o.scale as u64;
    let mut data = String::new();
    for b in 1..=scale {
        data.push_str(&format!("{b}\t0\t\n"));
    }
    copy(conn, "copy pgbench_branches from stdin", data.as_bytes()).await?;
    data.clear();
    for t in 1..=NTELLERS * scale {
        data.push_str(&format!("{t}\t{}\t0\t\n", (t - 1) / NTELLERS + 1));
    }
    copy(conn, "copy pgbench_tellers from stdin", data.as_bytes()).await?;
    let total = NACCOUNTS * scale;
    let started = Instant::now();
    let mut last_said = 0.0;
    let mut aid = 1;
    // In chunks of 100000 rows: pgbench's progress line falls at each (or every 5 s, -q).
    while aid <= total {
        let end = (aid + NACCOUNTS - 1).min(total);
        data.clear();
        for a in aid..=end {
            data.push_str(&format!("{a}\t{}\t0\t\n", (a - 1) / NACCOUNTS + 1));
        }
        copy(conn, "copy pgbench_accounts from stdin", data.as_bytes()).await?;
        aid = end + 1;
        let elapsed = started.elapsed().as_secs_f64();
        let remaining = elapsed * (total - end) as f64 / end as f64;
        if !o.quiet || elapsed - last_said >= 5.0 || end == total {
            say(&format!("{end} of {total} tuples ({}%) done (elapsed {elapsed:.2} s, remaining {remaining:.2} s)", end * 100 / total));
            last_said = elapsed;
        }
    }
    exec(conn, "commit").await?;
    Ok(())
}

async fn copy(conn: &mut PgConn, sql: &str, data: &[u8]) -> Result<(), InitError> {
    let answer = conn.copy_in(sql, data).await;
    // pgbench's words, its PQerrorMessage empty: a COPY OUT is no error of the server's.
    use bakeoff_driver::DriverError::{CopyOut, NotCopyIn};
    if let Err(NotCopyIn { .. } | CopyOut { .. }) = answer {
        return Err(InitError::Query("unexpected copy in result: ".into()));
    }
    match answer? {
        Outcome::Err(e) => Err(InitError::Query(format!(
            "PQendcopy failed: {}",
            bakeoff_driver::libpq_error("", &e)
        ))),
        _ => Ok(()),
    }
}

async fn server_side(conn: &mut PgConn, o: &InitOptions) -> Result<(), InitError> {
    let s = o.scale as u64;
    exec(conn, "begin").await?;
    exec(
        conn,
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await?;
    exec(conn, &format!("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {s}) as bid")).await?;
    exec(conn, &format!("insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {NTELLERS} + 1, 0 from generate_series(1, {}) as tid", NTELLERS * s)).await?;
    exec(conn, &format!("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {NACCOUNTS} + 1, 0, '' from generate_series(1, {}) as aid", NACCOUNTS * s)).await?;
    exec(conn, "commit").await?;
    Ok(())
}

/// An identifier quoted as PostgreSQL's quote_ident would (always, here).
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}
