"""The figures the documentation quotes, generated: nothing in README.md or docs/ is typed by hand.

A figure in a page is a marked span, ``<!-- fig:NAME -->1,559<!-- /fig -->``; a generated block
(the settings table) is ``<!-- gen:NAME -->`` ... ``<!-- /gen -->``. Two kinds of figure:

- **from the code**: each setting's default read from :class:`~arklore.settings.Settings`
  (``default.ARKLORE_EXEMPLARS_K``), counts of the packaged curated data (``data.names_eval``),
  constants (``const.lint_max_false_rate``);
- **measured** on the real data, read from the committed record ``docs/figures.json``, which
  ``make docs-measure`` writes: the LLM jobs' cost estimates (the dry runs of ``arklore
  distill``, ``rag build``, ``extract relations|events``, over ``$ARKLORE_HOME``) and the
  figures the real-data tests print (``suite.*``: they pass them to the ``metrics`` fixture,
  which writes them into the record when ``ARKLORE_FIGURES_OUT`` is set).

``python -m arklore.docfigs write`` (``make docs``) rewrites every marked span and block;
``check`` lists each span that differs and each figure-like number left unmarked (a cost, a
request count, a setting's value after its name), and exits 1 when there is any
(tests/test_docs_figures.py runs it). ``measure`` writes the cost part of the record.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from arklore import __version__
from arklore.settings import _LLM_VARS, _VARS, LLMSettings, Settings

__all__ = [
    "RECORD",
    "SETTING_DOCS",
    "Finding",
    "check",
    "code_figures",
    "figures",
    "main",
    "measure",
    "measured_figures",
    "pages",
    "render",
    "settings_table",
]

RECORD = Path("docs/figures.json")
"""The measured record, relative to the repository root."""

SPAN = re.compile(r"<!-- fig:([\w.\-]+) -->(.*?)<!-- /fig -->", re.S)
BLOCK = re.compile(r"(<!-- gen:([\w.\-]+) -->\n)(.*?)(<!-- /gen -->)", re.S)

# What each variable means, for the settings table (its default comes from the model).
SETTING_DOCS: dict[str, str] = {
    "ARKLORE_HOME": "where arklore keeps all its state",
    "ARKLORE_GAMEDATA": "Kengxxiao/ArknightsGameData checkout (zh_CN)",
    "ARKLORE_ASTR": "050644zf/ArknightsStoryJson checkout",
    "ARKLORE_ALIASES": "the user alias file (`[[alias]]`/`[[block]]`); unset: the packaged `data/aliases.toml`",
    "ARKLORE_EMBEDDER": "`e5-small` \\| `bge-small-zh` \\| `hash` (tests only)",
    "ARKLORE_E5_THREADS": "threads of the e5 embedder (0: the CPU count, at most 8; `arklore serve`: 1 per process)",
    "ARKLORE_WORKERS": "processes that parse story files during an ingest, and during a build embed the relation documents ahead and compute her scenes (1: nothing runs beside the build's own process)",
    "ARKLORE_RAG_TOKEN_BUDGET": "tokens of the relation block per chat turn",
    "ARKLORE_MAX_MESSAGE_CHARS": "longest chat message accepted (characters)",
    "ARKLORE_MAX_BODY_BYTES": "largest HTTP request body the service reads; a larger one is refused (413) before it is read",
    "ARKLORE_TURN_PROCESSES": "worker processes per `arklore serve` process assembling turns (0: its thread pool)",
    "CHROMA_HOST": "a Chroma server instead of the embedded index (unset: embedded)",
    "CHROMA_PORT": "its port",
    "ARKLORE_CHARS_DIR": "a user folder of `.char` profiles (read only; wins over `$ARKLORE_HOME/chars`)",
    "ARKLORE_MANIFEST": "TOML file `operators = [...]`: the operators an app exposes (unset: every operator)",
    "ARKLORE_MATRIX": "your relationship matrix (TOML), layered over the packaged `data/relationship_matrix.toml` (your view of a pair wins); verify-anchors reads it too",
    "ARKLORE_MATRIX_REPLACE": "1: your matrix replaces the packaged one instead of adding to it",
    "ARKLORE_CONFIRMED_ONLY": "1: graph builds use only the curated relations a person confirmed "
    "(a rejected one is left out either way)",
    "ARKLORE_NPC_MIN_LINES": "lines a named NPC speaks in the corpus to become a graph node (the design's upstream rule: 30; measured in [graph.md](graph.md#who-becomes-a-node))",
    "ARKLORE_NPC_MIN_SHARE": "share of one story's spoken lines that also makes an NPC a node; 0 is off (the upstream rule: 0.04)",
    "ARKLORE_UNTIL": "the story point every chat is set at unless a request names one (a spoiler-free deployment): a stage code, an event or chapter name, an id ([chat.md](chat.md))",
    "ARKLORE_PERSONA_TOKEN_BUDGET": "tokens of the persona block per chat turn",
    "ARKLORE_MEMORY_TOKEN_BUDGET": "tokens of the memories block per chat turn",
    "ARKLORE_MEMORY_K": "memories (or appearances) per chat turn",
    "ARKLORE_GROUP_TOKEN_BUDGET": "tokens of the group-chat block per chat turn",
    "ARKLORE_DOCTOR_TOKEN_BUDGET": "tokens of her view of the Doctor per chat turn",
    "ARKLORE_SPEECH_TOKEN_BUDGET": "tokens of her way of speaking per chat turn",
    "ARKLORE_NOW_TOKEN_BUDGET": "tokens of where she stands now per chat turn",
    "ARKLORE_EXEMPLAR_TOKEN_BUDGET": "tokens of her own story scenes per chat turn",
    "ARKLORE_EXEMPLARS_K": "scenes of her own lines per chat turn (at most)",
    "ARKLORE_NICKNAME": "what `{@nickname}` (the player's name in the script) becomes in anything a chat receives",
    "ARKLORE_TIER_C_RELATIONS": "1: relation context for operators without a profile (tier C) too",
    "ARKLORE_PROMPT_LAYOUT": "where the OpenAI-compatible endpoint puts a turn's knowledge: `cache` or `system` (docs/service.md)",
    "ARKLORE_ADMIN_TOKEN": "bearer token of the service's write endpoints (a secret; unset: writes disabled)",
    "ARKLORE_API_KEYS": "comma-separated bearer tokens of the chat apps (secrets; unset: only clients on this machine)",
    "LLM_BASE_URL": "any OpenAI-compatible endpoint",
    "LLM_MODEL": "model name sent to the endpoint",
    "LLM_API_KEY": "bearer key (read from the environment only, never written anywhere)",
    "LLM_JSON_MODE": "send `response_format=json_object` (0 for endpoints without JSON mode)",
    "LLM_TIMEOUT": "seconds per HTTP request",
    "LLM_MAX_RETRIES": "retries after the first attempt",
    "LLM_BREAKER_FAILURES": "stop a run after this many requests in a row could not reach the endpoint (0: never)",
    "LLM_BACKOFF_INITIAL": "first backoff wait, doubled each retry (s)",
    "LLM_BACKOFF_MAX": "longest wait, also caps `Retry-After` (s)",
    "LLM_PRICE_INPUT_HIT": "USD per million cached input tokens",
    "LLM_PRICE_INPUT_MISS": "USD per million uncached input tokens",
    "LLM_PRICE_OUTPUT": "USD per million output tokens",
}

# A default the model computes (a default_factory) is described, not printed.
_FACTORY_DEFAULTS: dict[str, str] = {"ARKLORE_WORKERS": "the CPU count, at most 8"}
_FOUND_DEFAULTS: dict[str, str] = {
    "ARKLORE_HOME": "<checkout>/var",
    "ARKLORE_GAMEDATA": "../shared/arknights/…",
    "ARKLORE_ASTR": "../shared/arknights/…",
}
"""Defaults :mod:`arklore.locations` finds when the variable is unset (the model's own
default is only the last resort): the checkout's home, the data next to the checkout."""


