"""Timings by turns: the tools run at once against one server, and all but one are frozen.

Separate short runs of two tools (decide.Trials) put a second or more between a pair's two
runs, and this VM's CPUs change speed in spells of about that length: a pair's log ratio
spread 0.14-0.44 here (sd, 1 s runs), so a row at parity needed 60 pairs or more, and at the
noisier times several hundred. Here each tool is started once and left running; the bench
freezes them all (SIGSTOP) and lets one run at a time (SIGCONT) for a short slice, the order
shuffled every round and reversed in the next. A round's slices lie a few tenths of a second
apart; the rounds spread 0.06-0.16 (sd of the log ratio, 0.25 s slices, Lua point select at
2 connections) and a round costs some 0.6 s, start-up and connecting paid once, so 120-200
rounds decide in a minute or two.

What a slice measures: the statements the server took in from the tool between its SIGCONT
and the moment it took in the last one the tool had sent before its SIGSTOP, by the server's
own counter (MariaDB's `Questions`, which counts a statement as it starts on it, and not
COM_STMT_PREPARE), over that time. Both tools are counted by one clock and one definition, and neither tool's
start, connecting or end is in any slice. The counter is read only while every tool is frozen
and the server has taken in all they sent (`quiet`): a read while a tool runs came back 10 ms
late at 64 connections, up to 55 ms, a fifth of a slice. The tools' own CPU (their /proc
stat) and the server's are summed over the slices, for CPU per statement.

What freezing could bias, and what was checked (2 CPUs, MariaDB, point select):
- A frozen tool's connections sit idle in the server; a native bakeoff run beside a frozen
  sysbench read 1.018x its rate alone (8 pairs of 2 s runs).
- The statements a tool had sent when it froze end before the next tool goes (`quiet`).
- Its clocks keep running (it is started with a --time longer than the turns); waking its
  threads is in its slice. Frozen and let go every 0.3 s, a tool alone kept 0.96-0.97 of its
  rate running through, sysbench and native bakeoff alike.
- `--before` naming the same binary runs one tool as two: bakeoff's Lua path against itself
  read 1.013x (0.989-1.038, 120 rounds), equivalent within 3.4%. That checks order and
  position only: a bias that moves both copies alike (the backlog below, were its time left
  out) leaves their ratio at 1.
- A frozen tool in a transaction holds its row locks: each tool has tables of its own (the
  benches give it a database of its own, prepared alike), so no tool waits on another's.
- Each round's slices are ordered at random and the next round's in reverse; the rule judges
  the two as one block, so order cancels within the judged unit and neighbouring rounds, which
  share a spell, count once. The blocks' lag-1 correlation is printed beside the verdict.
- Where both tools give each connection a thread (sysbench; bakeoff's Lua path, or native
  with --client-threads equal to the connections), turns and runs agree: native bakeoff with
  64 threads against sysbench at 64 connections, 1.126x (1.077-1.178) by turns, 1.165x
  (1.101-1.233) by 20 pairs of runs.
- What lasts a start is outside every round of it: which database each tool has, which
  connected first, where the server put their threads. Two copies of bakeoff's Lua path at
  1024 connections read 0.918-1.122 over six starts (0.98-1.07 at 64). The benches start the
  tools afresh several times a row, balanced over databases and start order, and judge the
  row across the starts (`across`), with the starts' drift (`drift`) beside it.
  bench/lib/simulate_starts.py gives its error rates beside pooling (seeded): with starts
  spreading 0.06, pooled rounds claimed a difference between equal tools in 37% of rows, the
  starts in 5%.
- Not explained: native bakeoff's default at 64 connections (two threads multiplexing them)
  read 0.91x sysbench by turns (0.94x and 0.91x with each slice begun 0.1 s and 0.4 s after
  the tool was let go, an experiment since removed) where runs read
  1.06x, and 8 s runs 0.99x (5 pairs, too few to say). So the benches take turns only where
  both tools have a thread per connection, until that is understood.
"""
import ctypes, math, os, random, signal, subprocess, sys, tempfile, time

import decide

TICK = os.sysconf("SC_CLK_TCK")


