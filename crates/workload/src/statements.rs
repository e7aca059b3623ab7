//! The statement texts of oltp_common.lua (section 1.3 of the reference) and the two
//! select_random_* scripts, per table.

use bakeoff_driver::Param;

/// One kind of statement in an OLTP event. The discriminant indexes per-table arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Point = 0,
    Simple,
    Sum,
    Order,
    Distinct,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
}

pub const KINDS: usize = 9;

impl Kind {
    pub const ALL: [Kind; KINDS] = [
        Kind::Point,
        Kind::Simple,
        Kind::Sum,
        Kind::Order,
        Kind::Distinct,
        Kind::IndexUpdate,
        Kind::NonIndexUpdate,
        Kind::Delete,
        Kind::Insert,
    ];

    pub fn sql(self, table: u32) -> String {
        let t = table;
        match self {
            Kind::Point => format!("SELECT c FROM sbtest{t} WHERE id=?"),
            Kind::Simple => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Kind::Sum => format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Kind::Order => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"),
            Kind::Distinct => {
                format!("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Kind::IndexUpdate => format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"),
            Kind::NonIndexUpdate => format!("UPDATE sbtest{t} SET c=? WHERE id=?"),
            Kind::Delete => format!("DELETE FROM sbtest{t} WHERE id=?"),
            Kind::Insert => format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        }
    }
}

impl Kind {
    /// Values of the kinds the statement runs with, one per `?` (the events bind them so:
    /// `oltp_event`, `Gen::row`), so that PostgreSQL can parse it while connecting
    /// (`Connection::prepare_typed`).
    pub fn sample(self) -> &'static [Param<'static>] {
        const I: Param<'static> = Param::Int(0);
        const S: Param<'static> = Param::Str(b"");
        match self {
            Kind::Point | Kind::IndexUpdate | Kind::Delete => &[I],
            Kind::Simple | Kind::Sum | Kind::Order | Kind::Distinct => &[I, I],
            Kind::NonIndexUpdate => &[S, I],
            Kind::Insert => &[I, I, S, S],
        }
    }
}

/// select_random_points.lua's statement, whitespace as in the script.
pub fn random_points_sql(points: u32) -> String {
    let list = vec!["?"; points as usize].join(", ");
    format!("\n        SELECT id, k, c, pad\n          FROM sbtest1\n          WHERE k IN ({list})\n        ")
}

/// select_random_ranges.lua's statement, whitespace as in the script.
pub fn random_ranges_sql(ranges: u32) -> String {
    let list = vec!["k BETWEEN ? AND ?"; ranges as usize].join(" OR ");
    format!("\n        SELECT count(k)\n          FROM sbtest1\n          WHERE {list}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_statement_has_a_sample_value_per_placeholder() {
        for k in Kind::ALL {
            let marks = k.sql(1).matches('?').count();
            assert_eq!(k.sample().len(), marks, "{k:?}");
        }
    }

    #[test]
    fn texts_match_the_reference() {
        assert_eq!(Kind::Point.sql(3), "SELECT c FROM sbtest3 WHERE id=?");
        assert_eq!(
            Kind::Insert.sql(1),
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)"
        );
        assert!(random_points_sql(3).contains("WHERE k IN (?, ?, ?)"));
        assert!(random_ranges_sql(2).ends_with("WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ?"));
    }
}
