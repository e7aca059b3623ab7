//! A second account on a shared server, and what it plants for the user's bakeoff to meet.
//!
//! PostgreSQL: a database owned by the load account (`sbtest`) whose `public` schema lets
//! every role create in it (PostgreSQL 14 and older by default, and every database upgraded
//! from one), the user's own table `keep_me`, and a role `mallory` that the load account is a
//! member of (`GRANT mallory TO sbtest`: on 15 and older mallory can do that herself).
//! Mallory's code, wherever it runs, counts itself on a sequence (which no rollback undoes),
//! logs who ran it, and drops `keep_me`: after bakeoff, [`PgShared::ran`] must be empty and
//! `keep_me` still there.
//!
//! MariaDB: [`mysql_trigger`] is the trigger mallory plants, logging into a table of hers.

use bakeoff_driver::{ConnectOptions, PgConn};

use crate::pg::{pg_admin, pg_database};

/// What mallory plants on the PostgreSQL side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// `public.bakeoff_tables` as bakeoff makes it (columns and comment), hers, with a
    /// trigger on INSERT, UPDATE and DELETE.
    Marker,
    /// Functions that match bakeoff's calls better than pg_catalog's, when `public` is on
    /// the path: `obj_description(oid, text)` and `(regclass, name)`, `setval(text,
    /// integer)`, `current_setting(name)`.
    Functions,
    /// `public.sbtest1` as sysbench's, hers, with a trigger on every write.
    Sbtest1,
}

/// The shared database and what is known of it.
pub struct PgShared {
    /// The user's account into the database.
    pub user: ConnectOptions,
    admin: ConnectOptions,
}

/// The database `t_<name>`, shared with mallory as the module says.
pub fn pg_shared(name: &str) -> PgShared {
    let user = pg_database(name);
    let admin = pg_admin().with_database(user.database.as_deref().unwrap_or_default());
    let s = PgShared { user, admin };
    // Roles are the server's, not a database's: two tests making mallory at once collide.
    static ROLE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let made = ROLE.lock().unwrap_or_else(|e| e.into_inner());
    s.admin(&[
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mallory') THEN CREATE ROLE mallory; END IF; END $$",
        "GRANT mallory TO sbtest",
    ]);
    drop(made);
    s.admin(&[
        "GRANT CREATE ON SCHEMA public TO PUBLIC",
        "SET ROLE mallory",
        "CREATE SEQUENCE public.mallory_ran",
        "GRANT USAGE, UPDATE ON SEQUENCE public.mallory_ran TO PUBLIC",
        "CREATE TABLE public.mallory_log (who text, what text)",
        "GRANT INSERT ON public.mallory_log TO PUBLIC",
        "CREATE FUNCTION public.mallory_note(what text) RETURNS void LANGUAGE plpgsql AS $$ \
         BEGIN PERFORM pg_catalog.nextval('public.mallory_ran'); \
         INSERT INTO public.mallory_log VALUES (current_user, what); \
         DROP TABLE IF EXISTS public.keep_me; END $$",
        "CREATE FUNCTION public.mallory_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN PERFORM public.mallory_note(TG_TABLE_NAME || ' ' || TG_OP); \
         RETURN COALESCE(NEW, OLD); END $$",
        "RESET ROLE",
    ]);
    s.user(&[
        "CREATE TABLE public.keep_me (id int PRIMARY KEY)",
        "INSERT INTO public.keep_me VALUES (7)",
    ]);
    s
}

