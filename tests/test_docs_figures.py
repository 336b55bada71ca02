"""The figures README.md and docs/ quote are the code's and the measured record's
(:mod:`arklore.docfigs`): a figure changed by hand, a default changed without ``make docs``, or
a cost typed without a mark fails here."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import arklore.settings as settings_module
from arklore import docfigs
from arklore.settings import _LLM_VARS, _VARS, Settings

ROOT = Path(__file__).resolve().parents[1]


def _copy_docs(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    return tmp_path


def test_every_figure_the_docs_quote_is_what_the_code_and_the_record_say() -> None:
    found = docfigs.check(ROOT)
    assert found == [], "\n".join(map(str, found))


def test_the_docs_quote_figures_of_both_kinds() -> None:
    text = "\n".join(p.read_text("utf-8") for p in docfigs.pages(ROOT))
    names = set(docfigs.SPAN.findall(text))
    quoted = {n for n, _ in names}
    assert "default.ARKLORE_EXEMPLARS_K" in quoted  # from the code
    assert {"cost.distill.requests", "cost.distill.usd"} <= quoted  # measured: the estimate
    assert "suite.lorebook_false_rate" in quoted  # measured: what the suite prints
    assert "<!-- gen:settings-table -->" in (ROOT / "docs" / "settings.md").read_text("utf-8")


def test_a_figure_changed_by_hand_is_found(tmp_path: Path) -> None:
    root = _copy_docs(tmp_path)
    chat = root / "docs" / "chat.md"
    span = re.compile(r"(<!-- fig:default\.ARKLORE_EXEMPLARS_K -->)\d+(<!-- /fig -->)")
    assert span.search(chat.read_text("utf-8"))
    chat.write_text(span.sub(r"\g<1>3\g<2>", chat.read_text("utf-8")), "utf-8")
    found = docfigs.check(root)
    assert [f.page for f in found] == ["docs/chat.md"]
    assert "default.ARKLORE_EXEMPLARS_K says '3'" in found[0].what


def test_a_measured_figure_changed_by_hand_is_found(tmp_path: Path) -> None:
    root = _copy_docs(tmp_path)
    readme = root / "README.md"
    text = readme.read_text("utf-8")
    span = re.compile(r"(<!-- fig:cost\.distill\.requests -->)[\d,]+(<!-- /fig -->)")
    readme.write_text(span.sub(r"\g<1>1,412\g<2>", text), "utf-8")
    found = docfigs.check(root)
    assert found and all(f.page == "README.md" for f in found)
    assert any("cost.distill.requests says '1,412', the record says" in f.what for f in found)


def test_a_changed_default_is_found_until_make_docs_rewrites_it(tmp_path: Path) -> None:
    root = _copy_docs(tmp_path)
    figs = docfigs.figures(root) | {"default.ARKLORE_EXEMPLARS_K": "7"}
    assert any("ARKLORE_EXEMPLARS_K" in f.what for f in docfigs.check(root, figs))
    for page in docfigs.pages(root):
        page.write_text(docfigs.render(page.read_text("utf-8"), figs), "utf-8")
    assert docfigs.check(root, figs) == []
    assert "<!-- fig:default.ARKLORE_EXEMPLARS_K -->7<!-- /fig -->" in (
        root / "docs" / "chat.md"
    ).read_text("utf-8")


def test_an_unmarked_cost_count_or_setting_value_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "README.md"
    page.write_text(
        "The estimate: 1,412 requests, ~$1.18.\n"
        "`ARKLORE_EXEMPLARS_K` (3) scenes.\n"
        "```sh\narklore distill --dry-run   # e.g. 99 requests, $0.50: code is not prose\n```\n",
        "utf-8",
    )
    found = docfigs.check(tmp_path, {})
    assert [(f.line, f.what.split(" not marked")[0]) for f in found] == [
        (1, "a cost"),
        (1, "a request or token count"),
        (2, "a setting's value after its name"),
    ]
    page.write_text(
        "The estimate: <!-- fig:n -->1,412<!-- /fig --> requests, ~$<!-- fig:c -->1.18<!-- /fig -->.\n"
        "`ARKLORE_EXEMPLARS_K` (<!-- fig:k -->3<!-- /fig -->) scenes.\n",
        "utf-8",
    )
    assert docfigs.check(tmp_path, {"n": "1,412", "c": "1.18", "k": "3"}) == []


def test_the_settings_table_gives_every_variable_a_meaning_and_the_models_default() -> None:
    table = docfigs.settings_table()
    rows = {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(r"^\| `([A-Z0-9_]+)` \| (.*) \| (.*) \|$", table, re.M)
    }
    assert set(rows) == set(_VARS) | set(_LLM_VARS)
    undescribed = [v for v in rows if v not in docfigs.SETTING_DOCS]
    assert undescribed == [], "describe them in arklore.docfigs.SETTING_DOCS"
    s = Settings()
    assert rows["ARKLORE_EXEMPLARS_K"][1] == f"`{s.exemplars_k}`"
    assert rows["ARKLORE_MEMORY_K"][1] == f"`{s.memory_k}`"
    assert rows["ARKLORE_PERSONA_TOKEN_BUDGET"][1] == f"`{s.persona_token_budget}`"
    assert rows["LLM_MODEL"][1] == f"`{s.llm.model}`"
    assert rows["LLM_PRICE_OUTPUT"][1] == f"`{s.llm.price_output}`"


def _docstring_defaults() -> dict[str, str]:
    """Variable -> the first literal of its default column in settings.py's docstring table."""
    doc = settings_module.__doc__ or ""
    lines = doc.splitlines()
    rule = next(line for line in lines if line.startswith("====="))
    cols = [m.start() for m in re.finditer(r"=+", rule)]
    out: dict[str, str] = {}
    for line in lines:
        m = re.match(r"``([A-Z0-9_]+)``\s", line)
        # a long variable pushes its row right by a few characters
        lit = next((x for x in re.finditer(r"``([^`]+)``", line) if x.start() >= cols[2] - 4), None)
        if m and lit:
            out[m.group(1)] = lit.group(1)
    return out


