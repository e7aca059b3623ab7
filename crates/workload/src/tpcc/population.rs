//! The initial population of clause 4.3.3.1, as tab-separated text that both engines' bulk
//! loaders read (MariaDB's and MySQL's LOAD DATA, PostgreSQL's COPY: tab between fields,
//! `\N` for NULL, a newline after each row).
//!
//! The load is cut into jobs that need nothing of each other (the items in slices, then per
//! warehouse its own row and districts, its stock in slices, and per district its customers
//! with their history and its orders with their lines and new orders), each generated from
//! a seed of its own: the data does not depend on which connection loaded which job.

use std::io::Write;

use super::random::{astring, data_field, fixed, last_name, nstring, nurand, zip, Constants};
use crate::Rng;

pub const ITEMS: u32 = 100_000;
pub const DISTRICTS: u32 = 10;
pub const CUSTOMERS: u32 = 3_000;
pub const ORDERS: u32 = 3_000;
/// Orders 2101..=3000 of each district start undelivered, with a new-order row.
pub const FIRST_NEW_ORDER: u32 = 2_101;
const STOCK_SLICE: u32 = 25_000;

/// Rows table `table` starts with at `warehouses` (4.3.3.1); ORDER-LINE's is its expected
/// count (an order has 5 to 15 lines, 10 on average).
pub fn table_rows(table: &str, warehouses: u32) -> u64 {
    let (w, d) = (u64::from(warehouses), u64::from(DISTRICTS));
    let orders = w * d * u64::from(ORDERS);
    match table {
        "item" => u64::from(ITEMS),
        "warehouse" => w,
        "district" => w * d,
        "customer" | "history" => w * d * u64::from(CUSTOMERS),
        "orders" => orders,
        "new_order" => w * d * u64::from(ORDERS - FIRST_NEW_ORDER + 1),
        "order_line" => orders * 10,
        "stock" => w * u64::from(ITEMS),
        _ => 0,
    }
}

/// One independent piece of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Items { first: u32, last: u32 },
    Warehouse(u32),
    Stock { w: u32, first: u32, last: u32 },
    Customers { w: u32, d: u32 },
    Orders { w: u32, d: u32 },
}

impl Job {
    /// Rows this job loads, for progress.
    pub fn rows(&self) -> u64 {
        match *self {
            Job::Items { first, last } | Job::Stock { first, last, .. } => {
                u64::from(last - first + 1)
            }
            Job::Warehouse(_) => 1 + u64::from(DISTRICTS),
            Job::Customers { .. } => 2 * u64::from(CUSTOMERS),
            // Orders, their ~10 lines each, and the new orders.
            Job::Orders { .. } => u64::from(ORDERS) * 11 + u64::from(ORDERS - FIRST_NEW_ORDER + 1),
        }
    }

    fn seed(&self, seed: u64) -> u64 {
        let (kind, a, b) = match *self {
            Job::Items { first, .. } => (1u64, 0, first),
            Job::Warehouse(w) => (2, w, 0),
            Job::Stock { w, first, .. } => (3, w, first),
            Job::Customers { w, d } => (4, w, d),
            Job::Orders { w, d } => (5, w, d),
        };
        seed ^ (kind << 60) ^ (u64::from(a) << 24) ^ u64::from(b)
    }
}

/// Every job of a load of `warehouses`, the big ones first so that the last to finish are
/// short; the items, which every warehouse's orders read, go first of all.
pub fn jobs(warehouses: u32) -> Vec<Job> {
    let mut jobs = Vec::new();
    let slices = |total: u32| {
        (0..total.div_ceil(STOCK_SLICE))
            .map(move |i| (i * STOCK_SLICE + 1, ((i + 1) * STOCK_SLICE).min(total)))
    };
    for (first, last) in slices(ITEMS) {
        jobs.push(Job::Items { first, last });
    }
    for w in 1..=warehouses {
        for (first, last) in slices(ITEMS) {
            jobs.push(Job::Stock { w, first, last });
        }
    }
    for w in 1..=warehouses {
        for d in 1..=DISTRICTS {
            jobs.push(Job::Orders { w, d });
            jobs.push(Job::Customers { w, d });
        }
        jobs.push(Job::Warehouse(w));
    }
    jobs
}