def _fields() -> dict[str, tuple[type[Any], str]]:
    """Variable -> (the model, its field name), in the order settings.py reads them."""
    out: dict[str, tuple[type[Any], str]] = {v: (Settings, f) for v, f in _VARS.items()}
    out.update({v: (LLMSettings, f) for v, f in _LLM_VARS.items()})
    return out


def _default(var: str) -> str:
    """A variable's default as the table shows it, read from the model."""
    if var in _FOUND_DEFAULTS:
        return _FOUND_DEFAULTS[var]
    model, name = _fields()[var]
    field = model.model_fields[name]
    if field.default_factory is not None:
        return _FACTORY_DEFAULTS.get(var, "(computed)")
    value = field.default
    if value is None or value == "" or value == ():
        return "(none)"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def settings_table() -> str:
    """The Markdown table of every variable, its meaning and its default (from the model)."""
    rows = ["| variable | meaning | default |", "|---|---|---|"]
    for var in _fields():
        default = _default(var)
        literal = not (
            default.startswith("(") or var in _FACTORY_DEFAULTS or var in _FOUND_DEFAULTS
        )
        rows.append(
            f"| `{var}` | {SETTING_DOCS.get(var, '?')} | {f'`{default}`' if literal else default} |"
        )
    rows.append(
        "| `LLM_<TASK>_BASE_URL`, `_MODEL`, `_API_KEY` | per-task endpoint / model / key, e.g. "
        "`LLM_RELATIONS_MODEL`, `LLM_CHAT_BASE_URL`; profile tasks `distill_a` ... `distill_d` "
        "| the global value |"
    )
    return "\n".join(rows) + "\n"


