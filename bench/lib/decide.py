"""What the bench scripts share to decide between two clients on a noisy machine.

Two kinds of evidence, each for both tools in the same script run:

* Counts the clock does not move (`counts`): user-space instructions per query under callgrind,
  and system calls and context switches per query under `perf stat`. Each is the difference of
  two runs of the same command line that differ only in how many events they run, divided by
  the difference in queries, so start-up, connecting and the end cancel.
* Timings as randomized multiple interleaved trials (`Trials`): many short runs in pairs,
  each pair's ratio taken on the log scale, judged by paired intervals: "equivalent within
  +-X%", "ahead", "behind" or "undecided". This VM's CPUs change speed by up to 2x in spells of
  seconds, so a pair's ratio spreads widely (a log-ratio sd of 0.18 for 2 s runs here); the
  order is counterbalanced (a random order, then its reverse) so that neither tool runs more
  often in the spell after the other's (a fixed order moved rows by 5-9% here).

The rule holds its error rates under its own stopping: the pairs are looked at every `look`
pairs (10) up to `max_pairs`, and each look spends an equal share of the 5% (Bonferroni over
the looks): a difference is claimed when the 1 - 5%/k interval excludes 1, equivalence (two
one-sided tests) when the 1 - 10%/k interval lies within the margin, symmetric on the log
scale ([1/1.05, 1.05] for 5%). Stopping at the first look that decides, with a plain 95%
interval, called identical tools different about 20% of the time in a simulation of this VM.
"""
import math, os, random, re, shutil, statistics, subprocess, sys, tempfile

# Two-sided 95% quantiles of Student's t by degrees of freedom (beyond 30: the normal's
# plus the first term of its expansion, within 0.2% of the exact value).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    return _T975[df - 1] if df <= 30 else 1.960 + 2.4 / df


def t_quantile(p, df):
    """Student's t quantile for a two-sided level 1 - 2(1 - p), by bisection on its CDF
    (the regularized incomplete beta by continued fraction): levels past the table's 97.5%."""
    if p == 0.975:
        return t975(df)
    def cdf(t):
        x = df / (df + t * t)
        return 1 - 0.5 * _betainc(df / 2, 0.5, x)
    lo, hi = 0.0, 100.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def _betainc(a, b, x):
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x > (a + 1) / (a + b + 2):
        return 1 - _betainc(b, a, 1 - x)
    f, c, d = 1.0, 1.0, 0.0
    for i in range(200):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1 + num * d
        d = 1 / (d if abs(d) > 1e-30 else 1e-30)
        c = 1 + num / (c if abs(c) > 1e-30 else 1e-30)
        f *= c * d
        if abs(c * d - 1) < 1e-12:
            break
    return front * (f - 1) / a


