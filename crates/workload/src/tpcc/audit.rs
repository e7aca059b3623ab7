//! The audit of clause 9.2 after a run: what the run realised against the bounds TPC-C sets,
//! so that a run that did not do TPC-C's work is not reported as TPC-C.
//!
//! The bounds are the specification's for a measurement interval of hours; a run of seconds
//! holds too few transactions to hold a 1% rate within 0.9-1.1%. So a rate inside its bounds
//! passes, and one outside them fails only when it is beyond the nearer bound by more than
//! chance allows for that many transactions: more than 4 standard deviations of the
//! binomial at that bound (about one in 16,000 per line for a faithful driver, so about one
//! run in 1,600 over the audit's ten lines), and only when the bound expects at least 10 of
//! them (below that the normal approximation, and the test, mean little: the line says it is
//! within chance). A driver that never rolls back fails from about 2,500 New-Orders on.

use serde::Serialize;

use super::{T_BY_NAME, T_LINES, T_REMOTE, T_REMOTE_LINES, T_ROLLBACK, T_SKIPPED};

/// Events and tallies of one class (a transaction type), as the engine's windows sum them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Realised {
    pub events: u64,
    pub tally: [u64; 4],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    /// Outside the bounds, but not by more than the sample's chance.
    Noise,
    Fail,
    /// Does not apply: with one warehouse nothing can be remote.
    NotApplicable,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditLine {
    pub what: &'static str,
    pub clause: &'static str,
    /// Realised percentage, and of how many.
    pub percent: f64,
    pub of: u64,
    pub low: f64,
    pub high: f64,
    pub verdict: Verdict,
}

/// Judge `x` of `n` against [low, high] percent (see the module's comment); `_p` is the
/// specification's own rate, for the reader.
fn judge(
    what: &'static str,
    clause: &'static str,
    x: u64,
    n: u64,
    _p: f64,
    low: f64,
    high: f64,
) -> AuditLine {
    let percent = if n == 0 {
        0.0
    } else {
        100.0 * x as f64 / n as f64
    };
    let verdict = if n > 0 && (low..=high).contains(&percent) {
        Verdict::Pass
    } else {
        // The nearer bound as the rate to test against.
        let p0 = if percent < low { low } else { high } / 100.0;
        let expected = n as f64 * p0.min(1.0 - p0);
        let sd = (n as f64 * p0 * (1.0 - p0)).sqrt();
        match n > 0 && expected >= 10.0 && (x as f64 - n as f64 * p0).abs() > 4.0 * sd {
            true => Verdict::Fail,
            false => Verdict::Noise,
        }
    };
    AuditLine {
        what,
        clause,
        percent,
        of: n,
        low,
        high,
        verdict,
    }
}

/// The audit of a run over `warehouses` whose classes (New-Order, Payment, Order-Status,
/// Delivery, Stock-Level) realised `c`.
pub fn audit(c: &[Realised; 5], warehouses: u32) -> Vec<AuditLine> {
    let [no, pay, os, dl, sl] = c;
    let total: u64 = c.iter().map(|r| r.events).sum();
    let mut out = vec![
        judge(
            "New-Order rolled back",
            "9.2.2.5.1",
            no.tally[T_ROLLBACK],
            no.events,
            0.01,
            0.9,
            1.1,
        ),
        judge(
            "order lines from a remote warehouse",
            "9.2.2.5.3",
            no.tally[T_REMOTE_LINES],
            no.tally[T_LINES],
            0.01,
            0.95,
            1.05,
        ),
        judge(
            "Payments to a remote warehouse",
            "9.2.2.5.4",
            pay.tally[T_REMOTE],
            pay.events,
            0.15,
            14.0,
            16.0,
        ),
        judge(
            "Payments by last name",
            "9.2.2.5.5",
            pay.tally[T_BY_NAME],
            pay.events,
            0.60,
            57.0,
            63.0,
        ),
        judge(
            "Order-Status by last name",
            "9.2.2.5.6",
            os.tally[0],
            os.events,
            0.60,
            57.0,
            63.0,
        ),
        judge(
            "Delivery districts skipped",
            "9.2.1.7",
            dl.tally[T_SKIPPED],
            dl.events * 10,
            0.0,
            0.0,
            1.0,
        ),
    ];
    // One warehouse (or a count not known): nothing can be, or is known to be, remote.
    if warehouses <= 1 {
        for l in &mut out[1..3] {
            l.verdict = Verdict::NotApplicable;
        }
    }
    // The mix (5.2.3): each at least its minimum; the deck deals exactly 10/23 and 1/23.
    for (what, r, p, min) in [
        ("Payment share of the mix", pay, 10.0 / 23.0, 43.0),
        ("Order-Status share of the mix", os, 1.0 / 23.0, 4.0),
        ("Delivery share of the mix", dl, 1.0 / 23.0, 4.0),
        ("Stock-Level share of the mix", sl, 1.0 / 23.0, 4.0),
    ] {
        out.push(judge(what, "5.2.3", r.events, total, p, min, 100.0));
    }
    out
}

/// Whether the run did TPC-C's work: no line of its audit failed.
pub fn passed(lines: &[AuditLine]) -> bool {
    lines.iter().all(|l| l.verdict != Verdict::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(no_rb: u64, no: u64, pay_remote: u64, pay: u64) -> [Realised; 5] {
        [
            Realised {
                events: no,
                tally: [no_rb, 10 * no, no / 10, 0],
            },
            Realised {
                events: pay,
                tally: [pay_remote, pay * 6 / 10, 0, 0],
            },
            Realised {
                events: pay / 10,
                tally: [pay * 6 / 100, 0, 0, 0],
            },
            Realised {
                events: pay / 10,
                tally: [0, 0, 0, 0],
            },
            Realised {
                events: pay / 10,
                tally: [0, 0, 0, 0],
            },
        ]
    }

    #[test]
    fn a_faithful_run_passes_and_one_without_rollbacks_fails() {
        let good = audit(&run(1000, 100_000, 15_000, 100_000), 10);
        assert!(passed(&good), "{good:?}");
        let none = audit(&run(0, 100_000, 15_000, 100_000), 10);
        assert_eq!(none[0].verdict, Verdict::Fail);
        assert!(!passed(&none));
    }

    #[test]
    fn a_short_run_outside_the_bounds_is_noise_not_failure() {
        let short = audit(&run(3, 200, 29, 200), 10);
        assert_eq!(short[0].verdict, Verdict::Noise, "{:?}", short[0]);
        assert!(passed(&short));
    }

    #[test]
    fn no_remote_payments_at_all_fails() {
        let l = audit(&run(1000, 100_000, 0, 100_000), 10);
        assert_eq!(l[2].verdict, Verdict::Fail);
        let one = audit(&run(1000, 100_000, 0, 100_000), 1);
        assert_eq!(
            one[2].verdict,
            Verdict::NotApplicable,
            "nothing is remote with one warehouse"
        );
        assert!(passed(&one));
    }
}
