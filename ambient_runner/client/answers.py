"""The terminal client's side of a paused run: each interrupt put to the person (or approved with
``--approve-all``), and the resume entries of the run that continues."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

Ask = Callable[[str], str]  # shows a prompt, returns the line typed


def interrupts_of(terminal: dict[str, Any] | None) -> list[dict[str, Any]]:
    outcome = (terminal or {}).get("outcome")
    if terminal and terminal.get("type") == "RUN_FINISHED" and isinstance(outcome, dict) \
            and outcome.get("type") == "interrupt":
        return [i for i in outcome.get("interrupts") or () if isinstance(i, dict) and i.get("id")]
    return []


def resume_entries(interrupts: list[dict[str, Any]], *, approve_all: bool, ask: Ask, out: Console
                   ) -> list[dict[str, Any]]:
    return [{"interruptId": i["id"], "status": "resolved", "payload": _answer(i, approve_all, ask, out)}
            for i in interrupts]


def _answer(interrupt: dict[str, Any], approve_all: bool, ask: Ask, out: Console) -> dict[str, Any]:
    out.print(f"\n[bold yellow]⏸ {interrupt.get('message') or interrupt.get('reason')}[/]", highlight=False)
    if interrupt.get("reason") == "question":
        return {"answers": _answers(interrupt, approve_all, ask, out)}
    if approve_all:
        out.print("[dim]approved (--approve-all)[/]")
        return {"approved": True}
    reply = ask("approve? [y/N] ").strip()
    if reply.lower() in ("y", "yes"):
        return {"approved": True}
    why = ask("why not (told to the agent; empty to skip)? ").strip() if reply else ""
    return {"approved": False, **({"message": why} if why else {})}


def _answers(interrupt: dict[str, Any], approve_all: bool, ask: Ask, out: Console) -> dict[str, str]:
    schema = (interrupt.get("responseSchema") or {}).get("properties", {}).get("answers", {})
    answers: dict[str, str] = {}
    for question, spec in (schema.get("properties") or {}).items():
        options = list((spec.get("items") or spec).get("examples") or ())
        if approve_all:
            answers[question] = options[0] if options else "yes"
            out.print(f"[dim]{question} -> {answers[question]} (--approve-all)[/]", highlight=False)
            continue
        menu = "".join(f"\n  {n}. {o}" for n, o in enumerate(options, 1))
        reply = ask(f"{question}{menu}\n> ").strip()
        answers[question] = options[int(reply) - 1] if reply.isdigit() and 0 < int(reply) <= len(options) else reply
    return answers
