"""docs/benchmarks.md and one PNG per comparison from the measured results (the plots need matplotlib, which
``make bench`` installs from bench/requirements.txt; without it the page is written without them)."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from common import REPO

DOCS = REPO / "docs"


def _bars(ax: Any, labels: list[str], stats: list[dict[str, Any]], scale: float = 1.0, **kw: Any) -> None:
    p50 = [s["p50"] * scale for s in stats]
    low = [(s["p50"] - s["p25"]) * scale for s in stats]
    high = [(s["p75"] - s["p50"]) * scale for s in stats]
    ax.bar(labels, p50, yerr=[low, high], capsize=4, **kw)


def plot_all(r: dict[str, Any], plots: Path) -> dict[str, str]:
    try:
        import matplotlib  # noqa: PLC0415
    except ImportError:
        return {}
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    files: dict[str, str] = {}

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(plots / f"{name}.png", dpi=110)
        plt.close(fig)
        files[name] = f"benchmarks/{name}.png"

    fig, ax = plt.subplots(figsize=(7, 4))
    samples = sorted(r["relay"]["relay_samples"])
    ax.plot(samples, [i / len(samples) for i in range(len(samples))])
    ax.set_xscale("log")
    ax.axvline(0.5, color="green", ls="--", label="p50 target 0.5 ms")
    ax.axvline(2.0, color="red", ls="--", label="p99 target 2 ms")
    ax.set_xlabel("CLI write -> SSE client receive (ms, log)")
    ax.set_ylabel("fraction of events")
    ax.set_title("Relay overhead at 1,000 events/s")
    ax.legend()
    save(fig, "relay_latency")

    fig, ax = plt.subplots(figsize=(5, 4))
    _bars(ax, ["first->last event", "POST->stream end"], [r["relay"]["throughput"], r["relay"]["throughput_wall"]])
    ax.axhline(20_000, color="red", ls="--", label="target 20,000/s")
    ax.set_ylabel("events/s (median, IQR)")
    ax.set_title("Whole-path throughput, one SSE client")
    ax.legend()
    save(fig, "throughput")

    fig, ax = plt.subplots(figsize=(6, 4))
    names = list(r["adapters"])
    _bars(ax, names, [r["adapters"][n]["lines_per_s"] for n in names])
    ax.axhline(100_000, color="red", ls="--", label="target 100,000/s")
    ax.set_ylabel("lines/s -> SSE frames (median, IQR)")
    ax.set_title("Adapter throughput on recorded streams")
    ax.legend()
    save(fig, "adapters")

    if "adapter_ratios" in r:
        _plot_ratios(plt, r["adapter_ratios"], save)

    fig, ax = plt.subplots(figsize=(6, 4))
    kinds = list(r["startup"])
    xs = range(len(kinds))
    for offset, key, label in ((-0.2, "health_s", "/health 200"), (0.2, "ready_s", "/ready 200")):
        stats = [r["startup"][k][key] for k in kinds]
        ax.bar([x + offset for x in xs], [s["p50"] for s in stats], width=0.4, label=label,
               yerr=[[s["p50"] - s["p25"] for s in stats], [s["p75"] - s["p50"] for s in stats]], capsize=4)
    ax.set_xticks(list(xs), kinds)
    ax.axhline(1.0, color="red", ls="--", label="target 1 s")
    ax.set_ylabel("seconds from process start")
    ax.set_title("Start-up (python main.py, scripted model)")
    ax.legend()
    save(fig, "startup")

    fig, ax = plt.subplots(figsize=(5, 4))
    mem = r["relay"]["memory_kib"]
    _bars(ax, ["idle", "after 100k events", "peak"], [mem["idle_rss"], mem["after_rss"], mem["after_peak"]],
          scale=1 / 1024)
    ax.set_ylabel("runner RSS (MiB)")
    ax.set_title("Runner memory (fake CLI)")
    save(fig, "memory")

    fig, axes = plt.subplots(1, len(r["turns"]), figsize=(4 * len(r["turns"]), 4), sharey=False)
    for ax, (kind, sides) in zip(axes if len(r["turns"]) > 1 else [axes], r["turns"].items(), strict=True):
        keys = ["first_text_s", "first_done_s", "later_text_s", "later_done_s"]
        xs = range(len(keys))
        other = "bare" if "bare" in sides else "persistent"  # an ACP agent: the bare agent driven over ACP
        for offset, side in ((-0.2, "runner"), (0.2, other)):
            ax.bar([x + offset for x in xs], [sides[side][k]["p50"] for k in keys], width=0.4, label=side)
        ax.set_xticks(list(xs), ["1st text", "1st done", "later text", "later done"], rotation=20)
        ax.set_title(kind)
        ax.set_ylabel("seconds (median)")
        ax.legend()
    fig.suptitle("Turn latency: runner vs bare CLI (scripted model)")
    save(fig, "turns")
    if "long_thread" in r:
        _plot_long_thread(plt, r["long_thread"], save)
    return files


def _plot_ratios(plt: Any, ratios: dict[str, Any], save: Any) -> None:
    """Ours / the reference's, per adapter: wall clock (interleaved) and callgrind instructions."""
    kinds = [k for k in ("gemini", "claude") if isinstance(ratios.get(k, {}).get("wall_ratio"), float)]
    if not kinds:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = range(len(kinds))
    for offset, key, label in ((-0.2, "wall_ratio", "wall clock"), (0.2, "instruction_ratio", "instructions")):
        values = [ratios[k].get(key) if isinstance(ratios[k].get(key), float) else 0 for k in kinds]
        ax.bar([x + offset for x in xs], values, width=0.4, label=label)
    ax.set_xticks(list(xs), [f"{k} ({ratios[k]['stream_lines']:,} lines)" for k in kinds])
    ax.axhline(2.0, color="red", ls="--", label="target 2x")
    ax.set_ylabel("ours / reference (higher is faster)")
    ax.set_title("Adapters + encoding against the reference runner's")
    ax.legend()
    save(fig, "adapter_ratios")


