//! What the report decides, as plain data: each comparison of a variant against its
//! baseline with its verdicts (throughput; cost and latency each in a family of their own),
//! the A/A checks, an auto study's status and what its comparisons asked for. Re-exported by
//! `model.rs`, whose curves and tables they judge.

use serde::Serialize;

/// One variant against its baseline at one thread count. Its default is a row not yet
/// judged: nothing decided, no evidence, no figures.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Comparison {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    /// The variant this row is compared with (see `baseline::Rule`).
    pub against: String,
    /// Mean throughput over the baseline's; None when the baseline has no figure here.
    pub ratio: Option<f64>,
    /// The ratio's interval at the family's adjusted level (1 - 5%/m, see `decide.rs`); None
    /// with fewer than two repetitions on either side.
    pub ci: Option<(f64, f64)>,
    /// The adjusted interval excludes 1: the verdict is different (within the margin or not).
    pub significant: bool,
    /// Why there is no ratio: "no baseline: failed: <reason>".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How the interval was made: "paired" (the ratio in each block, their geometric mean
    /// and t interval on the log scale) or "unpaired" (ratio of means, Welch's interval on
    /// the log scale: studies before blocks, sequential order, merged machines).
    pub method: &'static str,
    /// Repetitions (blocks, when paired) behind the interval.
    pub blocks: u32,
    pub verdict: Verdict,
    /// Not different: no difference larger than this (a fraction), the adjusted interval's
    /// reach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// The adjusted 90% interval of the equivalence test (two one-sided tests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tost: Option<(f64, f64)>,
    /// The interval the verdict was judged on, as every view shows it: `tost` for equivalent
    /// and different-but-within, `ci` for different and undecided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    /// `interval`'s confidence level (0.9875 is 98.75%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    /// The study's throughput comparisons tested together (the family's size, m).
    pub family: u32,
    /// The equivalence margin (a fraction, symmetric on the log scale).
    pub margin: f64,
    /// The smallest difference this comparison detects at 80% power at the adjusted level,
    /// from its spread (never from the observed effect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// The evidence the verdict is made from (log scale), before judging.
    #[serde(skip)]
    pub evidence: Option<crate::evidence::Evidence>,
    /// The server's CPU per transaction, variant over baseline, paired and judged like
    /// throughput in a family of its own; None where either side has no CPU figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostVerdict>,
    /// p99 latency, variant over baseline, paired per block on the log scale and judged in
    /// a family of its own (the latency comparisons share their own 5%); None where a side
    /// has no p99 in every paired block, or where turns cut the tail (`latency_note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<CostVerdict>,
    /// Why no latency verdict, where that is not plain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_note: Option<String>,
    /// The evidence latency is judged from (log scale), before judging.
    #[serde(skip)]
    pub latency_evidence: Option<crate::evidence::Evidence>,
    /// p95 latency, judged as p99 is, in the same latency family (p95's and p99's
    /// comparisons share its 5%); None where p99 has none for the tail turns cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_p95: Option<CostVerdict>,
    #[serde(skip)]
    pub latency_p95_evidence: Option<crate::evidence::Evidence>,
    /// The evidence cost is judged from (log scale), before judging.
    #[serde(skip)]
    pub cost_evidence: Option<crate::evidence::Evidence>,
    /// An auto study's sizing and paired blocks, until judged on the blocks it asked for.
    #[serde(skip)]
    pub asked: Option<Asked>,
    /// The workload's servers took turns: every line that gives this verdict says so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_turns: bool,
    /// Where the variants' switch penalties differ by enough to move the verdict: what one
    /// server at a time would read, as they estimate it (`turns::carry_over`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carry_over: Option<CarryOver>,
    /// The same comparison on the study's check blocks, one server at a time, and whether
    /// the two ways agree (`validate.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<TurnsCheck>,
}

/// The verdict a comparison by turns would get one server at a time, as the variants'
/// switch penalties estimate it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct CarryOver {
    /// The ratio one server at a time, estimated.
    pub ratio: f64,
    pub verdict: Verdict,
    /// The factor the penalties move the ratio by, and its standard error (log scale).
    pub shift: f64,
    pub se: f64,
}