/// A job's rows: `(table, text)` for each table it fills.
pub fn generate(job: Job, seed: u64, c: &Constants, now: &str) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng::seeded(job.seed(seed));
    let r = &mut rng;
    match job {
        Job::Items { first, last } => vec![("item", items(r, first, last))],
        Job::Warehouse(w) => vec![
            ("warehouse", warehouse(r, w)),
            ("district", districts(r, w)),
        ],
        Job::Stock { w, first, last } => vec![("stock", stock(r, w, first, last))],
        Job::Customers { w, d } => {
            let (cust, hist) = customers(r, w, d, c, now);
            vec![("customer", cust), ("history", hist)]
        }
        Job::Orders { w, d } => {
            let (o, ol, no) = orders(r, w, d, now);
            vec![("orders", o), ("order_line", ol), ("new_order", no)]
        }
    }
}

fn tab(out: &mut Vec<u8>) {
    out.push(b'\t');
}

fn address(r: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..3 {
        astring(r, 10, 20, out);
        tab(out);
    }
    let (a, b) = (r.uniform(0, 25) as u8, r.uniform(0, 25) as u8);
    out.extend_from_slice(&[b'A' + a, b'A' + b]);
    tab(out);
    zip(r, out);
}

fn items(r: &mut Rng, first: u32, last: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity((last - first + 1) as usize * 90);
    for i in first..=last {
        let _ = write!(out, "{i}\t{}\t", r.uniform(1, 10_000));
        astring(r, 14, 24, &mut out);
        tab(&mut out);
        fixed(r, 100, 10_000, 2, &mut out);
        tab(&mut out);
        data_field(r, &mut out);
        out.push(b'\n');
    }
    out
}

fn warehouse(r: &mut Rng, w: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = write!(out, "{w}\t");
    astring(r, 6, 10, &mut out);
    tab(&mut out);
    address(r, &mut out);
    tab(&mut out);
    fixed(r, 0, 2000, 4, &mut out);
    out.extend_from_slice(b"\t300000.00\n");
    out
}

fn districts(r: &mut Rng, w: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for d in 1..=DISTRICTS {
        let _ = write!(out, "{d}\t{w}\t");
        astring(r, 6, 10, &mut out);
        tab(&mut out);
        address(r, &mut out);
        tab(&mut out);
        fixed(r, 0, 2000, 4, &mut out);
        let _ = writeln!(out, "\t30000.00\t{}", ORDERS + 1);
    }
    out
}

fn stock(r: &mut Rng, w: u32, first: u32, last: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity((last - first + 1) as usize * 320);
    for i in first..=last {
        let _ = write!(out, "{i}\t{w}\t{}\t", r.uniform(10, 100));
        for _ in 0..10 {
            astring(r, 24, 24, &mut out);
            tab(&mut out);
        }
        out.extend_from_slice(b"0\t0\t0\t");
        data_field(r, &mut out);
        out.push(b'\n');
    }
    out
}

fn customers(r: &mut Rng, w: u32, d: u32, k: &Constants, now: &str) -> (Vec<u8>, Vec<u8>) {
    let mut out = Vec::with_capacity(CUSTOMERS as usize * 700);
    let mut hist = Vec::with_capacity(CUSTOMERS as usize * 70);
    let mut name = Vec::new();
    for c in 1..=CUSTOMERS {
        let _ = write!(out, "{c}\t{d}\t{w}\t");
        astring(r, 8, 16, &mut out);
        out.extend_from_slice(b"\tOE\t");
        // The first thousand customers take every name once; the rest are skewed (4.3.2.3).
        let n = if c <= 1000 {
            c - 1
        } else {
            nurand(r, 255, 0, 999, k.c_last)
        };
        last_name(n, &mut name);
        out.extend_from_slice(&name);
        tab(&mut out);
        address(r, &mut out);
        tab(&mut out);
        nstring(r, 16, &mut out);
        let credit = if r.uniform(1, 10) == 1 { "BC" } else { "GC" };
        let _ = write!(out, "\t{now}\t{credit}\t50000.00\t");
        fixed(r, 0, 5000, 4, &mut out);
        out.extend_from_slice(b"\t-10.00\t10.00\t1\t0\t");
        astring(r, 300, 500, &mut out);
        out.push(b'\n');
        let _ = write!(hist, "{c}\t{d}\t{w}\t{d}\t{w}\t{now}\t10.00\t");
        astring(r, 12, 24, &mut hist);
        hist.push(b'\n');
    }
    (out, hist)
}

