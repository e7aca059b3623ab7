//! pgbench's built-in scripts, word for word as pgbench 15 has them.

/// (name, description, script).
pub const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "tpcb-like",
        "<builtin: TPC-B (sort of)>",
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    ),
    (
        "simple-update",
        "<builtin: simple update>",
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    ),
    (
        "select-only",
        "<builtin: select only>",
        "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
",
    ),
];

/// A built-in script by name or by a unique prefix of it, as pgbench finds them.
pub fn find(name: &str) -> Result<&'static (&'static str, &'static str, &'static str), String> {
    if let Some(b) = BUILTINS.iter().find(|b| b.0 == name) {
        return Ok(b);
    }
    let matches: Vec<_> = BUILTINS.iter().filter(|b| b.0.starts_with(name)).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no builtin script found for name \"{name}\"")),
        _ => Err(format!(
            "ambiguous builtin name: {} builtin scripts found for prefix \"{name}\"",
            matches.len()
        )),
    }
}

/// `-b list`'s lines.
pub fn listing() -> String {
    let mut out = String::from("Available builtin scripts:\n");
    for (name, desc, _) in BUILTINS {
        out.push_str(&format!("{name:>15}: {desc}\n"));
    }
    out
}