def paired(ratios, margin, looks=1, alpha=0.05):
    """Per-pair ratios (bakeoff's over the peer's) judged on the log scale at one of `looks`
    equal shares of `alpha`. `margin` is the equivalence margin as a fraction (0.05: +-5%)."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    se = statistics.stdev(logs) / math.sqrt(n) if n > 1 else math.inf
    a = alpha / looks
    half = t_quantile(1 - a / 2, n - 1) * se if n > 1 else math.inf
    tost = t_quantile(1 - a, n - 1) * se if n > 1 else math.inf
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    reach = math.exp(max(abs(mean - tost), abs(mean + tost))) - 1
    verdict = "undecided"
    if reach <= margin:
        verdict = f"equivalent within +-{reach * 100:.1f}%"
        if lo > 1 or hi < 1:
            verdict += ", " + ("ahead" if lo > 1 else "behind")
    elif lo > 1:
        verdict = "ahead"
    elif hi < 1:
        verdict = "behind"
    return dict(n=n, ratio=math.exp(mean), lo=lo, hi=hi, level=1 - a, verdict=verdict)


def decided(ratios, margin, looks=1):
    return paired(ratios, margin, looks)["verdict"] != "undecided"


class Trials:
    """Pairs of runs of two tools, looked at every `look` pairs until the rule decides or
    `max_pairs` ran (see the module's text). Stopping once decided spends the machine where the
    answer is close; the looks' shares of the 5% keep that from deciding by chance."""

    def __init__(self, seed, margin=0.05, look=10, max_pairs=60):
        self.rng = random.Random(seed)
        self.margin, self.look, self.max_pairs = margin, look, max_pairs
        self.looks = max(1, math.ceil(max_pairs / look))

    def run(self, tools, one, key="qps", label=""):
        """`one(tool)` runs a tool once and returns a dict with `key`. Returns every run by
        tool and the per-pair ratios of the second tool over the first."""
        res = {t: [] for t in tools}
        ratios = []
        order = list(tools)
        # One pair first, not counted: a row's first runs meet caches and a server the last
        # row left in another state (the first pair of a row read 0.37x where the rest read 1).
        for tool in order:
            one(tool)
        while len(ratios) < self.max_pairs:
            # Counterbalanced: a random order, then its reverse.
            if len(ratios) % 2 == 0:
                self.rng.shuffle(order)
            else:
                order.reverse()
            for tool in order:
                res[tool].append(one(tool))
            ratios.append(res[tools[1]][-1][key] / res[tools[0]][-1][key])
            print(f"# {label} pair {len(ratios)} order {'/'.join(order)} ratio {ratios[-1]:.3f}",
                  file=sys.stderr, flush=True)
            if len(ratios) % self.look == 0 and decided(ratios, self.margin, self.looks):
                break
        return res, ratios

    def cells(self, ratios):
        v = paired(ratios, self.margin, self.looks)
        return f"{v['ratio']:.3f}x | {v['lo']:.3f}-{v['hi']:.3f} ({v['level'] * 100:.2f}%) | {v['n']} | {v['verdict']}"

    def rule(self):
        return (f"pairs looked at every {self.look} up to {self.max_pairs}, each look at {5 / self.looks:.2f}% "
                f"(a difference on the {100 - 5 / self.looks:.2f}% interval, equivalence within "
                f"+-{self.margin * 100:.0f}% by two one-sided tests on the {100 - 10 / self.looks:.2f}% one)")


VERDICT_HEADER = "ratio (geo. mean of pairs) | interval | pairs | verdict"


def _callgrind_instructions(argv, env=None, cwd=None):
    """The instructions of `argv`'s own process. A process it forks is followed by callgrind
    and writes a file of its own (bakeoff forks its watchdog at start): each file is named
    by its pid, and the one read is the process started here (valgrind runs the program in
    the process it was started as)."""
    out_dir = tempfile.mkdtemp(prefix="bench-callgrind-")
    try:
        p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir}/%p.out",
                              "--dump-line=no", "--compress-strings=no"] + argv,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        stdout, stderr = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"under callgrind, {argv[0]} failed ({p.returncode}):\n{stderr[-2000:]}")
        with open(os.path.join(out_dir, f"{p.pid}.out")) as f:
            text = f.read()
        m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
        return int(m.group(1)), stdout
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _perf_counts(argv, env=None, cwd=None):
    """System calls and context switches of `argv` (every thread) under perf stat, and its
    voluntary and involuntary switches from the rusage wait4 returns for perf (perf's own few
    are in both runs of a difference and cancel)."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        p = subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,context-switches,task-clock", "--"] + argv,
                             stdout=out, stderr=err, text=True, env=env, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if p.returncode != 0:
        raise RuntimeError(f"under perf stat, {argv[0]} failed ({p.returncode}):\n{stderr[-2000:]}")
    counts = {}
    for line in stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] in ("raw_syscalls:sys_enter", "context-switches") and f[0].isdigit():
            counts[f[2]] = int(f[0])
        # The CPU time of every thread of the tool, in milliseconds (the clock moves it, but
        # the difference of two runs cancels connecting, logins and the end).
        if len(f) > 2 and f[2].startswith("task-clock") and f[0].replace(".", "", 1).isdigit():
            counts["task-clock"] = float(f[0])
    if len(counts) != 3:
        raise RuntimeError(f"perf stat gave no counts (is perf allowed here?):\n{stderr[-1000:]}")
    return dict(syscalls=counts["raw_syscalls:sys_enter"], switches=counts["context-switches"],
                voluntary=ru.ru_nvcsw, involuntary=ru.ru_nivcsw, cpu_us=counts["task-clock"] * 1000), stdout


def instructions_per_query(argv_for, queries_in, small, large, env=None, cwd=None):
    """User-space instructions per query: callgrind's total over two runs that differ only in
    their event count (`argv_for(events)`), less one another, over the queries between them
    (`queries_in(stdout)`)."""
    i1, o1 = _callgrind_instructions(argv_for(small), env, cwd)
    i2, o2 = _callgrind_instructions(argv_for(large), env, cwd)
    return (i2 - i1) / (queries_in(o2) - queries_in(o1))


def kernel_per_query(argv_for, queries_in, small, large, env=None, cwd=None):
    """System calls and context switches per query, by the same difference under perf stat
    (every thread of the tool counted), the switches also split into voluntary (the client
    blocked: waited for a reply) and involuntary (it was preempted: by the server, on shared
    CPUs) from the rusage. A dict of those four."""
    k1, o1 = _perf_counts(argv_for(small), env, cwd)
    k2, o2 = _perf_counts(argv_for(large), env, cwd)
    q = queries_in(o2) - queries_in(o1)
    return {k: (k2[k] - k1[k]) / q for k in k1}


KERNEL = ("syscalls", "switches", "voluntary", "involuntary", "cpu_us")


def counted(tools, one, repeats=3, seed=0):
    """Each tool's counts `repeats` times, the tools in counterbalanced order (a random order,
    then its reverse), since a count above one connection moves with the machine's speed and
    the load (the same native row read 2.73 and 3.74 syscalls a query an hour apart): the
    peer's three and bakeoff's three then meet the same spells. `one(tool, first)` returns a
    dict of counts (`first`: this tool's first time, where callgrind's instructions, which
    do not move, are counted once). `seed` differs per row, so that which tool goes first
    (and last) changes from row to row. Returns {tool: {count: [values]}}."""
    rng = random.Random(seed)
    order = list(tools)
    out = {t: {} for t in tools}
    for r in range(repeats):
        if r % 2 == 0:
            rng.shuffle(order)
        else:
            order.reverse()
        for tool in order:
            for k, v in one(tool, r == 0).items():
                out[tool].setdefault(k, []).append(v)
    return out


def counts_rows(label, conns, peer, ours, one_per_thread):
    """The instructions row (at one connection), then the kernel's row (at `conns`), each
    judged (`judged`). `one_per_thread`: whether each of bakeoff's client threads has one
    connection in the kernel's row (then its switches judge it; else its CPU per query does)."""
    rows = []
    if "instr" in peer:
        rows.append(counts_row(f"{label}, 1", {"instr": peer["instr"]}, {"instr": ours["instr"]}, ("instr",)))
    judge = ("syscalls", "switches") if one_per_thread else ("syscalls", "cpu_us")
    rows.append(counts_row(f"{label}, {conns}", {k: v for k, v in peer.items() if k != "instr"},
                           {k: v for k, v in ours.items() if k != "instr"}, judge))
    return "\n".join(rows)


