//! `--random-seed=N` gives pgbench's own values: every random function, `permute` and
//! `hash`, per client, and with -j equal to -c the same scripts chosen by weight. Compared
//! through `debug()`, which both print to stderr: as a multiset of values, because pgbench's
//! threads write their lines in pieces that interleave (each value carries its client id).

mod common;

use common::pgbench::{bakeoff, real_pgbench, Target};

/// Every value `debug()` printed, sorted.
fn values(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .split(|c| c == '\n' || c == ':')
        .filter_map(|piece| {
            let piece = piece.trim();
            ["int ", "double "]
                .iter()
                .any(|t| piece.starts_with(t))
                .then(|| piece.to_string())
        })
        .collect();
    v.sort();
    v
}

const FUNCTIONS: &str = r"\set u debug(:client_id * 10000000 + random(1, 1000000))
\set e debug(:client_id * 10000000 + random_exponential(1, 1000, 3.0))
\set g debug(:client_id * 10000000 + random_gaussian(1, 1000, 2.5))
\set z debug(:client_id * 10000000 + random_zipfian(1, 1000, 1.07))
\set p debug(:client_id * 10000000 + permute(:u, 1000000))
\set q debug(permute(7, 13, 99))
\set h debug(hash(:u))
\set f debug(random(1, 10) * 1.5)
";

#[test]
fn a_seed_gives_pgbenchs_values_and_with_a_thread_per_client_its_script_choices() {
    let t = Target::new("pgb_random");
    t.write("functions.sql", FUNCTIONS);
    t.write(
        "other.sql",
        "\\set y debug(:client_id * 10000000 + 5000000 + random(1, 1000))\n",
    );
    let runs: [&[&str]; 3] = [
        &["-f", "functions.sql", "-c", "1", "-t", "5"],
        &["-f", "functions.sql", "-c", "4", "-j", "2", "-t", "5"],
        &[
            "-f",
            "functions.sql@2",
            "-f",
            "other.sql@3",
            "-c",
            "3",
            "-j",
            "3",
            "-t",
            "20",
        ],
    ];
    for args in runs {
        let args: Vec<&str> = ["-n", "--random-seed=77"]
            .iter()
            .chain(args)
            .copied()
            .collect();
        let theirs = t.run(&real_pgbench(), &args);
        let ours = t.run(&bakeoff(), &args);
        let (theirs, ours) = (
            String::from_utf8_lossy(&theirs.stderr).into_owned(),
            String::from_utf8_lossy(&ours.stderr).into_owned(),
        );
        let (a, b) = (values(&theirs), values(&ours));
        assert!(a.len() >= 5, "{args:?}: pgbench printed {theirs}");
        assert_eq!(b, a, "{args:?}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}");
    }
}