def _ratio_rows(ratios: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    rows: list[tuple[str, str, str, bool | None]] = []
    for kind, label in (("gemini", "Gemini stream-json"), ("claude", "Claude")):
        entry = ratios.get(kind)
        if not entry:
            continue
        wall, counted = entry["wall_ratio"], entry.get("instruction_ratio")
        if not isinstance(wall, float):
            rows.append((f"Adapter vs reference: {label}", str(wall), ">= 2x", None))
            continue
        rates, per_line = entry["lines_per_s"], entry.get("instructions_per_line", {})
        value = (f"wall x{wall:.2f} (ours {rates['ours']['p50']:,.0f} / reference {rates['reference']['p50']:,.0f} "
                 f"lines/s, {entry['stream_lines']:,}-line stream)")
        if isinstance(counted, float):
            value += (f"; instructions x{counted:.2f} ({per_line['ours']:,.0f} / {per_line['reference']:,.0f} "
                      "per line)")
        rows.append((f"Adapter vs reference: {label}", value, ">= 2x",
                     wall >= 2 and (not isinstance(counted, float) or counted >= 2)))
    if "acp" in ratios:
        acp = ratios["acp"]
        value = f"{acp['lines_per_s']['ours']['p50']:,.0f} lines/s"
        if "instructions_per_line" in acp:
            value += f" ({acp['instructions_per_line']['ours']:,.0f} instructions per line)"
        rows.append(("Adapter Gemini ACP (no reference adapter)", value, "", None))
    return rows


def _plot_long_thread(plt: Any, long: dict[str, Any], save: Any) -> None:
    """Per turn of each runner's long thread: runner minus bare CLI (a rolling median), RSS, snapshot/spool/stored."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for kind, res in long.items():
        rows = res["rows"]
        turns = [row["turn"] for row in rows]
        later = rows[1:]  # the first turn (a new thread) is apart
        over = [(row["done_s"] - row["bare_done_s"]) * 1000 for row in later]
        rolled = [sorted(over[max(0, i - 10):i + 1])[len(over[max(0, i - 10):i + 1]) // 2] for i in range(len(over))]
        axes[0][0].plot(turns[1:], rolled, label=kind)
        axes[0][1].plot(turns, [row["rss_kib"] / 1024 for row in rows], label=kind)
        axes[1][0].plot(turns, [row["snapshot_bytes"] / 1024 for row in rows], label=kind)
        axes[1][1].plot(turns, [row["spool_bytes"] / 2**20 for row in rows], label=f"{kind} spool")
        axes[1][1].plot(turns, [row["stored_bytes"] / 2**20 for row in rows], ls="--", label=f"{kind} platform log")
    for ax, title, unit in ((axes[0][0], "runner minus bare CLI from turn 2 (rolling median of 11)", "ms"),
                            (axes[0][1], "runner RSS", "MiB"), (axes[1][0], "MESSAGES_SNAPSHOT size", "KiB"),
                            (axes[1][1], "event spool / platform's compacted log", "MiB")):
        ax.set_title(title)
        ax.set_xlabel("turn")
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    fig.suptitle("One long thread (a tool call every tenth turn, scripted model)")
    save(fig, "long_thread")


def _within(interval: list[float] | tuple[float, float] | None, unit: str = "") -> str:
    """`` [95 % interval lo to hi]`` (bench/common.interval95), or nothing when the figure has none."""
    if not interval:
        return ""
    low, high = interval
    spec = "+.1f" if unit else ".2f"  # a signed difference in ms, or a ratio
    upper = "unbounded" if high == float("inf") else format(high, spec)
    return f" [95 % interval {format(low, spec)} to {upper}{' ' + unit if unit else ''}]"


def _overhead_rows(r: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """The runner against the bare persistent CLI (bench/turns.py) and the long thread (bench/long_thread.py)."""
    rows: list[tuple[str, str, str, bool | None]] = []
    for kind, sides in r.get("turns", {}).items():
        over = sides.get("overhead_ms")
        if not over:
            continue
        for key, label in (("first_done", "first turn"), ("later_done", "later turn")):
            run, bare = sides["runner"][f"{key}_s"], sides["persistent"][f"{key}_s"]
            met = over[key]["p50"] <= 5 if key == "later_done" else None
            rows.append((f"Turn {kind}: {label}, runner minus bare persistent CLI (turns alternating)",
                         f"p50 {over[key]['p50']:+.1f} ms{_within(over[key].get('p50_interval95'), 'ms')}, p95 "
                         f"{over[key]['p95']:+.1f} ms, p50 of the paired differences {over[key]['paired_p50']:+.1f} "
                         f"ms{_within(over[key].get('paired_p50_interval95'), 'ms')} (runner "
                         f"{run['p50'] * 1000:.1f} / {run['p95'] * 1000:.1f}, bare {bare['p50'] * 1000:.1f} / "
                         f"{bare['p95'] * 1000:.1f} ms, n={run['n']})", "<= 5 ms p50" if met is not None else "", met))
        warm = sides.get("overhead_warm_ms")
        if warm:  # each side's turns back to back (warm caches), beside the alternating figure above
            run, bare = sides["runner_warm"]["later_done_s"], sides["persistent_warm"]["later_done_s"]
            rows.append((f"Turn {kind}: later turn back to back, runner minus bare persistent CLI",
                         f"p50 {warm['later_done']['p50']:+.1f} ms, p95 {warm['later_done']['p95']:+.1f} ms (runner "
                         f"{run['p50'] * 1000:.1f}, bare {bare['p50'] * 1000:.1f} ms, n={run['n']})", "", None))
    for kind, res in r.get("long_thread", {}).items():
        n, over = res["turns"], res["overhead_ms"]
        ratio = over["ratio"]
        shown = "n/a" if ratio is None else f"{ratio:.2f}"
        k = res["interleaved_turns"]
        window = f"turns {n - k + 1}-{n} / a new thread's turns 2-{k}, interleaved"
        start = (f"; the thread's own first turns, minutes earlier: {over['start']:.1f} ms, runner "
                 f"{res['runner_done_ms']['start']:.0f}, bare {res['bare_done_ms']['start']:.0f} ms")
        pooled = over.get("pooled")
        if pooled and pooled["ratio"] is not None:
            start += (f"; one p50 of both orders together: {pooled['ratio']:.2f} ({pooled['late']:.1f} / "
                      f"{pooled['early']:.1f} ms)")
        rows.append((f"Long thread {kind}: runner's own cost per turn (runner minus bare, NOTOOL, the mean of the "
                     f"p50 of each order), {window}",
                     f"{shown}{_within(over.get('ratio_interval95'))} ({over['late']:.1f} / {over['early']:.1f} ms; "
                     f"runner "
                     f"{res['runner_done_ms']['late']:.0f} / {res['runner_done_ms']['early']:.0f} ms, bare "
                     f"{res['bare_done_ms']['late']:.0f} / {res['bare_done_ms']['early']:.0f} ms{start})", "<= 1.25",
                     None if ratio is None else ratio <= 1.25))
        cpu = res.get("cpu_ms_per_turn")
        if cpu:
            cpu_ratio = "n/a" if cpu["ratio"] is None else f"{cpu['ratio']:.2f}"
            rows.append((f"Long thread {kind}: runner process CPU per turn, {window}",
                         f"{cpu_ratio}{_within(cpu.get('ratio_interval95'))} ({cpu['late']:.1f} / "
                         f"{cpu['early']:.1f} ms; the thread's first turns "
                         f"{cpu['start']:.1f} ms)", "<= 1.25",
                         None if cpu["ratio"] is None else cpu["ratio"] <= 1.25))
        rss = res["rss_kib"]
        rows.append((f"Long thread {kind}: runner RSS growth after turn 50",
                     f"{rss['growth'] * 100:+.1f}% ({rss['after_50'] / 1024:.1f} -> max {rss['max'] / 1024:.1f} MiB)",
                     "<= 10%", rss["growth"] <= 0.10))
        snap = res["snapshot"]
        rows.append((f"Long thread {kind}: MESSAGES_SNAPSHOT at turn {n}",
                     f"{snap['last_bytes'] / 1024:.0f} KiB, built in {snap['build_ms_late']:.2f} ms "
                     f"(first turns {snap['build_ms_early']:.2f} ms)", "", None))
        rows.append((f"Long thread {kind}: event spool / platform's compacted log after {n} turns",
                     f"{res['spool_bytes'] / 2**20:.1f} MiB / {res['stored_bytes'] / 2**20:.1f} MiB", "", None))
    return rows


# Issue 32's budgets: start -> /ready (in the runner's image) and the runner process's RSS.
READY_S = {"gemini-cli": 2.7, "codex-sdk": 1.5, "claude": 1.5}
RSS_BUDGET_MIB = {"ready": 85, "after_1": 110}


def _memory_rows(memory: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """bench/memory.py: the runner process and the CLI it keeps (the pod), at /ready, after 1 and N turns."""
    rows: list[tuple[str, str, str, bool | None]] = []
    for kind, moments in memory.items():
        for moment, parts in moments.items():
            if moment == "turns":
                continue
            label = {"ready": "at /ready", "after_1": "idle after 1 run"}.get(
                moment, f"idle with {moment.removeprefix('threads_')} threads (a run each)"
                if moment.startswith("threads_") else f"idle after {moments['turns']} turns")
            mib = {part: parts[part]["p50"] / 1024 for part in ("runner", "cli", "pod")}
            spread = f"{parts['runner']['min'] / 1024:.1f}-{parts['runner']['max'] / 1024:.1f}"
            budget = RSS_BUDGET_MIB.get(moment)
            rows.append((f"Memory {kind}: {label}", f"runner {mib['runner']:.1f} MiB ({spread}) + CLI "
                         f"{mib['cli']:.0f} MiB = pod {mib['pod']:.0f} MiB",
                         f"runner <= {budget} MiB" if budget else "", mib["runner"] <= budget if budget else None))
    return rows


def ms(s: dict[str, Any], scale: float = 1000.0, digits: int = 1) -> str:
    return f"{s['p50'] * scale:,.{digits}f} ({s['p25'] * scale:,.{digits}f}-{s['p75'] * scale:,.{digits}f})"


def table(r: dict[str, Any]) -> str:
    rel, mem = r["relay"], r["relay"]["memory_kib"]
    rows = [("Relay overhead p50, 1,000 ev/s", f"{rel['relay_ms']['p50']:.3f} ms", "< 0.5 ms",
             rel["relay_ms"]["p50"] < 0.5),
            ("Relay overhead p99, 1,000 ev/s", f"{rel['relay_ms']['p99']:.3f} ms", "< 2 ms",
             rel["relay_ms"]["p99"] < 2.0),
            ("Whole-path throughput", f"{rel['throughput']['p50']:,.0f} ev/s (IQR {rel['throughput']['p25']:,.0f}-"
             f"{rel['throughput']['p75']:,.0f})", ">= 20,000 ev/s", rel["throughput"]["p50"] >= 20_000)]
    for name, a in r["adapters"].items():
        s = a["lines_per_s"]
        rows.append((f"Adapter {name}", f"{s['p50']:,.0f} lines/s (IQR {s['p25']:,.0f}-{s['p75']:,.0f})",
                     ">= 100,000 lines/s", s["p50"] >= 100_000))
    rows += _ratio_rows(r.get("adapter_ratios", {}))
    for kind, s in r["startup"].items():
        rows.append((f"Start-up {kind}: /health 200", f"{ms(s['health_s'])} ms", "< 1,000 ms",
                     s["health_s"]["p50"] < 1.0))
        limit = READY_S[kind]
        rows.append((f"Start-up {kind}: /ready 200", f"{ms(s['ready_s'])} ms", f"< {limit * 1000:,.0f} ms (in the "
                     "image: deploy/image/smoke.sh)", s["ready_s"]["p50"] < limit))
    rows += _memory_rows(r.get("memory", {}))
    if "model_proxy" in r:
        proxy = r["model_proxy"]
        added = proxy["ttfb_ms"]["proxy"]["p50"] - proxy["ttfb_ms"]["direct"]["p50"]
        added95 = proxy["ttfb_ms"]["proxy"].get("p95", 0) - proxy["ttfb_ms"]["direct"].get("p95", 0)
        rows.append(("Model proxy: time to first byte", f"proxy {ms(proxy['ttfb_ms']['proxy'], 1, 2)} ms / direct "
                     f"{ms(proxy['ttfb_ms']['direct'], 1, 2)} ms", f"added {added:+.2f} ms p50 (< 1), "
                     f"{added95:+.2f} ms p95", added < 1.0))
        streamed = proxy["stream_mb_s"]
        rows.append((f"Model proxy: stream of {proxy['stream_chunks']:,} chunks",
                     f"proxy {streamed['proxy']['p50']:.1f} MB/s / direct {streamed['direct']['p50']:.1f} MB/s",
                     "no loss", streamed["proxy"]["p50"] >= 0.9 * streamed["direct"]["p50"]))
    if "tracing" in r:
        traced = r["tracing"]
        for key, label, scale, unit in (("throughput", "whole-path throughput", 1, "ev/s"),
                                        ("first_text_s", "Gemini turn, first text", 1000, "ms")):
            off, on = traced[key]["off"]["p50"], traced[key]["on"]["p50"]
            apart = abs(on - off) / off * 100
            rows.append((f"Tracing on / off: {label}", f"on {on * scale:,.0f} {unit} / off {off * scale:,.0f} {unit}",
                         f"{apart:.1f}% apart (< 5%)", apart < 5))
    rows.append(("Runner RSS idle", f"{mem['idle_rss']['p50'] / 1024:.1f} MiB", "", None))
    rows.append(("Runner RSS after 100,000 events", f"{mem['after_rss']['p50'] / 1024:.1f} MiB "
                 f"(peak {mem['after_peak']['p50'] / 1024:.1f})", "", None))
    for kind, sides in r["turns"].items():
        held = sides.get("memory_kib")
        if held:
            rows.append((f"Turn {kind}: RSS after the turns", f"runner {held['runner'] / 1024:.0f} MiB + CLI kept "
                         f"{held['cli'] / 1024:.0f} MiB", "", None))
        if kind == "gemini-cli":  # ACP: a later turn on the live CLI vs a new `gemini -p --resume` process
            run, bare = sides["runner"]["later_done_s"]["p50"], sides["bare"]["later_done_s"]["p50"]
            rows.append(("Turn gemini-cli: later turn, runner (ACP) / bare -p --resume", f"{run / bare * 100:.1f}%",
                         "< 10%", run / bare < 0.10))
        for key, label in (("first_text_s", "first turn, first text"), ("first_done_s", "first turn, done"),
                           ("later_text_s", "later turn, first text"), ("later_done_s", "later turn, done")):
            if "bare" not in sides:  # an ACP agent: no headless mode, only the persistent side (the rows below)
                break
            run, bare = sides["runner"][key], sides["bare"][key]
            over = (run["p50"] - bare["p50"]) * 1000
            rows.append((f"Turn {kind}: {label}", f"runner {ms(run)} ms / bare {ms(bare)} ms",
                         "overhead < 30 ms", over < 30))
            rows[-1] = (*rows[-1][:2], f"overhead {over:+,.0f} ms (< 30)", over < 30)
    rows += _overhead_rows(r)
    lines = ["| measure | median (IQR) | target | met |", "|---|---|---|---|"]
    for name, value, target, ok in rows:
        lines.append(f"| {name} | {value} | {target} | {'' if ok is None else ('yes' if ok else '**no**')} |")
    return "\n".join(lines)


def write(results: dict[str, Any], notes: str, docs: Path = DOCS) -> Path:
    """``<docs>/benchmarks.md``, its plots and ``results.json`` in ``<docs>/benchmarks/``."""
    plots = docs / "benchmarks"
    plots.mkdir(parents=True, exist_ok=True)
    files = plot_all(results, plots)
    body = [
        "# Benchmarks", "",
        "Measured by `make bench` (`bench/run.py`) on this machine "
        f"({platform.machine()}, {results['meta']['cpus']} CPUs, Python {platform.python_version()}, "
        f"{results['meta']['date']}), inside a loopback-only network namespace. Every figure is the median with its "
        "spread (IQR, or p1/p99 where said) over repeated runs. Load average at start: "
        f"{results['meta']['load']} (other work on the machine shows mostly in the tails).", "",
        table(results), "",
        *([f"![{name}]({path})" for name, path in files.items()] or ["(No plots: matplotlib is not installed.)"]), "",
        notes, "",
        "Raw figures: [benchmarks/results.json](benchmarks/results.json).",
    ]
    short = {k: v for k, v in results.items()} | {
        "relay": {k: v for k, v in results["relay"].items() if k != "relay_samples"}}
    if "long_thread" in results:  # its per-turn rows apart (they are long)
        short["long_thread"] = {kind: {k: v for k, v in res.items() if k not in ("rows", "fresh_rows")}
                                for kind, res in results["long_thread"].items()}
        (plots / "long_thread.json").write_text(json.dumps(results["long_thread"]))
    (plots / "results.json").write_text(json.dumps(short, indent=1))
    out = docs / "benchmarks.md"
    out.write_text("\n".join(body) + "\n")
    return out