COLUMNS = (("instr", "{:.0f}", "instr"), ("syscalls", "{:.2f}", "syscalls"), ("switches", "{:.2f}", "switches"),
           ("voluntary", "{:.2f}", "of which voluntary"), ("involuntary", "{:.2f}", "involuntary"),
           ("cpu_us", "{:.2f}", "client CPU us"))

# The rule (issue 75): a row passes when each count that judges it is at most the peer's.
# Context switches say what a client costs only where each thread has one connection: a
# client that multiplexes many connections on a thread takes several replies a wake-up, so
# fewer switches there may mean it serves replies later, or spins. Above that the client's
# steady-state CPU per query judges (the two-run difference: connecting and logins cancel),
# with the system calls; the instructions row (one connection) always judges.
PASSING = ("<", "=", "<=")


def judged(marks):
    """A row's verdict from the marks of the counts that judge it: pass (each at most the
    peer's), fail (one more), or ? (one undecided, or its ranges overlapping)."""
    if all(m in PASSING for m in marks):
        return "pass"
    return "fail" if ">" in marks else "?"


def measured(values, fmt):
    """A count's median, with the range of its measurements when there are several."""
    vs = values if isinstance(values, list) else [values]
    m = statistics.median(vs)
    if len(vs) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(vs))}-{fmt.format(max(vs))})"


# Counts taken at least this many times per tool are judged by a paired interval.
PAIRED_COUNTS = 5


