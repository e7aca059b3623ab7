//! What a terminal asks of each transaction (clause 2.x.1): its inputs, drawn before the
//! transaction is sent, so that a transaction retried after a deadlock asks the same again;
//! and the deck that gives the mix (5.2.4.2).

use super::population::{CUSTOMERS, DISTRICTS, ITEMS};
use super::random::{nurand, Constants};
use crate::Rng;

/// The five transactions, in the order of their classes (class = index + 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx {
    NewOrder = 0,
    Payment = 1,
    OrderStatus = 2,
    Delivery = 3,
    StockLevel = 4,
}

/// 10 New-Order, 10 Payment and one of each other per 23 cards: 43.5% Payment and 4.3% of
/// each of the others, the minimum mix of 5.2.3, New-Order the rest.
pub(super) const DECK: [(Tx, u32); 5] = [
    (Tx::NewOrder, 10),
    (Tx::Payment, 10),
    (Tx::OrderStatus, 1),
    (Tx::Delivery, 1),
    (Tx::StockLevel, 1),
];

/// A terminal's deck, reshuffled each time it is used up.
pub struct Deck {
    cards: Vec<Tx>,
    next: usize,
}

impl Deck {
    pub fn new() -> Deck {
        let cards = DECK
            .iter()
            .flat_map(|(tx, n)| std::iter::repeat_n(*tx, *n as usize))
            .collect::<Vec<_>>();
        let next = cards.len();
        Deck { cards, next }
    }

    pub fn draw(&mut self, rng: &mut Rng) -> Tx {
        if self.next == self.cards.len() {
            for i in (1..self.cards.len()).rev() {
                let j = rng.uniform(0, i as u32) as usize;
                self.cards.swap(i, j);
            }
            self.next = 0;
        }
        self.next += 1;
        self.cards[self.next - 1]
    }
}

/// How a customer is named: by number, or by last name (NURand(255)'s number of syllables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    Id(u32),
    Last(u32),
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Line {
    pub item: u32,
    pub supply_w: u32,
    pub quantity: u32,
}

/// One transaction's inputs.
#[derive(Debug, Clone)]
pub enum Input {
    NewOrder {
        w: u32,
        d: u32,
        c: u32,
        /// Ordered by (item, supply warehouse): every terminal locks stock rows in one
        /// order, so two New-Orders cannot deadlock on them. The unused item (a rollback)
        /// sorts last.
        lines: Vec<Line>,
        remote: u32,
        rollback: bool,
    },
    Payment {
        w: u32,
        d: u32,
        c_w: u32,
        c_d: u32,
        who: Who,
        cents: u32,
    },
    OrderStatus {
        w: u32,
        d: u32,
        who: Who,
    },
    Delivery {
        w: u32,
        carrier: u32,
    },
    StockLevel {
        w: u32,
        d: u32,
        threshold: u32,
    },
}

impl Input {
    /// The transaction these are the inputs of.
    pub fn tx(&self) -> Tx {
        match self {
            Input::NewOrder { .. } => Tx::NewOrder,
            Input::Payment { .. } => Tx::Payment,
            Input::OrderStatus { .. } => Tx::OrderStatus,
            Input::Delivery { .. } => Tx::Delivery,
            Input::StockLevel { .. } => Tx::StockLevel,
        }
    }
}