/// The server's CPU per transaction of a comparison's variant over its baseline's (below 1:
/// the variant spends less CPU on a transaction), judged as throughput is (see `decide.rs`)
/// in the study's family of cost comparisons. The throughput family and its sizing do not
/// count these.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CostVerdict {
    pub ratio: f64,
    pub verdict: Verdict,
    /// The interval the verdict was judged on, and its level.
    pub interval: (f64, f64),
    pub level: f64,
    /// The two-sided interval and the equivalence test's, as for throughput.
    pub ci: (f64, f64),
    pub tost: (f64, f64),
    pub family: u32,
    pub blocks: u32,
}

/// The ratio of the first variant's second run to its first, block by block, at one workload
/// and thread count: the differences this machine shows between identical runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AaCheck {
    pub workload: String,
    pub threads: u32,
    pub blocks: u32,
    pub ratio: f64,
    /// The A/A ratio's interval at `level` (95% shared by the study's A/A checks): it should
    /// hold 1; one that does not is a warning about the set-up.
    pub ci: (f64, f64),
    pub holds_one: bool,
    pub level: f64,
    /// One run's spread (log scale, as a fraction) and the drift between blocks beyond it.
    pub run_noise: f64,
    pub block_noise: f64,
    /// The listed variant whose runs are the twin's (an A/A/B's `a-again`): its comparison
    /// reads the same runs, judged there on the blocks it asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub twin: Option<String>,
}

/// What a comparison says (see `decide.rs`).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The family-adjusted interval excludes 1, and reaches beyond the margin.
    Different,
    /// Different, and the equivalence test says within +-margin: a real but small difference.
    DifferentWithin,
    /// Not different, and the equivalence test says within +-margin.
    Equivalent,
    /// Neither: the data cannot tell (more blocks, or a quieter set-up, would).
    Undecided,
    /// No interval (one repetition, or no baseline figure).
    #[default]
    Open,
}

impl Verdict {
    /// The verdict in words, as the report's lines say it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Different => "different",
            Verdict::DifferentWithin => "different, within the margin",
            Verdict::Equivalent => "equivalent",
            Verdict::Undecided => "undecided",
            Verdict::Open => "open",
        }
    }
}

/// An auto study's stopping (Stein's two-stage design): how precise it asked, what its pilot
/// said it needs, and what it ran.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AutoStatus {
    pub precision: f64,
    pub max_repetitions: u32,
    /// Blocks of the pilot, whose spread sized the study.
    pub pilot: u32,
    /// Blocks the pilot said the study needs (may exceed max_repetitions).
    pub needed: u32,
    /// Comparisons the pilot settled alone, beyond the margin (their need is the pilot's).
    pub settled: u32,
    /// Blocks run (the most any comparison has).
    pub blocks: u32,
    /// How much a fixed loop's 100 ms slices varied on this machine's least steady CPU before
    /// the pilot (a fraction; the study's "steadiness" probe), where it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steadiness: Option<f64>,
}

/// What a comparison of an auto study keeps until it is judged: the study's sizing and its
/// paired blocks (block, baseline, variant) of throughput and of CPU per transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub precision: f64,
    pub cap: u32,
    pub pilot: u32,
    /// Whether the pilot settled it alone (set when judged): judged then on the pilot's
    /// blocks at the pilot look's share of the family's 5%.
    pub settled: bool,
    pub pairs: Vec<(u32, f64, f64)>,
    pub cpu: Vec<(u32, f64, f64)>,
    pub p99: Vec<(u32, f64, f64)>,
    pub p95: Vec<(u32, f64, f64)>,
}

/// A comparison by turns set beside the same comparison on the study's check blocks, one
/// server at a time (`validate.rs`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct TurnsCheck {
    /// Check blocks behind the one-at-a-time figures.
    pub blocks: u32,
    /// One server at a time: the ratio, its verdict and interval at the comparison's own level.
    pub ratio: f64,
    pub verdict: Verdict,
    pub interval: (f64, f64),
    /// By turns over one server at a time: 1 where the two agree.
    pub ratio_of_ratios: f64,
    /// Its interval at the checks' family level (`level`).
    pub agreement: (f64, f64),
    pub level: f64,
    /// The interval holds 1: no disagreement the check blocks can see.
    pub agree: bool,
    /// The interval lies within the comparison's equivalence margin: any carry-over is
    /// smaller than it. An interval that holds 1 but reaches beyond tells too little.
    pub within: bool,
    /// One check block's log ratio's spread (a fraction), and the blocks' by turns: what
    /// sizes the check (`study plan`).
    pub spread: f64,
    pub turns_spread: f64,
    pub turns_blocks: u32,
}
