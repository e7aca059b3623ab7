//! Whether a blocking read should look for the answer before it sleeps, or sleep first.
//!
//! The C client library reads first and, when nothing is there, sleeps in poll(2) and reads
//! again: three system calls for an answer that was not in yet, one for an answer that was.
//! Where the client has more threads than CPUs (sysbench's 64 on 2), the answer is almost never
//! in when the request has just gone, and the first read is wasted. So a connection remembers
//! how its first reads went: after misses it sleeps first (two calls), and every
//! [`SAMPLE`]th read it looks first again, so that a server that turns fast is noticed.

/// Every this many reads one looks before it sleeps, whatever the habit says.
pub(crate) const SAMPLE: u8 = 16;
/// A look that found nothing adds one, a look that found the answer takes one away; at
/// [`SLEEP_FIRST_AT`] or more, reads sleep first.
const MAX_MISSES: u8 = 3;
const SLEEP_FIRST_AT: u8 = 2;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReadHabit {
    misses: u8,
    reads: u8,
}

impl ReadHabit {
    /// Start a read: true when it should sleep until the socket is readable before reading.
    pub fn sleep_first(&mut self) -> bool {
        self.reads = (self.reads + 1) % SAMPLE;
        self.misses >= SLEEP_FIRST_AT && self.reads != 0
    }

    /// A read that looked first found nothing (`false`) or something (`true`).
    pub fn looked(&mut self, found: bool) {
        self.misses = if found {
            self.misses.saturating_sub(1)
        } else {
            (self.misses + 1).min(MAX_MISSES)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads against a server whose answers are (`true`) or are not yet (`false`) in; how many
    /// of them slept first.
    fn run(h: &mut ReadHabit, answers: impl IntoIterator<Item = bool>) -> usize {
        let mut slept_first = 0;
        for in_already in answers {
            if h.sleep_first() {
                slept_first += 1;
            } else {
                h.looked(in_already);
            }
        }
        slept_first
    }

    #[test]
    fn a_fast_server_is_always_looked_at_first() {
        let mut h = ReadHabit::default();
        assert_eq!(run(&mut h, [true; 100]), 0);
    }

    #[test]
    fn a_slow_server_is_slept_on_first_but_sampled() {
        let mut h = ReadHabit::default();
        let slept = run(&mut h, [false; 160]);
        // The first two reads look and miss; after that only the 16th, 32nd, ... look.
        assert_eq!(slept, 160 - 2 - 160 / SAMPLE as usize);
    }

    #[test]
    fn a_server_that_turns_fast_is_noticed_within_two_samples() {
        let mut h = ReadHabit::default();
        run(&mut h, [false; 50]);
        assert!(h.sleep_first());
        run(&mut h, [true; 2 * SAMPLE as usize]);
        assert_eq!(run(&mut h, [true; 50]), 0);
    }

    #[test]
    fn one_miss_among_hits_does_not_change_the_habit() {
        let mut h = ReadHabit::default();
        let answers = (0..200).map(|i| i % 5 != 0);
        assert_eq!(run(&mut h, answers), 0);
    }
}
