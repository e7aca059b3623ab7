//! Keying and think time (clause 5.2.5): terminals that are not connections.
//!
//! A terminal is a user at a screen: it chooses a transaction from its deck, keys its
//! inputs in (a fixed keying time per type), submits it, waits for the answer, and thinks
//! (a negative exponential time, truncated at ten times its mean) before the next. Ten per
//! warehouse, each with its own warehouse and district, so at most 12.86 New-Orders a minute
//! per warehouse: a paced test's scale is its warehouses, and its terminals are thousands.
//! Here a terminal is its deck, its generator and where it is ([`PacedTerminal`], tens of
//! bytes); the engine's pacer holds the waits, and the connection that is free runs the
//! order (`Terminal::event`'s). The response time a terminal sees runs from its submission:
//! a wait for a free connection is part of it, as a queue in a TP monitor's is.

use std::any::Any;
use std::time::Duration;

use super::input::{draw, Deck, Tx};
use super::population::DISTRICTS;
use super::Run;
use crate::Rng;

/// Keying time per transaction type, seconds (5.2.5.7): New-Order, Payment, Order-Status,
/// Delivery, Stock-Level.
pub const KEYING_S: [f64; 5] = [18.0, 3.0, 2.0, 2.0, 2.0];
/// Mean think time per transaction type, seconds (5.2.5.7).
pub const THINK_MEAN_S: [f64; 5] = [12.0, 12.0, 10.0, 5.0, 5.0];
/// The 90th-percentile response time each type must stay under, seconds (5.2.5.3). A
/// Delivery here runs whole while its terminal waits (no deferred queue), so its limit
/// is the interactive part's 5 s, for all ten districts' work: stricter than the clause.
pub const RESPONSE_LIMIT_S: [f64; 5] = [5.0, 5.0, 5.0, 5.0, 20.0];
/// Terminals per warehouse (4.2.2).
pub const TERMINALS_PER_WAREHOUSE: u32 = 10;
/// The specification's ceiling: New-Orders a minute per warehouse at the minimum mix and
/// the mean waits (what efficiency is reckoned against, as go-tpc and CockroachDB do).
pub const TPMC_PER_WAREHOUSE: f64 = 12.86;

/// How many terminals a paced run of `warehouses` has: ten a warehouse unless `--terminals`
/// says otherwise; 0 when the run is not paced.
pub fn terminals(o: &super::TpccOptions, warehouses: u32) -> u32 {
    match (o.keying > 0.0, o.terminals) {
        (false, _) => 0,
        (true, 0) => warehouses.max(1) * TERMINALS_PER_WAREHOUSE,
        (true, n) => n,
    }
}

/// The ceiling of this deck (10 New-Orders in 23 cards) at the mean waits with instant
/// answers: New-Orders a minute per warehouse. 12.605: a run that paces perfectly reads
/// 98.0% of [`TPMC_PER_WAREHOUSE`].
pub fn deck_ceiling() -> f64 {
    let cards = super::input::DECK;
    let per_cycle: f64 = cards
        .iter()
        .map(|(tx, n)| f64::from(*n) * (KEYING_S[*tx as usize] + THINK_MEAN_S[*tx as usize]))
        .sum();
    let new_orders = cards
        .iter()
        .filter(|(tx, _)| *tx == Tx::NewOrder)
        .map(|(_, n)| f64::from(*n))
        .sum::<f64>();
    f64::from(TERMINALS_PER_WAREHOUSE) * new_orders * 60.0 / per_cycle
}

/// A think time of mean `mean` (5.2.5.4): -ln(r) times the mean, truncated at ten times it.
pub fn think_time(mean: f64, rng: &mut Rng) -> f64 {
    // 1 - u is in (0, 1], so the logarithm is finite.
    (-(1.0 - rng.unit()).ln() * mean).min(10.0 * mean)
}

/// One paced terminal: its warehouse and district (terminal `id` of `10 x warehouses`
/// serves every pair once), its deck and generator, and the type it chose last.
pub struct PacedTerminal {
    run: Run,
    w: u32,
    d: u32,
    /// Waits are the specification's times this (1: the clause's pacing; less: a quicker
    /// look at the same shape).
    scale: f64,
    rng: Rng,
    deck: Deck,
    next: Tx,
}

impl PacedTerminal {
    pub fn new(run: Run, id: u32, seed: u64, scale: f64) -> PacedTerminal {
        let w = run.warehouses.max(1);
        PacedTerminal {
            run,
            w: id % w + 1,
            d: (id / w) % DISTRICTS + 1,
            scale,
            rng: Rng::seeded(seed),
            deck: Deck::new(),
            next: Tx::NewOrder,
        }
    }
}