def _jsonl(name: str) -> list[dict[str, Any]]:
    text = (resources.files("arklore") / "data" / name).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _count(n: float) -> str:
    return f"{n:,}"


def code_figures() -> dict[str, str]:
    """Every figure the code itself says: setting defaults, packaged data, constants."""
    from arklore.cards.lint import MAX_FALSE_RATE
    from arklore.chat.blocks import BLOCK_ORDER
    from arklore.chat.session import CHAT_MAX_TOKENS, CHAT_TEMPERATURE
    from arklore.corpus.story import load_order

    figs = {f"default.{var}": _default(var) for var in _fields()}
    fidelity = _jsonl("fidelity_eval.jsonl")
    lorebook = _jsonl("lorebook_eval.jsonl")
    matrix = (resources.files("arklore") / "data" / "relationship_matrix.toml").read_text("utf-8")
    order = load_order()
    figs |= {
        "story.curated": _count(len(order.places)),
        "story.mains": _count(len(order.mains)),
        "version": __version__,
        "data.names_eval": _count(len(_jsonl("names_eval.jsonl"))),
        "data.fidelity_eval": _count(len(fidelity)),
        "data.fidelity_eval.operators": _count(len({r["operator"] for r in fidelity})),
        "data.lorebook_eval": _count(len(lorebook)),
        "data.lorebook_eval.chat_with": _count(sum(1 for r in lorebook if r.get("chat_with"))),
        "data.matrix.relations": _count(len(re.findall(r"^\[\[relation\]\]", matrix, flags=re.M))),
        "const.lint_max_false_rate": f"{MAX_FALSE_RATE:.0%}",
        "chat.blocks": ", ".join(m.NAME for m in BLOCK_ORDER),
        "const.chat_temperature": f"{CHAT_TEMPERATURE:g}",
        "const.chat_max_tokens": f"{CHAT_MAX_TOKENS}",
        "default.ARKLORE_MAX_BODY_BYTES.MiB": f"{Settings().max_body_bytes / 2**20:g}",
    }
    return figs


