//! The names and tokens that mark what bakeoff made: the marker table's name and comment,
//! the names bakeoff gives its tables, and each prepare's random token.

use super::progress::DatasetError;

pub const MARKER_TABLE: &str = "bakeoff_tables";
const COMMENT: &str = "bakeoff:";
/// The marker table's own comment: what makes a `bakeoff_tables` bakeoff's.
pub(super) const MARKER_COMMENT: &str = "bakeoff marker";
/// The most tables a workload makes (sysbench's --tables is a 32-bit count; nobody loads more).
const MAX_TABLE: u32 = 1_000_000;

/// A prepare's random token: 16 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A fresh token from the kernel's random source.
    pub fn new() -> Result<Token, DatasetError> {
        bakeoff_driver::random_hex(8)
            .map(Token)
            .map_err(|e| DatasetError::Thread(format!("a random token: {e}")))
    }

    /// A token as the marker table holds it; anything but 16 lowercase hex digits is none.
    pub fn parse(s: &str) -> Option<Token> {
        let ok = s.len() == 16 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
        ok.then(|| Token(s.to_string()))
    }

    /// The token itself: 16 hex digits, nothing to quote.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The table COMMENT that carries it.
    pub fn comment(&self) -> String {
        format!("{COMMENT}{}", self.0)
    }

    /// The table option that writes it onto a table (the token is hex: nothing to quote).
    pub fn table_option(&self) -> String {
        format!(" COMMENT='{}'", self.comment())
    }
}

/// TPC-C's nine tables and bakeoff's record of their load (the tpcc module), in load order.
pub const TPCC_TABLES: [&str; 10] = [
    "item",
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
    "stock",
    "bakeoff_tpcc",
];

/// Whether `name` is one bakeoff creates: sysbench's `sbtestN` or one of TPC-C's. A marker
/// row naming anything else proves nothing, and its table is never dropped.
pub fn bakeoff_creates(name: &str) -> bool {
    workload_table(name).is_some() || TPCC_TABLES.contains(&name)
}

/// The number N of a name bakeoff creates, `sbtestN` (no leading zeros); None for any other.
pub fn workload_table(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("sbtest")?;
    let n: u32 = digits.parse().ok()?;
    ((1..=MAX_TABLE).contains(&n) && digits == n.to_string()).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpccs_tables_are_bakeoffs_and_nothing_like_them() {
        assert!(bakeoff_creates("order_line") && bakeoff_creates("bakeoff_tpcc"));
        assert!(bakeoff_creates("sbtest3"));
        assert!(
            !bakeoff_creates("orders2")
                && !bakeoff_creates("Item")
                && !bakeoff_creates("customers")
        );
    }

    #[test]
    fn only_sbtest_names_are_bakeoffs() {
        assert_eq!(workload_table("sbtest1"), Some(1));
        assert_eq!(workload_table("sbtest250"), Some(250));
        for other in [
            "customers",
            "sbtest0",
            "sbtest01",
            "sbtest1x",
            "sbtest",
            "sbtest1`; DROP",
        ] {
            assert_eq!(workload_table(other), None, "{other}");
        }
    }

    #[test]
    fn tokens_are_fresh_hex_and_nothing_else_parses() {
        let (a, b) = (Token::new().unwrap(), Token::new().unwrap());
        assert_ne!(a, b);
        assert_eq!(Token::parse(&a.0), Some(a.clone()));
        for bad in [
            "",
            "0123",
            "0123456789abcdeg",
            "0123456789ABCDEF",
            "0123456789abcdef'",
        ] {
            assert_eq!(Token::parse(bad), None, "{bad}");
        }
        assert_eq!(a.table_option(), format!(" COMMENT='bakeoff:{}'", a.0));
    }
}