def against(peer, ours, margin=0.05):
    """bakeoff's count against the peer's. Measured PAIRED_COUNTS times or more per tool, in
    rounds (`counted`: each round both tools, one after the other, so a round's two counts met
    the same spell), the rounds' ratios are judged as the timings' pairs are (`paired`, 95%,
    on the log scale): "<" fewer, "=" equivalent within +-margin, ">" more, "?" undecided.
    With fewer (or a count of zero), by their ranges: "<=" where bakeoff's median is at most
    the peer's, "~" where it is above it but the ranges overlap (the counts cannot tell them
    apart: each moves with the load by that much), ">" where bakeoff's least exceeds the
    peer's most."""
    p = peer if isinstance(peer, list) else [peer]
    o = ours if isinstance(ours, list) else [ours]
    if len(p) == len(o) >= PAIRED_COUNTS and min(p) > 0 and min(o) > 0:
        verdict = paired([b / a for a, b in zip(p, o)], margin)["verdict"]
        if verdict.endswith("behind"):
            return "<"
        if verdict.startswith("equivalent"):
            return "="
        return ">" if verdict == "ahead" else "?"
    if statistics.median(o) <= statistics.median(p):
        return "<="
    return "~" if min(o) <= max(p) else ">"


def counts_row(label, peer, ours, judge):
    """One Markdown row: each count of the peer and of bakeoff (median and range), bakeoff's
    median over the peer's, and `against`'s mark; then which counts judge it and the verdict."""
    cells, marks = [], []
    for k, fmt, _ in COLUMNS:
        a, b = peer.get(k), ours.get(k)
        if a is None or b is None:
            cells.append("- | - | -")
        else:
            if k in judge:
                marks.append(against(a, b))
            pm = statistics.median(a if isinstance(a, list) else [a])
            om = statistics.median(b if isinstance(b, list) else [b])
            # A count below what the row prints (blocking once in 1,000 transactions) has no
            # ratio worth reading: the mark alone says where bakeoff's stands.
            ratio = f"{om / pm:.2f}x " if pm >= 0.005 and om >= 0.005 else ""
            cells.append(f"{measured(a, fmt)} | {measured(b, fmt)} | {ratio}{against(a, b)}")
    names = ", ".join(dict((k, n) for k, _, n in COLUMNS)[k] for k in judge)
    verdict = judged(marks) if len(marks) == len(judge) else "?"
    return f"| {label} | " + " | ".join(cells) + f" | {names} | {verdict} |"


def counts_header(peer, unit="q"):
    cols = "".join(f" {peer} {name}/{unit} | bakeoff {name}/{unit} | ratio |" for _, _, name in COLUMNS)
    return f"| row (workload, connections) |{cols} judged by | verdict |\n|" + "---|" * (3 + 3 * len(COLUMNS))


COUNTS_CAVEATS = (
    "Caveats: under callgrind the client runs some 50x slower while the server does not, so replies are "
    "always waiting: a client that polls (bakeoff) skips its would-block rounds, one that blocks (the peer) "
    "does not, which favours bakeoff; work done per second (bakeoff's tick, its 50 ms interrupt check) "
    "is counted 50x too often, which disfavours it. Above one connection, system calls and context "
    "switches per query depend on how many replies one wake-up finds, and so on the machine's speed, and "
    "switches include preemption by the server and by anything else running (the involuntary ones). "
    "Each count is the median of its measurements (the tools alternating), with their range; the ratio "
    "is of medians. Measured 5 times or more, each round's ratio is judged as the timings' pairs are "
    "(95%, log scale): < fewer, = equivalent within +-5%, > more, ? undecided; else by the ranges: "
    "<= (at most the peer's), ~ (above it, the ranges overlapping: the counts cannot tell them apart) or > "
    "(bakeoff's least above the peer's most). A row passes when the counts that judge it are each <, = or <=: "
    "the instructions row by its instructions; a row at more connections by its system calls and, where each "
    "of bakeoff's client threads has one connection, its context switches, else its client CPU per query "
    "(perf's task-clock, every thread, by the same two-run difference: connecting and logins cancel). A client "
    "that serves many connections from a thread takes several replies a wake-up, so its switches say how "
    "client and server take turns, not what it costs. The voluntary and involuntary split says where the "
    "switches come from. The client CPU is all of the tool's CPU between the two runs' ends: work that grows "
    "with elapsed time rather than queries (bakeoff's ticker and sampler, and polling where it has CPUs of its "
    "own: these benches do not place it apart unless --server-cpus is given) counts too, and perf's system-call "
    "tracepoint adds the same cost to every system call of both tools.")