def _cost_figures(name: str, est: Mapping[str, Any]) -> dict[str, str]:
    return {
        f"cost.{name}.requests": _count(est["requests"]),
        f"cost.{name}.input_mtokens": f"{est['input_tokens'] / 1e6:.1f}",
        f"cost.{name}.usd": f"{est['cost_usd']:.2f}",
        f"cost.{name}.usd_cached": f"{est['cost_with_cache_usd']:.2f}",
    }


def _pct(x: float, digits: int = 0) -> str:
    return f"{x:.{digits}%}"


def measured_figures(record: Mapping[str, Any]) -> dict[str, str]:
    """The figures of the measured record (``docs/figures.json``), formatted as quoted."""
    figs: dict[str, str] = {}
    cost = record.get("cost", {})
    for name, est in cost.get("estimates", {}).items():
        figs |= _cost_figures(name, est)
    if "operators" in cost:
        figs["cost.operators"] = _count(cost["operators"])
    if "stages" in cost:
        figs["cost.stages"] = _count(cost["stages"])
    for key, value in record.get("suite", {}).items():
        if isinstance(value, float) and key.endswith("_rate"):
            figs[f"suite.{key}"] = _pct(value, 1)
        elif isinstance(value, float) and key.endswith("_share"):
            figs[f"suite.{key}"] = _pct(value, 1)  # 94.6% is not the 95% a target asks
        elif isinstance(value, int):
            figs[f"suite.{key}"] = _count(value)
        else:
            figs[f"suite.{key}"] = str(value)
    return figs


def figures(root: Path) -> dict[str, str]:
    """Every figure: the code's and the record's (an absent record gives none of its own)."""
    path = root / RECORD
    record = json.loads(path.read_text("utf-8")) if path.is_file() else {}
    return code_figures() | measured_figures(record)


GENERATED: dict[str, Callable[[], str]] = {"settings-table": settings_table}


_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_INLINE = re.compile(r"``[^\n]*?``|`[^`\n]+`")


def _in_code(text: str) -> Callable[[int], bool]:
    """Is a position inside a code block or inline code (an example of a mark, not a mark)?"""
    fenced = [m.span() for m in _FENCE.finditer(text)]
    bare = _FENCE.sub(_blank, text)
    spans = fenced + [m.span() for m in _INLINE.finditer(bare)]
    return lambda pos: any(a <= pos < b for a, b in spans)


def _spans(text: str) -> list[re.Match[str]]:
    code = _in_code(text)
    return [m for m in SPAN.finditer(text) if not code(m.start())]


def render(text: str, figs: Mapping[str, str]) -> str:
    """``text`` with every marked span and generated block rewritten (an unknown name is left
    as it is: :func:`check` reports it)."""

    code = _in_code(text)

    def span(m: re.Match[str]) -> str:
        if code(m.start()):
            return m.group(0)
        value = figs.get(m.group(1), m.group(2))
        return f"<!-- fig:{m.group(1)} -->{value}<!-- /fig -->"

    def block(m: re.Match[str]) -> str:
        make = GENERATED.get(m.group(2))
        return m.group(1) + (make() if make else m.group(3)) + m.group(4)

    return BLOCK.sub(block, SPAN.sub(span, text))


def pages(root: Path) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Finding:
    page: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.what}"