class Questions:
    """MariaDB's statement counter, read over one connection of the `mariadb` client kept
    open (one process, no per-read start-up: a read costs the server one statement)."""

    def __init__(self, client, sock, user, password):
        self.reads = 0  # each read is itself a statement, counted by the server
        self.p = subprocess.Popen([client, "--no-defaults", f"--socket={sock}", f"--user={user}",
                                   f"--password={password}", "--batch", "--skip-column-names", "--unbuffered"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  # Out of the terminal's group: a Ctrl-C meant for the bench would
                                  # make the client answer the next read with its own words. It
                                  # still dies with the bench.
                                  start_new_session=True, preexec_fn=_die_with(os.getpid()))

    def read(self):
        try:
            self.p.stdin.write("SHOW GLOBAL STATUS LIKE 'Questions';\n")
            self.p.stdin.flush()
            line = self.p.stdout.readline()
        except OSError:
            line = ""
        if not line:
            raise RuntimeError(f"the counter's client (mariadb) ended: {self.p.stderr.read()[-1000:]}")
        self.reads += 1
        try:
            return int(line.split()[1])
        except (IndexError, ValueError):
            raise RuntimeError(f"the counter's client (mariadb) answered {line.strip()!r}, not Questions' value")

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Tool:
    """One tool, started once and frozen between its slices."""

    def __init__(self, name, argv, cwd=None):
        self.name, self.argv = name, argv
        self.err = tempfile.TemporaryFile(mode="w+")
        # Killed with the bench, even by SIGKILL: a frozen tool never ends by itself.
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.err, cwd=cwd,
                                  preexec_fn=_die_with(os.getpid()))

    def alive(self):
        return self.p.poll() is None

    def freeze(self):
        os.kill(self.p.pid, signal.SIGSTOP)

    def thaw(self):
        os.kill(self.p.pid, signal.SIGCONT)

    def failed(self):
        self.err.seek(0)
        return f"{self.name} ended ({self.p.returncode}) during the turns:\n{self.err.read()[-2000:]}"

    def stop(self):
        """Let it go and ask it to end (it reports what it ran, which nobody reads)."""
        try:
            if self.alive():
                self.thaw()
                self.p.terminate()
        except OSError:
            pass

    def reap(self):
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def end_all(tools):
    """Every tool let go and ended, first all signalled, then all waited for, with SIGTERM held
    off meanwhile: a cleanup cut short leaves a tool frozen for ever."""
    pending = []
    held = signal.signal(signal.SIGTERM, lambda *_: pending.append(True))
    try:
        for t in tools:
            t.stop()
        for t in tools:
            t.reap()
    finally:
        signal.signal(signal.SIGTERM, held if held is not None else signal.SIG_DFL)
        for t in tools:
            t.err.close()
    if pending:
        signal.raise_signal(signal.SIGTERM)


_prctl = ctypes.CDLL(None, use_errno=True).prctl  # bound here: the child only calls it


def _die_with(parent):
    """For preexec_fn: SIGKILL this child when the bench (`parent`) dies, even if it already has."""
    def arm():
        if _prctl(1, ctypes.c_ulong(signal.SIGKILL)) != 0:  # PR_SET_PDEATHSIG
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != parent:
            os._exit(1)
    return arm