impl crate::Terminal for PacedTerminal {
    fn wait(&mut self, done: u8) -> Duration {
        // Before its first order a terminal has done nothing, and thinks as though it had
        // just done a transaction of a random type: the terminals' first orders spread
        // over a cycle rather than all landing at the first keying time's end.
        let thought = match done {
            0 => {
                let mean = THINK_MEAN_S[self.rng.uniform(0, 4) as usize];
                self.rng.unit() * (KEYING_S[0] + mean)
            }
            class => think_time(THINK_MEAN_S[usize::from(class - 1).min(4)], &mut self.rng),
        };
        self.next = self.deck.draw(&mut self.rng);
        Duration::from_secs_f64((thought + KEYING_S[self.next as usize]) * self.scale)
    }

    fn order(&mut self) -> Box<dyn Any> {
        let k = self.run.constants;
        Box::new(draw(
            self.next,
            self.w,
            self.d,
            self.run.warehouses,
            &k,
            &mut self.rng,
            Vec::new(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::input::Input;
    use crate::tpcc::Constants;
    use crate::Terminal;

    fn run(warehouses: u32) -> Run {
        let mut rng = Rng::seeded(1);
        Run {
            constants: Constants::for_run(None, &mut rng),
            warehouses,
            c_last_load: 0,
        }
    }

    #[test]
    fn the_decks_ceiling_is_12_605_new_orders_a_minute_per_warehouse() {
        assert!(
            (deck_ceiling() - 12.605).abs() < 0.001,
            "{}",
            deck_ceiling()
        );
        assert!(deck_ceiling() < TPMC_PER_WAREHOUSE);
    }

    #[test]
    fn think_times_are_exponential_truncated_at_ten_means() {
        let mut rng = Rng::seeded(3);
        let n = 200_000;
        let t: Vec<f64> = (0..n).map(|_| think_time(12.0, &mut rng)).collect();
        let mean = t.iter().sum::<f64>() / n as f64;
        // The truncation at 10 means takes e^-10 of the mass: the mean stays 12 s.
        assert!((mean - 12.0).abs() < 0.15, "mean {mean}");
        assert!(t.iter().all(|&x| (0.0..=120.0).contains(&x)));
        let over = t.iter().filter(|&&x| x > 12.0).count() as f64 / n as f64;
        assert!((over - (-1.0f64).exp()).abs() < 0.01, "P(> mean) {over}");
    }

    #[test]
    fn ten_terminals_a_warehouse_hold_each_district_once_and_order_for_their_warehouse() {
        let r = run(3);
        let mut seen = std::collections::BTreeSet::new();
        for id in 0..30 {
            let mut t = PacedTerminal::new(r, id, u64::from(id), 1.0);
            assert!(
                seen.insert((t.w, t.d)),
                "terminal {id} repeats {:?}",
                (t.w, t.d)
            );
            t.wait(0);
            let order = t.order().downcast::<Input>().expect("an Input");
            // Every order is for the terminal's warehouse; Stock-Level's for its district too
            // (2.8.1.2), the others draw theirs (2.4.1.2, 2.5.1.2, 2.6.1.2).
            match *order {
                Input::StockLevel { w, d, .. } => assert_eq!((w, d), (t.w, t.d)),
                Input::NewOrder { w, .. }
                | Input::Payment { w, .. }
                | Input::OrderStatus { w, .. }
                | Input::Delivery { w, .. } => assert_eq!(w, t.w),
            }
        }
        assert_eq!(seen.len(), 30);
    }

    #[test]
    fn a_terminals_waits_average_the_decks_cycle() {
        // Over many cycles a terminal waits keying + think of the deck's mix: 476 s per 23
        // transactions at the mean times.
        let mut t = PacedTerminal::new(run(1), 0, 9, 1.0);
        let mut total = 0.0;
        let mut done = 0.0;
        t.wait(0);
        let cycles = 23 * 4000;
        let mut class = t.next as u8 + 1;
        for _ in 0..cycles {
            done += t.wait(class).as_secs_f64();
            class = t.next as u8 + 1;
            total += 1.0;
        }
        let per = done / total;
        assert!((per - 476.0 / 23.0).abs() < 0.3, "mean wait {per}");
        // Scaled: a tenth of the waits.
        let mut quick = PacedTerminal::new(run(1), 0, 9, 0.1);
        let w = quick.wait(1).as_secs_f64();
        assert!(w <= 0.1 * (120.0 + 18.0), "{w}");
    }
}