impl PgShared {
    /// Mallory plants `what`.
    pub fn plant(&self, what: Plant) {
        let on_writes = |table: &str| {
            format!(
                "CREATE TRIGGER mallory BEFORE INSERT OR UPDATE OR DELETE ON public.{table} \
                 FOR EACH ROW EXECUTE FUNCTION public.mallory_trigger()"
            )
        };
        let sql: Vec<String> = match what {
            Plant::Marker => vec![
                "CREATE TABLE public.bakeoff_tables (table_name VARCHAR(64) NOT NULL PRIMARY KEY, workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)".into(),
                "COMMENT ON TABLE public.bakeoff_tables IS 'bakeoff marker'".into(),
                "GRANT ALL ON public.bakeoff_tables TO PUBLIC".into(),
                on_writes("bakeoff_tables"),
                "CREATE TRIGGER mallory_truncate BEFORE TRUNCATE ON public.bakeoff_tables EXECUTE FUNCTION public.mallory_trigger()".into(),
            ],
            Plant::Functions => vec![
                "CREATE FUNCTION public.obj_description(oid, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM public.mallory_note('obj_description(oid, text)'); RETURN pg_catalog.obj_description($1, $2::name); END $$".into(),
                "CREATE FUNCTION public.obj_description(regclass, name) RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM public.mallory_note('obj_description(regclass, name)'); RETURN pg_catalog.obj_description($1::oid, $2); END $$".into(),
                "CREATE FUNCTION public.setval(text, integer) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN PERFORM public.mallory_note('setval(text, integer)'); RETURN pg_catalog.setval($1::regclass, $2); END $$".into(),
                "CREATE FUNCTION public.current_setting(name) RETURNS text LANGUAGE plpgsql AS $$ BEGIN PERFORM public.mallory_note('current_setting(name)'); RETURN pg_catalog.current_setting($1::text); END $$".into(),
                "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC".into(),
            ],
            Plant::Sbtest1 => vec![
                "CREATE TABLE public.sbtest1 (id SERIAL, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))".into(),
                "INSERT INTO public.sbtest1 (k, c, pad) SELECT g, 'c', 'pad' FROM generate_series(1, 100) g".into(),
                "CREATE INDEX k_1 ON public.sbtest1(k)".into(),
                "GRANT ALL ON public.sbtest1 TO PUBLIC".into(),
                "GRANT ALL ON SEQUENCE public.sbtest1_id_seq TO PUBLIC".into(),
                on_writes("sbtest1"),
            ],
        };
        let mut all = vec!["SET ROLE mallory".to_string()];
        all.extend(sql);
        all.push("RESET ROLE".into());
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        self.admin(&refs);
    }

    /// Who ran mallory's code, and what: empty when nobody did. Counted on her sequence
    /// too, which a rolled-back transaction does not undo.
    pub fn ran(&self) -> Vec<String> {
        let mut log: Vec<String> = self
            .admin(&["SELECT who || ': ' || what FROM public.mallory_log"])
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
        let counted = self.admin(&["SELECT is_called FROM public.mallory_ran"]);
        if counted.first().and_then(|r| r.first().cloned().flatten()) == Some("t".into())
            && log.is_empty()
        {
            log.push("her code ran in a transaction that was rolled back".into());
        }
        log
    }

    /// The user's `keep_me`, if still there: its rows.
    pub fn keep_me(&self) -> Option<Vec<String>> {
        let there = self.admin(&["SELECT to_regclass('public.keep_me') IS NOT NULL"]);
        if there.first().and_then(|r| r.first().cloned().flatten()) != Some("t".into()) {
            return None;
        }
        Some(
            self.admin(&["SELECT id::text FROM public.keep_me"])
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect(),
        )
    }

    /// The tables of `public` and who owns each, `name:owner`.
    pub fn tables(&self) -> Vec<String> {
        self.admin(&["SELECT tablename || ':' || tableowner FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"])
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect()
    }

    /// Statements as the lab's superuser in the database; the last one's rows.
    pub fn admin(&self, sql: &[&str]) -> Vec<Vec<Option<String>>> {
        run(&self.admin, sql)
    }

    /// Statements as the user.
    pub fn user(&self, sql: &[&str]) -> Vec<Vec<Option<String>>> {
        run(&self.user, sql)
    }
}

fn run(opts: &ConnectOptions, sql: &[&str]) -> Vec<Vec<Option<String>>> {
    crate::rt().block_on(async {
        let mut c = PgConn::connect(opts)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        let mut last = Vec::new();
        for s in sql {
            last = c.query_rows(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        c.quit().await;
        last
    })
}

/// Mallory's trigger on `table` in MariaDB or MySQL, for each write: a row in `log` (hers)
/// naming who ran the statement (`USER()`: the account that wrote).
pub fn mysql_trigger(table: &str, event: &str, log: &str) -> String {
    format!(
        "CREATE TRIGGER mallory_{event} BEFORE {event} ON {table} FOR EACH ROW \
         INSERT INTO {log} VALUES (USER(), '{table} {event}')"
    )
}