fn orders(r: &mut Rng, w: u32, d: u32, now: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    // O_C_ID: a random permutation of the customers (Fisher-Yates).
    let mut cust: Vec<u32> = (1..=CUSTOMERS).collect();
    for i in (1..cust.len()).rev() {
        let j = r.uniform(0, i as u32) as usize;
        cust.swap(i, j);
    }
    let mut o = Vec::with_capacity(ORDERS as usize * 50);
    let mut ol = Vec::with_capacity(ORDERS as usize * 10 * 70);
    let mut no = Vec::new();
    for id in 1..=ORDERS {
        let delivered = id < FIRST_NEW_ORDER;
        let lines = r.uniform(5, 15);
        let carrier = match delivered {
            true => r.uniform(1, 10).to_string(),
            false => "\\N".to_string(),
        };
        let _ = writeln!(
            o,
            "{id}\t{d}\t{w}\t{}\t{now}\t{carrier}\t{lines}\t1",
            cust[id as usize - 1]
        );
        for n in 1..=lines {
            let item = r.uniform(1, ITEMS);
            let _ = write!(ol, "{id}\t{d}\t{w}\t{n}\t{item}\t{w}\t");
            if delivered {
                let _ = write!(ol, "{now}\t5\t0.00\t");
            } else {
                ol.extend_from_slice(b"\\N\t5\t");
                fixed(r, 1, 999_999, 2, &mut ol);
                tab(&mut ol);
            }
            astring(r, 24, 24, &mut ol);
            ol.push(b'\n');
        }
        if !delivered {
            let _ = writeln!(no, "{id}\t{d}\t{w}");
        }
    }
    (o, ol, no)
}

/// Now as `YYYY-MM-DD HH:MM:SS` (UTC), the load's C_SINCE, O_ENTRY_D and H_DATE.
pub fn now_text() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        (rest / 60) % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(b: &[u8]) -> Vec<Vec<&[u8]>> {
        b.split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| l.split(|c| *c == b'\t').collect())
            .collect()
    }

    #[test]
    fn every_job_fills_rows_with_as_many_fields_as_its_table_has_columns() {
        let k = Constants {
            c_last: 10,
            c_id: 20,
            ol_i_id: 30,
        };
        for job in [
            Job::Items { first: 1, last: 50 },
            Job::Warehouse(2),
            Job::Stock {
                w: 2,
                first: 1,
                last: 50,
            },
            Job::Customers { w: 2, d: 3 },
            Job::Orders { w: 2, d: 3 },
        ] {
            for (table, text) in generate(job, 9, &k, "2026-12-07 01:02:03") {
                let cols = super::super::schema::columns(table).split(", ").count();
                let rows = lines(&text);
                assert!(!rows.is_empty(), "{table}");
                for r in rows {
                    assert_eq!(
                        r.len(),
                        cols,
                        "{table}: {:?}",
                        String::from_utf8_lossy(&r.concat())
                    );
                }
            }
        }
    }

    #[test]
    fn a_district_has_its_orders_new_orders_and_a_permutation_of_customers() {
        let (o, ol, no) = orders(&mut Rng::seeded(5), 1, 1, "2026-12-07 00:00:00");
        let o = lines(&o);
        assert_eq!(o.len(), ORDERS as usize);
        let mut cust: Vec<u32> = o
            .iter()
            .map(|r| std::str::from_utf8(r[3]).unwrap().parse().unwrap())
            .collect();
        cust.sort();
        assert_eq!(cust, (1..=CUSTOMERS).collect::<Vec<_>>());
        let lines_total: usize = o
            .iter()
            .map(|r| std::str::from_utf8(r[6]).unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(lines(&ol).len(), lines_total);
        assert_eq!(lines(&no).len(), (ORDERS - FIRST_NEW_ORDER + 1) as usize);
        assert_eq!(o[2100][5], b"\\N", "order 2101 is undelivered");
        assert_ne!(o[2099][5], b"\\N");
    }

    #[test]
    fn the_jobs_cover_every_warehouse_once() {
        let j = jobs(3);
        assert_eq!(
            j.iter().filter(|j| matches!(j, Job::Warehouse(_))).count(),
            3
        );
        let stock: u64 = j
            .iter()
            .filter(|j| matches!(j, Job::Stock { .. }))
            .map(Job::rows)
            .sum();
        assert_eq!(stock, 3 * u64::from(ITEMS));
        assert!(matches!(j[0], Job::Items { first: 1, .. }));
    }

    #[test]
    fn now_is_a_date_time() {
        let n = now_text();
        assert_eq!(n.len(), 19);
        assert!(n.starts_with("20"), "{n}");
    }
}
