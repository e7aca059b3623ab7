#!/usr/bin/env python3
"""Seeded simulation of the rule that judges a row by turns across fresh starts (turns.across)
against pooling its rounds, which is what a single start does.

A simulated row: 8 starts, each with an effect of its own ~ N(0, sd between starts) on the log
scale (what lasts a start: bakeoff against itself spread about 0.06 at 1024 connections, 0.03 at
64), and 40 rounds whose log ratios are AR(1) around it (sd 0.17, lag-1 0.2: the rows measured).
Each judged at one look at 5% and a +-5% margin. Prints, per case, how often each rule claims a
difference, claims equivalence, and covers the true ratio, over 1000 rows (seed 54).

Usage: bench/lib/simulate_starts.py   (about 15 s)"""
import math, os, random, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decide, turns  # noqa: E402
def row(rng, true, k, r, sd_start, sd_round, rho):
    starts = []
    for _ in range(k):
        e = rng.gauss(0, sd_start); x = rng.gauss(0, sd_round); rs = []
        for _ in range(r):
            x = rho * x + math.sqrt(1 - rho * rho) * rng.gauss(0, sd_round)
            rs.append(math.exp(math.log(true) + e + x))
        starts.append(rs)
    return starts
def judge(v, true):
    diff = v["verdict"].endswith(("ahead", "behind"))
    eq = v["verdict"].startswith("equivalent")
    cover = v["lo"] <= true <= v["hi"]
    return diff, eq, cover
rng = random.Random(54)
N = 1000
print("| sd between starts | K starts | true ratio | across: claims a difference | across: claims equivalence | across: covers | pooled: claims a difference | pooled: claims equivalence | pooled: covers |")
print("|---|---|---|---|---|---|---|---|---|")
K = 8
for sd_start in (0.0, 0.03, 0.06):
    for true in (1.0, 1.06):
        a = [0, 0, 0]; p = [0, 0, 0]
        for _ in range(N):
            st = row(rng, true, K, 40, sd_start, 0.17, 0.2)
            means = turns.start_means(st)
            for acc, v in ((a, decide.paired(means, 0.05, 1)), (p, decide.paired(turns.blocks([x for s in st for x in s]), 0.05, 1))):
                for i, b in enumerate(judge(v, true)):
                    acc[i] += b
        f = lambda c: f"{100 * c / N:.1f}%"
        print(f"| {sd_start} | {K} | {true} | {f(a[0])} | {f(a[1])} | {f(a[2])} | {f(p[0])} | {f(p[1])} | {f(p[2])} |")