class Turns:
    """Rounds of one slice per tool, looked at every `look` rounds up to `max_rounds`, judged as
    decide.Trials judges its pairs (the looks share the 5%)."""

    def __init__(self, seed, margin=0.05, look=40, max_rounds=200, slice_s=0.25, settle_s=0.01, lead_s=2.0):
        self.rng = random.Random(seed)
        # Whole blocks: a look falls on a block's end.
        look += look % 2
        max_rounds += max_rounds % 2
        self.margin, self.look, self.max_rounds = margin, look, max_rounds
        self.looks = max(1, math.ceil(max_rounds / look))
        self.slice_s, self.settle_s, self.lead_s = slice_s, settle_s, lead_s

    def start(self, tools, counter, conns, order=None):
        """Start each tool (`tools`: name -> (argv, cwd)) in `order` (shuffled unless given) and let
        it run alone until its statements flow and `lead` (more at many connections: connecting
        1024 takes a while) has passed; then freeze it. A tool that ends first is an error (its
        stderr said)."""
        started = {}
        if order is None:
            order = list(tools)
            self.rng.shuffle(order)
        try:
            for name in order:
                argv, cwd = tools[name]
                t = started[name] = Tool(name, argv, cwd)
                self._flow(t, counter, conns)
                t.freeze()
                quiet(counter, self.settle_s, time.monotonic())
        except BaseException:
            end_all(started.values())
            raise
        return started

    def _flow(self, t, counter, conns):
        """Until `t`'s statements flow at a rate that holds (three 0.3 s windows each within 30%
        of the last: connecting, the rate climbs), then `lead` more (more at many connections)
        whatever the rate does."""
        steady, last, since = 0, 0, None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            a = counter.read()
            time.sleep(0.3)
            if not t.alive():
                raise RuntimeError(t.failed())
            n = counter.read() - a - 1
            steady = steady + 1 if n > 0 and abs(n - last) < 0.3 * n else 0
            # Once steady, the lead runs on: at 1024 connections the rate over 0.3 s swings by
            # more than 30% now and then, and restarting the lead then never let it end.
            last = n
            if steady >= 3:
                since = since or time.monotonic()
                if time.monotonic() - since >= self.lead_s + conns / 500:
                    return
        raise RuntimeError(f"{t.name}'s statements did not flow at a steady rate within 300 s")

    def run(self, tools, counter, server_cpu, conns, label="", rounds=None, order=None):
        """Returns per tool the rate of each measured slice (statements a second) and the CPU per
        statement (client, server; microseconds) over all its slices, and the rounds' ratios of
        the second tool over the first. `rounds`: exactly that many measured rounds and no looks
        (one start of several: `across` judges them); `order`: the tools' start order."""
        started = self.start(tools, counter, conns, order)
        names = list(tools)
        rates = {n: [] for n in names}
        sums = {n: [0, 0.0, 0.0] for n in names}  # statements, client s, server s
        ratios = []
        try:
            # Two rounds unmeasured: each tool's first slice after its lead meets caches the
            # other left.
            for r in range(2 + (rounds or self.max_rounds)):
                if r % 2 == 0:
                    self.rng.shuffle(names)
                else:
                    names.reverse()
                for n in names:
                    got = self._slice(started[n], counter, server_cpu)
                    if r >= 2:
                        rates[n].append(got[0] / got[3])
                        for i in range(3):
                            sums[n][i] += got[i]
                if r >= 2:
                    a, b = list(tools)[:2]
                    ratios.append(rates[b][-1] / rates[a][-1])
                    each = " ".join(f"{n} {rates[n][-1]:.0f}" for n in names)
                    print(f"# {label} round {len(ratios)} {each} ratio {ratios[-1]:.3f}", file=sys.stderr, flush=True)
                    if rounds is None and len(ratios) % self.look == 0 and \
                            decide.decided(blocks(ratios), self.margin, self.looks):
                        break
        finally:
            end_all(started.values())
        cpu = {n: (s[1] / max(s[0], 1) * 1e6, s[2] / max(s[0], 1) * 1e6) for n, s in sums.items()}
        return rates, cpu, ratios

    def _slice(self, tool, counter, server_cpu):
        """Let `tool` run for a slice and freeze it again; (statements, client CPU s, server CPU
        s, seconds). Every tool is frozen and the server quiet at both reads of the counter
        that bound it: a read while a tool runs came back 10 ms late at 64 connections here,
        up to 55 ms, a fifth of a slice. The statements the tool had sent when it froze are
        its own: the server takes them in after the SIGSTOP (a frozen tool at 1024
        connections has most of them waiting), so the slice's time runs on until it has."""
        q0, c0, s0 = counter.read(), cpu_seconds(tool.p.pid), server_cpu()
        reads0 = counter.reads
        t0 = time.monotonic()
        tool.thaw()
        time.sleep(self.slice_s)
        tool.freeze()
        q1, t1 = quiet(counter, self.settle_s, time.monotonic())
        c1, s1 = cpu_seconds(tool.p.pid), server_cpu()
        if not tool.alive():
            raise RuntimeError(tool.failed())
        # Less the reads since q0 (each counted itself; q0 is in q0 already).
        n = q1 - q0 - (counter.reads - reads0)
        if n <= 0:
            raise RuntimeError(f"{tool.name} ran no statement in a {self.slice_s} s slice (is it stuck?)")
        return n, c1 - c0, s1 - s0, t1 - t0

    def cells(self, ratios, looks=None):
        """Ratio, interval, rounds, verdict: judged on blocks (`blocks`), at one of `looks` shares
        of the 5% (the rule's looks unless said: rounds of fixed starts had one)."""
        v = decide.paired(blocks(ratios), self.margin, looks or self.looks)
        return f"{v['ratio']:.3f}x | {v['lo']:.3f}-{v['hi']:.3f} ({v['level'] * 100:.2f}%) | {len(ratios)} | {v['verdict']}"

    def rule(self):
        return (f"rounds of one {self.slice_s} s slice per tool (the server quiet for {self.settle_s} s "
                f"before each read of its counter), judged in blocks of two rounds (an order and its "
                f"reverse), looked at every {self.look} rounds up to {self.max_rounds}, each look at {5 / self.looks:.2f}% "
                f"(a difference on the {100 - 5 / self.looks:.2f}% interval, equivalence within "
                f"+-{self.margin * 100:.0f}% by two one-sided tests on the {100 - 10 / self.looks:.2f}% one)")