/// Draw the inputs of `tx` for a terminal whose warehouse this time is `w` (of
/// `warehouses`), with its own district `home_d` (Stock-Level's).
pub fn draw(
    tx: Tx,
    w: u32,
    home_d: u32,
    warehouses: u32,
    k: &Constants,
    r: &mut Rng,
    lines: Vec<Line>,
) -> Input {
    let other = |r: &mut Rng| {
        // A warehouse other than `w`, uniformly.
        let o = r.uniform(1, warehouses - 1);
        if o >= w {
            o + 1
        } else {
            o
        }
    };
    let who = |r: &mut Rng| match r.uniform(1, 100) <= 60 {
        true => Who::Last(nurand(r, 255, 0, 999, k.c_last)),
        false => Who::Id(nurand(r, 1023, 1, CUSTOMERS, k.c_id)),
    };
    match tx {
        Tx::NewOrder => {
            let mut lines = lines;
            lines.clear();
            let n = r.uniform(5, 15);
            let rollback = r.uniform(1, 100) == 1;
            let mut remote = 0;
            for i in 0..n {
                let supply_w = match warehouses > 1 && r.uniform(1, 100) == 1 {
                    true => {
                        remote += 1;
                        other(r)
                    }
                    false => w,
                };
                let item = match rollback && i == n - 1 {
                    true => ITEMS + 1,
                    false => nurand(r, 8191, 1, ITEMS, k.ol_i_id),
                };
                lines.push(Line {
                    item,
                    supply_w,
                    quantity: r.uniform(1, 10),
                });
            }
            lines.sort_by_key(|l| (l.item, l.supply_w));
            Input::NewOrder {
                w,
                d: r.uniform(1, DISTRICTS),
                c: nurand(r, 1023, 1, CUSTOMERS, k.c_id),
                lines,
                remote,
                rollback,
            }
        }
        Tx::Payment => {
            let d = r.uniform(1, DISTRICTS);
            let (c_w, c_d) = match warehouses > 1 && r.uniform(1, 100) > 85 {
                true => (other(r), r.uniform(1, DISTRICTS)),
                false => (w, d),
            };
            Input::Payment {
                w,
                d,
                c_w,
                c_d,
                who: who(r),
                cents: r.uniform(100, 500_000),
            }
        }
        Tx::OrderStatus => Input::OrderStatus {
            w,
            d: r.uniform(1, DISTRICTS),
            who: who(r),
        },
        Tx::Delivery => Input::Delivery {
            w,
            carrier: r.uniform(1, 10),
        },
        Tx::StockLevel => Input::StockLevel {
            w,
            d: home_d,
            threshold: r.uniform(10, 20),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deck_gives_the_minimum_mix_in_every_23_cards() {
        let (mut deck, mut rng) = (Deck::new(), Rng::seeded(2));
        for _ in 0..5 {
            let mut n = [0u32; 5];
            for _ in 0..23 {
                n[deck.draw(&mut rng) as usize] += 1;
            }
            assert_eq!(n, [10, 10, 1, 1, 1]);
        }
    }

    #[test]
    fn inputs_follow_the_rates_of_the_specification() {
        let k = Constants {
            c_last: 1,
            c_id: 2,
            ol_i_id: 3,
        };
        let mut r = Rng::seeded(11);
        let (mut rollbacks, mut lines, mut remote, mut pay_remote, mut by_name) = (0, 0, 0, 0, 0);
        let n = 100_000;
        for _ in 0..n {
            if let Input::NewOrder {
                lines: l,
                remote: rm,
                rollback,
                w,
                ..
            } = draw(Tx::NewOrder, 3, 1, 10, &k, &mut r, Vec::new())
            {
                rollbacks += rollback as u32;
                lines += l.len();
                remote += rm;
                assert!(l
                    .windows(2)
                    .all(|p| (p[0].item, p[0].supply_w) <= (p[1].item, p[1].supply_w)));
                assert!(l.iter().all(|x| x.supply_w != w) == (rm as usize == l.len()));
                if rollback {
                    assert_eq!(l.last().unwrap().item, ITEMS + 1);
                }
            }
            if let Input::Payment { c_w, who, .. } =
                draw(Tx::Payment, 3, 1, 10, &k, &mut r, Vec::new())
            {
                pay_remote += (c_w != 3) as u32;
                by_name += matches!(who, Who::Last(_)) as u32;
            }
        }
        let pct = |x: f64, of: f64| 100.0 * x / of;
        assert!((0.85..1.15).contains(&pct(rollbacks as f64, n as f64)));
        assert!((0.9..1.1).contains(&pct(remote as f64, lines as f64)));
        assert!((14.5..15.5).contains(&pct(pay_remote as f64, n as f64)));
        assert!((59.0..61.0).contains(&pct(by_name as f64, n as f64)));
    }

    #[test]
    fn one_warehouse_has_nothing_remote() {
        let k = Constants {
            c_last: 1,
            c_id: 2,
            ol_i_id: 3,
        };
        let mut r = Rng::seeded(1);
        for _ in 0..1000 {
            if let Input::Payment { c_w, .. } = draw(Tx::Payment, 1, 1, 1, &k, &mut r, Vec::new()) {
                assert_eq!(c_w, 1);
            }
        }
    }
}
