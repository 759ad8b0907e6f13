#!/usr/bin/env python3
"""Issue 22's targets, checked on bench/wan.sh tables.

    python3 bench/targets.py RUN.md [RUN.md ...]

Reads the Markdown tables bench/wan.sh prints (a later file's row for the same path and setting
replaces an earlier one, so a re-run after a fix can be given last) and prints one row per path:
the best static setting (stock, tuned, bbr64), then each tcptune setting's % of the goodput limit,
its distance from that best in points, and the larger of its two buffer maxima in × BDP, against
the targets:
  with a peer (tcptune+test, tcptune+iperf3, tcptune+ssh): within 2 points, both maxima <= 6 x BDP;
  with none (tcptune): within 3 points, both maxima <= 10 x BDP;
in both, a maximum may be the stock value where that is larger (tcp_rmem[2] 6291456, tcp_wmem[2]
4194304: tcptune raised nothing), is rounded up to 64 KiB, and may be 2.5 % over for a measured rate
that read that much above the lab's nominal one. Policed paths (police=) count there too: their
% is of the policed rate.

Shared paths (cross=N: the table's four more columns) are left out of that table and shown in a
second one, every setting a row: the tuned flow's share of its fair share, the competing flows'
share of theirs, the link used and their retransmits, over the tuned flow's measured window; for
the tcptune settings against issue 29's targets: the tuned flow 0.7-1.5 x its fair share, the
competing flows at least 0.7 x theirs, the link at least 90 % used.
"""
import sys

STATIC = ("stock", "tuned", "bbr64")
PEER = ("tcptune+test", "tcptune+iperf3", "tcptune+ssh")
STOCK_RMEM, STOCK_WMEM = 6291456, 4194304
# The packet trains and TCP tests read the lab's rate within a few percent of its nominal value,
# and the advice sizes for what was read: a maximum up to this much over the limit is the reading's.
RATE_TOLERANCE = 0.025
# Issue 29's targets on shared paths.
SHARE_RANGE = (0.7, 1.5)
OTHERS_MIN = 0.7
USED_MIN = 90.0


def rows(paths):
    table = {}
    order = []
    for path in paths:
        for line in open(path, encoding="utf-8"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) not in (12, 16) or not cells[6].endswith("%"):
                continue
            name, bdp, setting = cells[0], int(cells[1].split()[0]), cells[2]
            if name not in order:
                order.append(name)
            row = {
                "bdp": bdp,
                "pct": float(cells[6].rstrip(" %")),
                "rx": float(cells[8]),
                "tx": float(cells[9]),
                "shared": None,
            }
            if len(cells) == 16 and cells[12] not in ("", "–", "-"):
                row["shared"] = {
                    "share": float(cells[12].rstrip(" ×")),
                    "others": float(cells[13].rstrip(" ×")),
                    "used": float(cells[14].rstrip(" %")),
                    "oretr": int(cells[15]),
                }
            table[(name, setting)] = row
    return order, table


def shared_table(order, table):
    """The shared paths' rows, every setting; the tcptune settings against issue 29's targets."""
    names = [n for n in order if any(k[0] == n and r["shared"] for k, r in table.items())]
    if not names:
        return 0
    print("\nShared paths (over the tuned flow's measured window):\n")
    print("| path | setting | % of goodput limit | share of fair share | others' share of theirs | link used | others' retransmits |")
    print("|---|---|---|---|---|---|---|")
    misses = 0
    for name in names:
        for (n, setting), r in table.items():
            sh = r["shared"]
            if n != name or not sh:
                continue
            mark = ""
            if setting.startswith("tcptune"):
                ok = (
                    SHARE_RANGE[0] <= sh["share"] <= SHARE_RANGE[1]
                    and sh["others"] >= OTHERS_MIN
                    and sh["used"] >= USED_MIN
                )
                misses += not ok
                mark = "" if ok else " **miss**"
            print(
                f"| {name} | {setting} | {r['pct']:.1f} % | {sh['share']:.2f} ×{mark} | {sh['others']:.2f} × | "
                f"{sh['used']:.1f} % | {sh['oretr']} |"
            )
    print(f"\nmisses on shared paths: {misses}")
    return misses


def main():
    order, table = rows(sys.argv[1:])
    print("| path | best static | tcptune, no peer | with tcptune serve | with iperf3 | with --ssh |")
    print("|---|---|---|---|---|---|")
    misses = 0
    for name in order:
        if any(r["shared"] for k, r in table.items() if k[0] == name):
            continue
        statics = [(table[(name, s)]["pct"], s) for s in STATIC if (name, s) in table]
        if not statics:
            continue
        best, best_s = max(statics)
        cells = []
        for setting, points, most in [("tcptune", 3.0, 10.0)] + [(p, 2.0, 6.0) for p in PEER]:
            r = table.get((name, setting))
            if r is None:
                cells.append("")
                continue
            d = r["pct"] - best
            bdp = r["bdp"]
            # The stock values may stand where they are larger (tcptune raised nothing); a
            # maximum is rounded up to 64 KiB, and sized for the measured rate, which may read a
            # little above the nominal one (RATE_TOLERANCE).
            def within(x, stock):
                return (
                    x * bdp <= most * bdp * (1 + RATE_TOLERANCE) + 65536
                    or abs(x * bdp - stock) < bdp * 0.01
                )

            rx_ok, tx_ok = within(r["rx"], STOCK_RMEM), within(r["tx"], STOCK_WMEM)
            ok = d >= -points and rx_ok and tx_ok
            misses += not ok
            cells.append(
                f"{r['pct']:.1f} % ({d:+.1f}; {max(r['rx'], r['tx']):.2f} ×){'' if ok else ' **miss**'}"
            )
        print(f"| {name} | {best:.1f} % ({best_s}) | " + " | ".join(cells) + " |")
    print(f"\nmisses: {misses}")
    shared_table(order, table)


if __name__ == "__main__":
    main()
