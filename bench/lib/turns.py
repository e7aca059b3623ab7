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
and its SIGSTOP, by the server's own counter (MariaDB's `Questions`), over the time between
the two signals. Both tools are counted by one clock and one definition, and neither tool's
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
  read 1.013x (0.989-1.038, 120 rounds), equivalent within 3.4%.
- Where both tools give each connection a thread (sysbench; bakeoff's Lua path, or native
  with --client-threads equal to the connections), turns and runs agree: native bakeoff with
  64 threads against sysbench at 64 connections, 1.126x (1.077-1.178) by turns, 1.165x
  (1.101-1.233) by 20 pairs of runs.
- Not explained: native bakeoff's default at 64 connections (two threads multiplexing them)
  read 0.91x sysbench by turns (0.94x with --warm 0.1 s, 0.91x with 0.4 s) where runs read
  1.06x, and 8 s runs 0.99x (5 pairs, too few to say). So the benches take turns only where
  both tools have a thread per connection, until that is understood.
"""
import math, os, random, signal, subprocess, sys, tempfile, time

import decide

TICK = os.sysconf("SC_CLK_TCK")


class Questions:
    """MariaDB's statement counter, read over one connection of the `mariadb` client kept
    open (one process, no per-read start-up: a read costs the server one statement)."""

    def __init__(self, client, sock, user, password):
        self.p = subprocess.Popen([client, "--no-defaults", f"--socket={sock}", f"--user={user}",
                                   f"--password={password}", "--batch", "--skip-column-names", "--unbuffered"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def read(self):
        self.p.stdin.write("SHOW GLOBAL STATUS LIKE 'Questions';\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"the counter's client ended: {self.p.stderr.read()[-1000:]}")
        return int(line.split()[1])

    def close(self):
        self.p.stdin.close()
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
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.err, cwd=cwd)

    def alive(self):
        return self.p.poll() is None

    def freeze(self):
        os.kill(self.p.pid, signal.SIGSTOP)

    def thaw(self):
        os.kill(self.p.pid, signal.SIGCONT)

    def failed(self):
        self.err.seek(0)
        return f"{self.name} ended ({self.p.returncode}) during the turns:\n{self.err.read()[-2000:]}"

    def end(self):
        if self.alive():
            self.thaw()
            self.p.terminate()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Turns:
    """Rounds of one slice per tool, looked at every `look` rounds up to `max_rounds`, judged as
    decide.Trials judges its pairs (the looks share the 5%)."""

    def __init__(self, seed, margin=0.05, look=20, max_rounds=120, slice_s=0.25, settle_s=0.01, lead_s=2.0,
                 warm_s=0.0):
        self.warm_s = warm_s
        self.rng = random.Random(seed)
        self.margin, self.look, self.max_rounds = margin, look, max_rounds
        self.looks = max(1, max_rounds // look)
        self.slice_s, self.settle_s, self.lead_s = slice_s, settle_s, lead_s

    def start(self, tools, counter, conns):
        """Start each tool (`tools`: name -> (argv, cwd)) and let it run alone until its statements
        flow and `lead` (more at many connections: connecting 1024 takes a while) has passed; then
        freeze it. A tool that ends first is an error (its stderr said)."""
        started = {}
        try:
            for name, (argv, cwd) in tools.items():
                t = started[name] = Tool(name, argv, cwd)
                flowing, last = None, 0
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:
                    a = counter.read()
                    time.sleep(0.3)
                    if not t.alive():
                        raise RuntimeError(t.failed())
                    # Flowing: every connection's worth of statements, at a rate that holds
                    # (connecting, each connection's prepares count too, and they tail off).
                    n = counter.read() - a
                    if n > max(conns, 100) and abs(n - last) < 0.3 * n:
                        flowing = flowing or time.monotonic()
                        if time.monotonic() - flowing >= self.lead_s + conns / 500:
                            break
                    last = n
                else:
                    raise RuntimeError(f"{name}'s statements did not flow within 300 s")
                t.freeze()
                quiet(counter, self.settle_s)
        except BaseException:
            for t in started.values():
                t.end()
            raise
        return started

    def run(self, tools, counter, server_cpu, conns, label=""):
        """Returns per tool the rate of each measured slice (statements a second) and the CPU per
        statement (client, server; microseconds) over all its slices, and the rounds' ratios of
        the second tool over the first."""
        started = self.start(tools, counter, conns)
        names = list(tools)
        rates = {n: [] for n in names}
        sums = {n: [0, 0.0, 0.0] for n in names}  # statements, client s, server s
        ratios = []
        try:
            # Two rounds unmeasured: each tool's first slice after its lead meets caches the
            # other left.
            for r in range(2 + self.max_rounds):
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
                    if len(ratios) % self.look == 0 and decide.decided(ratios, self.margin, self.looks):
                        break
        finally:
            for t in started.values():
                t.end()
        cpu = {n: (s[1] / max(s[0], 1) * 1e6, s[2] / max(s[0], 1) * 1e6) for n, s in sums.items()}
        return rates, cpu, ratios

    def _slice(self, tool, counter, server_cpu):
        """Let `tool` run for a slice and freeze it again; (statements, client CPU s, server CPU
        s, seconds). Every tool is frozen and the server quiet at both reads of the counter, so
        the slice's edges are the signals' (a read while a tool runs came back 10 ms late at 64
        connections here, up to 55 ms: a fifth of a slice), and the statements the tool had
        sent when it froze, which the server still takes in and answers, are the tool's."""
        if self.warm_s > 0:
            tool.thaw()
            time.sleep(self.warm_s)
            ta = time.monotonic()
            q0 = counter.read()
            t0 = (ta + time.monotonic()) / 2
            c0, s0 = cpu_seconds(tool.p.pid), server_cpu()
        else:
            q0, c0, s0 = counter.read(), cpu_seconds(tool.p.pid), server_cpu()
            t0 = time.monotonic()
            tool.thaw()
        time.sleep(self.slice_s)
        tool.freeze()
        t1 = time.monotonic()
        q1 = quiet(counter, self.settle_s)
        c1, s1 = cpu_seconds(tool.p.pid), server_cpu()
        if not tool.alive():
            raise RuntimeError(tool.failed())
        # The second read is itself one statement.
        return q1 - q0 - 1, c1 - c0, s1 - s0, t1 - t0

    def cells(self, ratios):
        v = decide.paired(ratios, self.margin, self.looks)
        return f"{v['ratio']:.3f}x | {v['lo']:.3f}-{v['hi']:.3f} ({v['level'] * 100:.2f}%) | {v['n']} | {v['verdict']}"

    def rule(self):
        return (f"rounds of one {self.slice_s} s slice per tool (the server quiet for {self.settle_s} s "
                f"around each), "
                f"looked at every {self.look} up to {self.max_rounds}, each look at {5 / self.looks:.2f}% "
                f"(a difference on the {100 - 5 / self.looks:.2f}% interval, equivalence within "
                f"+-{self.margin * 100:.0f}% by two one-sided tests on the {100 - 10 / self.looks:.2f}% one)")


def quiet(counter, pause, most=5.0):
    """The counter once the server has taken in every statement sent to it: two reads `pause`
    apart that differ by the later read alone. (At 1024 connections a frozen tool has up to
    1024 statements in the server's queue.)"""
    q = counter.read()
    end = time.monotonic() + most
    while time.monotonic() < end:
        time.sleep(pause)
        r = counter.read()
        if r - q <= 1:
            return r
        q = r
    raise RuntimeError(f"the server kept taking statements for {most} s after every tool froze")


def spread(ratios):
    """The sd of the rounds' log ratios: what decides how many rounds a verdict needs."""
    lr = [math.log(x) for x in ratios]
    if len(lr) < 2:
        return float("nan")
    m = sum(lr) / len(lr)
    return math.sqrt(sum((x - m) ** 2 for x in lr) / (len(lr) - 1))