def _same(said: str, default: str) -> bool:
    """``1.10`` is 1.1; ``./var`` is ``var``."""
    try:
        return float(said) == float(default)
    except ValueError:
        return Path(said) == Path(default)


def test_the_settings_docstring_lists_every_variable_with_the_models_default() -> None:
    documented = _docstring_defaults()
    doc = settings_module.__doc__ or ""
    missing = [v for v in [*_VARS, *_LLM_VARS] if f"``{v}``" not in doc]
    assert missing == []
    wrong = {
        var: (said, docfigs._default(var))
        for var, said in documented.items()
        if var in docfigs._fields() and not _same(said, docfigs._default(var))
    }
    assert wrong == {}
    assert documented["ARKLORE_EXEMPLARS_K"] == "5" and len(documented) > 20


def test_the_docstring_check_sees_a_wrong_default(monkeypatch) -> None:
    doc = (settings_module.__doc__ or "").replace("(at most)     ``5``", "(at most)     ``3``")
    assert doc != settings_module.__doc__
    monkeypatch.setattr(settings_module, "__doc__", doc)
    assert _docstring_defaults()["ARKLORE_EXEMPLARS_K"] == "3"


def test_the_readme_is_short_and_opens_on_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    assert len(text.splitlines()) <= 300
    first = text.split("```")[1]
    assert first.splitlines()[1].startswith("make demo")
    assert any(line.startswith("make test") for line in first.splitlines())
    five = text.index("## Five minutes to a character in SillyTavern")
    assert text.count("\n", 0, five) < 40  # a SillyTavern user finds it on the first screen


def test_every_page_a_page_links_to_exists() -> None:
    broken = []
    for page in docfigs.pages(ROOT):
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text("utf-8")):
            if not (page.parent / target).is_file():
                broken.append((page.name, target))
    assert broken == []
    linked = set(re.findall(r"\(docs/([\w-]+\.md)\)", (ROOT / "README.md").read_text("utf-8")))
    assert linked == {p.name for p in (ROOT / "docs").glob("*.md")}  # every page is reachable


def test_the_figures_a_test_names_reach_the_record_and_keep_its_other_parts(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from conftest import FIGURES, MEASURED, _write_figures

    out = tmp_path / "figures.json"
    out.write_text('{"cost": {"operators": 452}, "suite": {"old": 1, "cards": 3}}', "utf-8")
    report = SimpleNamespace(user_properties=[(MEASURED, "452 cards"), (FIGURES, {"cards": 452})])
    reporter = cast(Any, SimpleNamespace(stats={"passed": [report]}))
    assert _write_figures(reporter, out) == 1
    record = json.loads(out.read_text("utf-8"))
    assert record == {"cost": {"operators": 452}, "suite": {"cards": 452, "old": 1}}
    assert docfigs.measured_figures(record)["suite.cards"] == "452"
