//! What kind of value a server setting takes, as its binary lists it (MySQL's `--verbose
//! --help` by its default; PostgreSQL's `--describe-config` by its type), so that a value
//! the server would refuse at its start (`innodb_buffer_pool_size = "8Q"`) is refused at
//! `study check`, at its line, before anything starts.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// MySQL and MariaDB: a number, or whole digits with K, M, G, T, P or E for sizes.
    MySqlNumber,
    /// MySQL and MariaDB: ON, OFF, TRUE, FALSE, 1 or 0.
    MySqlBool,
    /// PostgreSQL's boolean: on, off, true, false, yes, no, 1, 0, or a unique prefix.
    PgBool,
    /// PostgreSQL's integer or real, with a unit where it has one (kB, MB, ms, s, ...).
    PgNumber,
    /// Anything else: a string, an enum, a list; the server's start judges it.
    Any,
}

impl ValueKind {
    /// A MySQL-family setting's kind, from the default `--verbose --help` shows for it.
    pub fn of_mysql_default(default: &str) -> ValueKind {
        let d = default.trim();
        if d.eq_ignore_ascii_case("TRUE") || d.eq_ignore_ascii_case("FALSE") {
            return ValueKind::MySqlBool;
        }
        match d.parse::<f64>() {
            Ok(_) => ValueKind::MySqlNumber,
            Err(_) => ValueKind::Any,
        }
    }

    /// A PostgreSQL setting's kind, from `--describe-config`'s type column.
    pub fn of_pg_type(vartype: &str) -> ValueKind {
        match vartype {
            "BOOLEAN" => ValueKind::PgBool,
            "INTEGER" | "REAL" => ValueKind::PgNumber,
            _ => ValueKind::Any,
        }
    }

    /// Why `value` is not one of this kind's, said with what would be; None when it is.
    pub fn problem(self, name: &str, value: &str) -> Option<String> {
        let v = value.trim();
        let (ok, takes) = match self {
            ValueKind::Any => return None,
            ValueKind::MySqlNumber => (
                mysql_number(v),
                "a number, or whole digits with K, M, G, T, P or E for sizes (\"8G\", \"512M\")",
            ),
            ValueKind::MySqlBool => (
                ["ON", "OFF", "TRUE", "FALSE", "1", "0"]
                    .iter()
                    .any(|b| v.eq_ignore_ascii_case(b)),
                "ON or OFF",
            ),
            ValueKind::PgBool => (pg_bool(v), "on or off"),
            ValueKind::PgNumber => (
                pg_number(v),
                "a number, with a unit where it has one (\"2GB\", \"512MB\", \"200ms\", \"5min\")",
            ),
        };
        (!ok).then(|| format!("`{name}` takes {takes}; found \"{value}\""))
    }
}

/// As MySQL and MariaDB read a number: a plain one (a decimal for the settings that take
/// one, such as long_query_time), or whole digits and a size letter, the rest of the word
/// unread (`8G` and `8GB` are both 8 GiB; `1.5G` is refused by the server).
fn mysql_number(v: &str) -> bool {
    if v.parse::<f64>().is_ok_and(f64::is_finite) {
        return true;
    }
    let unsigned = v.strip_prefix(['-', '+']).unwrap_or(v);
    let digits = unsigned
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(unsigned.len());
    let suffix = unsigned[digits..].chars().next();
    digits > 0 && suffix.is_some_and(|c| "KMGTPE".contains(c.to_ascii_uppercase()))
}

fn pg_bool(v: &str) -> bool {
    let v = v.to_ascii_lowercase();
    // PostgreSQL takes a unique prefix of a word ("of" is off; "o" is neither).
    let prefix = |w: &str| v.len() >= 1 && w.starts_with(v.as_str());
    matches!(v.as_str(), "1" | "0" | "on" | "off")
        || (v.len() >= 2 && prefix("off"))
        || ["true", "false", "yes", "no"].iter().any(|w| prefix(w))
}

fn pg_number(v: &str) -> bool {
    // A plain number as strtod reads it, an exponent included (jit_above_cost = 1e6).
    if v.parse::<f64>().is_ok_and(f64::is_finite) {
        return true;
    }
    const UNITS: [&str; 11] = [
        "B", "kB", "MB", "GB", "TB", "us", "ms", "s", "min", "h", "d",
    ];
    let end = v
        .char_indices()
        .find(|(_, c)| c.is_ascii_alphabetic())
        .map_or(v.len(), |(i, _)| i);
    let (number, unit) = v.split_at(end);
    let number = number.trim();
    let unit = unit.trim();
    (unit.is_empty() || UNITS.contains(&unit))
        && !number.is_empty()
        && number.parse::<f64>().is_ok_and(f64::is_finite)
}

#[cfg(test)]
mod tests {
    use super::ValueKind::*;
    use super::*;

    #[test]
    fn values_the_server_would_refuse_are_said_with_what_it_takes() {
        assert_eq!(ValueKind::of_mysql_default("134217728"), MySqlNumber);
        assert_eq!(ValueKind::of_mysql_default("FALSE"), MySqlBool);
        assert_eq!(ValueKind::of_mysql_default("O_DIRECT"), Any);
        // What MariaDB 10.11 takes: a size letter and the rest of the word unread.
        for ok in ["8G", "512m", "8GB", "512MB", "134217728", "0.5", "10", "-1"] {
            assert_eq!(MySqlNumber.problem("x", ok), None, "{ok}");
        }
        let why = MySqlNumber
            .problem("innodb_buffer_pool_size", "8Q")
            .unwrap();
        assert!(
            why.contains("`innodb_buffer_pool_size` takes a number") && why.contains("\"8Q\""),
            "{why}"
        );
        for bad in ["", "G", "1.5G", "8Q", "lots"] {
            assert!(MySqlNumber.problem("x", bad).is_some(), "{bad}");
        }
        assert_eq!(MySqlBool.problem("x", "on"), None);
        assert!(MySqlBool.problem("x", "maybe").is_some());
        for ok in ["on", "OFF", "t", "yes", "n", "of", "1"] {
            assert_eq!(PgBool.problem("x", ok), None, "{ok}");
        }
        for bad in ["o", "maybe", "2"] {
            assert!(PgBool.problem("x", bad).is_some(), "{bad}");
        }
        for ok in [
            "2GB", "512MB", "200ms", "5min", "1.5", "-1", "16384", "1e6", "1.1",
        ] {
            assert_eq!(PgNumber.problem("x", ok), None, "{ok}");
        }
        for bad in ["2gb", "8Q", "lots", "MB"] {
            assert!(PgNumber.problem("x", bad).is_some(), "{bad}");
        }
        assert_eq!(Any.problem("x", "whatever"), None);
    }
}