def across(starts, margin):
    """The verdict across starts (each a list of rounds' ratios, the tools started afresh for
    it): each start's geometric mean ratio is one observation, judged by the paired rule at one
    look. What lasts a whole start (which tables a tool has, which tool connected first, where
    the server put their threads) is the same for every round of it, so the rounds of one start
    cannot see it, and pooling them would claim a precision the row does not have; the starts'
    spread does see it. Few starts give a wide interval (t with starts - 1 degrees of freedom):
    that width is the honest price of an effect that lasts a start."""
    means = start_means(starts)
    v = decide.paired(means, margin, 1)
    each = ", ".join(f"{m:.3f}" for m in means)
    return (f"{each} | {v['ratio']:.3f}x | {v['lo']:.3f}-{v['hi']:.3f} ({v['level'] * 100:.0f}%) | {len(means)} | "
            f"{v['verdict']} | {drift(means)}")


def start_means(starts):
    """Each start's geometric mean ratio (its rounds' ratios)."""
    return [math.exp(sum(math.log(x) for x in r) / len(r)) for r in starts]


def drift(means):
    """The starts' log mean ratio against their index, by least squares: per start, in percent,
    with its t. The verdict assumes starts alike; a steady drift (Lua point select at 1024
    connections rose 1.4% a start over 12, t 4.4: sysbench slowed more than bakeoff as the
    server aged) says the ratio depends on when it is measured, and the verdict averages it."""
    k = len(means)
    if k < 3:
        return "-"
    xs, ys = range(k), [math.log(m) for m in means]
    mx, my = (k - 1) / 2, sum(ys) / k
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    resid = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys)) / (k - 2)
    t = slope / math.sqrt(resid / sxx) if resid > 0 else math.inf
    return f"{(math.exp(slope) - 1) * 100:+.1f}% (t {t:.1f})"


def quiet(counter, pause, since, most=5.0):
    """Once every tool froze (at `since`): the counter when the server has taken in every
    statement sent to it (two reads `pause` apart that differ by the later read alone), and
    about when it took in the last: halfway between the ends of the reads around the last rise,
    or halfway from `since` to the end of the first read if none rose after it. Times are
    taken as reads return: a read sent while the server works off a backlog comes back late
    (10-55 ms at 64 connections), and the backlog may end inside it."""
    q = counter.read()
    after = time.monotonic()
    took_last = (since + after) / 2
    end = after + most
    while time.monotonic() < end:
        before = after
        time.sleep(pause)
        r = counter.read()
        after = time.monotonic()
        if r - q <= 1:
            return r, took_last
        took_last = (before + after) / 2
        q = r
    raise RuntimeError(f"the server kept taking statements for {most} s after every tool froze")


def blocks(ratios):
    """A round and the next (its order reversed) as one ratio, their geometric mean: the
    judged unit is then balanced for order, and neighbouring rounds, which share a spell of
    the machine's speed, count once."""
    return [math.sqrt(a * b) for a, b in zip(ratios[0::2], ratios[1::2])]


def lag1(ratios):
    """Correlation of each block's log ratio with the next one's: near 0, blocks are as
    independent as the interval assumes; well above it, the interval is too narrow."""
    lr = [math.log(x) for x in blocks(ratios)]
    if len(lr) < 3:
        return float("nan")
    m = sum(lr) / len(lr)
    var = sum((x - m) ** 2 for x in lr)
    return sum((a - m) * (b - m) for a, b in zip(lr, lr[1:])) / var if var > 0 else float("nan")


def spread(ratios):
    """The sd of the rounds' log ratios: what decides how many rounds a verdict needs."""
    lr = [math.log(x) for x in ratios]
    if len(lr) < 2:
        return float("nan")
    m = sum(lr) / len(lr)
    return math.sqrt(sum((x - m) ** 2 for x in lr) / (len(lr) - 1))
