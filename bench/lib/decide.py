"""What the bench scripts share to decide between two clients on a noisy machine.

Two kinds of evidence, each for both tools in the same script run:

* Counts the clock does not move (`counts`): user-space instructions per query under callgrind,
  and system calls and context switches per query under `perf stat`. Each is the difference of
  two runs of the same command line that differ only in how many events they run, divided by
  the difference in queries, so start-up, connecting and the end cancel.
* Timings as randomized multiple interleaved trials (`Trials`): many short runs, the two tools'
  order shuffled in every pair, each pair's ratio taken on the log scale, and the mean of those
  judged by a paired 95% interval: "ahead", "behind", "equivalent within +-X%" or "undecided".
  This VM's CPUs change speed by up to 2x in spells of seconds; runs a few seconds apart share
  a spell more often than not, and the shuffle keeps one tool from always running in the spell
  after the other's (a fixed order moved rows by 5-9% here).
"""
import math, os, random, re, statistics, subprocess, sys, tempfile

# Two-sided 95% quantiles of Student's t by degrees of freedom (beyond 30: the normal's
# plus the first term of its expansion, within 0.2% of the exact value).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    return _T975[df - 1] if df <= 30 else 1.960 + 2.4 / df


def paired(ratios, margin):
    """The paired interval of per-pair ratios (bakeoff's over the peer's) on the log scale and
    its verdict. `margin` is the equivalence margin as a fraction (0.05: +-5%)."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n) if n > 1 else math.inf
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    reach = max(abs(lo - 1), abs(hi - 1))
    if lo > 1:
        verdict = "ahead"
    elif hi < 1:
        verdict = "behind"
    elif reach <= margin:
        verdict = f"equivalent within +-{reach * 100:.1f}%"
    else:
        verdict = "undecided"
    return dict(n=n, ratio=math.exp(mean), lo=lo, hi=hi, verdict=verdict)


def decided(ratios, margin):
    return paired(ratios, margin)["verdict"] != "undecided"


class Trials:
    """Pairs of runs of two tools in a shuffled order, until the paired interval decides (at
    least `min_pairs`, at most `max_pairs`). Stopping once decided spends the machine where the
    answer is close; the minimum keeps an early lucky streak from deciding alone."""

    def __init__(self, seed, margin=0.05, min_pairs=10, max_pairs=40):
        self.rng = random.Random(seed)
        self.margin, self.min_pairs, self.max_pairs = margin, min_pairs, max_pairs

    def run(self, tools, one, key="qps", label=""):
        """`one(tool)` runs a tool once and returns a dict with `key`. Returns every run by
        tool and the per-pair ratios of the second tool over the first."""
        res = {t: [] for t in tools}
        ratios = []
        while len(ratios) < self.max_pairs:
            order = list(tools)
            self.rng.shuffle(order)
            for tool in order:
                res[tool].append(one(tool))
            ratios.append(res[tools[1]][-1][key] / res[tools[0]][-1][key])
            print(f"# {label} pair {len(ratios)} order {'/'.join(order)} ratio {ratios[-1]:.3f}",
                  file=sys.stderr, flush=True)
            if len(ratios) >= self.min_pairs and decided(ratios, self.margin):
                break
        return res, ratios


def verdict_cells(ratios, margin):
    v = paired(ratios, margin)
    return f"{v['ratio']:.3f}x | {v['lo']:.3f}-{v['hi']:.3f} | {v['n']} | {v['verdict']}"


VERDICT_HEADER = "ratio (geo. mean) | 95% interval | pairs | verdict"


def _callgrind_instructions(argv, env=None, cwd=None):
    with tempfile.NamedTemporaryFile(prefix="bench-callgrind-", suffix=".out", delete=False) as f:
        out_file = f.name
    try:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                            "--dump-line=no", "--compress-strings=no"] + argv,
                           capture_output=True, text=True, env=env, cwd=cwd)
        if p.returncode != 0:
            raise RuntimeError(f"under callgrind, {argv[0]} failed ({p.returncode}):\n{p.stderr[-2000:]}")
        with open(out_file) as f:
            text = f.read()
        m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
        return int(m.group(1)), p.stdout
    finally:
        os.unlink(out_file)


def _perf_counts(argv, env=None, cwd=None):
    p = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,context-switches", "--"] + argv,
                       capture_output=True, text=True, env=env, cwd=cwd)
    if p.returncode != 0:
        raise RuntimeError(f"under perf stat, {argv[0]} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    counts = {}
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] in ("raw_syscalls:sys_enter", "context-switches") and f[0].isdigit():
            counts[f[2]] = int(f[0])
    if len(counts) != 2:
        raise RuntimeError(f"perf stat gave no counts (is perf allowed here?):\n{p.stderr[-1000:]}")
    return counts["raw_syscalls:sys_enter"], counts["context-switches"], p.stdout


def instructions_per_query(argv_for, queries_in, small, large, env=None, cwd=None):
    """User-space instructions per query: callgrind's total over two runs that differ only in
    their event count (`argv_for(events)`), less one another, over the queries between them
    (`queries_in(stdout)`)."""
    i1, o1 = _callgrind_instructions(argv_for(small), env, cwd)
    i2, o2 = _callgrind_instructions(argv_for(large), env, cwd)
    return (i2 - i1) / (queries_in(o2) - queries_in(o1))


def kernel_per_query(argv_for, queries_in, small, large, env=None, cwd=None):
    """System calls and context switches per query, by the same difference under perf stat
    (every thread of the tool counted)."""
    s1, c1, o1 = _perf_counts(argv_for(small), env, cwd)
    s2, c2, o2 = _perf_counts(argv_for(large), env, cwd)
    q = queries_in(o2) - queries_in(o1)
    return (s2 - s1) / q, (c2 - c1) / q


def counts_row(label, peer, ours):
    """One Markdown row: each count of the peer and of bakeoff, and bakeoff's over the peer's."""
    cells = []
    for k, fmt in (("instr", "{:.0f}"), ("syscalls", "{:.2f}"), ("switches", "{:.2f}")):
        a, b = peer.get(k), ours.get(k)
        if a is None or b is None:
            cells.append("- | - | -")
        else:
            cells.append(f"{fmt.format(a)} | {fmt.format(b)} | {b / a:.2f}x")
    return f"| {label} | " + " | ".join(cells) + " |"


def counts_header(peer):
    return (f"| row | {peer} instr/q | bakeoff instr/q | ratio | {peer} syscalls/q | bakeoff syscalls/q | ratio "
            f"| {peer} switches/q | bakeoff switches/q | ratio |\n|" + "---|" * 10)