# A number that reads as a figure of the kind that went stale: a cost, a count of requests or
# tokens, a setting's value given after its name.
UNMARKED = [
    (re.compile(r"\$\d[\d,.]*"), "a cost"),
    (re.compile(r"\b\d[\d,.]*\s*(?:M\s+)?(?:requests|input tokens)\b"), "a request or token count"),
    (
        re.compile(r"`(?:ARKLORE|LLM)_[A-Z0-9_]+`\s*(?:\(|:|=|,)?\s*`?\d[\d.]*"),
        "a setting's value after its name",
    ),
]


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def _unmarked(text: str) -> Iterable[tuple[int, str]]:
    """Figure-like numbers outside the marked spans, generated blocks and code blocks."""
    bare = _FENCE.sub(_blank, BLOCK.sub(_blank, SPAN.sub(_blank, text)))
    for pattern, what in UNMARKED:
        for m in pattern.finditer(bare):
            yield bare.count("\n", 0, m.start()) + 1, f"{what} not marked: {m.group(0)!r}"


def check(root: Path, figs: Mapping[str, str] | None = None) -> list[Finding]:
    """Every marked span whose text is not its figure, every unknown figure or block name,
    every generated block out of date and every unmarked figure-like number."""
    figs = figures(root) if figs is None else figs
    found: list[Finding] = []
    for page in pages(root):
        text = page.read_text("utf-8")
        name = str(page.relative_to(root))
        for m in _spans(text):
            line = text.count("\n", 0, m.start()) + 1
            if m.group(1) not in figs:
                found.append(Finding(name, line, f"unknown figure {m.group(1)!r}"))
            elif m.group(2) != figs[m.group(1)]:
                found.append(
                    Finding(
                        name,
                        line,
                        f"figure {m.group(1)} says {m.group(2)!r}, the "
                        f"{'record' if '.' in m.group(1) and m.group(1).split('.')[0] in ('cost', 'suite') else 'code'}"
                        f" says {figs[m.group(1)]!r} (run `make docs`)",
                    )
                )
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            make = GENERATED.get(m.group(2))
            if make is None:
                found.append(Finding(name, line, f"unknown generated block {m.group(2)!r}"))
            elif m.group(3) != make():
                found.append(
                    Finding(name, line, f"block {m.group(2)} is out of date (run `make docs`)")
                )
        found += [Finding(name, line, what) for line, what in _unmarked(text)]
    return found


def measure(settings: Settings) -> dict[str, Any]:
    """The cost estimates of the LLM jobs over ``settings.home`` (the dry runs; nothing is
    sent): the record's ``cost`` part."""
    from arklore.profiles.distill import total_estimate
    from arklore.workspace import Workspace

    ws = Workspace(settings)
    try:
        distill = ws.profiles.distill_dry_run(("all",), None)
        stages = ws.extract.select_stages(None, event=None, all_=True)
        estimates = {
            "distill": vars(total_estimate(distill)),
            "rag": vars(ws.rag.dry_run()),
            "relations": vars(ws.extract.relations_dry_run(stages)),
            "events": vars(ws.events.extract_dry_run(stages)),
        }
        return {
            "operators": len(ws.names.select(None)),
            "stages": len(stages),
            "estimates": estimates,
        }
    finally:
        ws.close()


def _write_record(root: Path, part: str, data: Mapping[str, Any]) -> None:
    path = root / RECORD
    record = json.loads(path.read_text("utf-8")) if path.is_file() else {}
    record[part] = data
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(record, ensure_ascii=False, indent=2, sort_keys=True) + "\n", "utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    cmd = args[0] if args else "check"
    root = Path(args[1]) if len(args) > 1 else Path.cwd()
    if cmd == "write":
        figs = figures(root)
        for page in pages(root):
            text = page.read_text("utf-8")
            new = render(text, figs)
            if new != text:
                page.write_text(new, "utf-8")
                print(f"rewrote {page.relative_to(root)}")
        cmd = "check"
    if cmd == "measure":
        from arklore.core.errors import ArkloreError

        try:
            _write_record(root, "cost", measure(Settings.from_env()))
        except ArkloreError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"wrote the cost estimates into {RECORD}")
        return 0
    if cmd == "check":
        found = check(root)
        for f in found:
            print(f)
        return 1 if found else 0
    print("usage: python -m arklore.docfigs write|check|measure [ROOT]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
