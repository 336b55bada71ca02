"""Whether ``arklore build`` finished in a home: the one record of a build in progress.

``arklore build`` writes ``$ARKLORE_HOME/build-incomplete.json`` (atomically) before its first
step, adds each step to it as the step finishes (run or skipped as unchanged) and removes it
when the last step is done. A home where the file is left (the build was killed, interrupted
with Ctrl-C, or failed) is *incomplete*: what a chat gets from it lacks what the missing steps
build. A home with neither the file nor a store was never built.

:meth:`arklore.workspace.Workspace.build_state` reads it for every caller (turns, exports,
``serve``, ``/readyz``, a doctor).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from arklore.base.files import atomic_write_bytes
from arklore.core.errors import IncompleteBuildError

BUILD_STEPS: tuple[str, ...] = ("ingest", "graph", "appearances", "profiles", "index", "exemplars")
"""The steps of ``arklore build``, in order (see :mod:`arklore.build`)."""

MARK_FILE = "build-incomplete.json"

State = Literal["built", "incomplete", "not built"]


@dataclass(frozen=True)
class BuildStatus:
    """What ``arklore build`` left in a home: ``state``, the steps done and missing."""

    state: State
    home: Path
    done: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    started_at: float | None = None

    @property
    def complete(self) -> bool:
        return self.state == "built"

    def problem(self) -> str | None:
        """One line (without the hint) when the home is not fully built, else None."""
        if self.state == "incomplete":
            return (
                f"the last `arklore build` of {self.home} did not finish (missing: "
                f"{', '.join(self.missing)})"
            )
        if self.state == "not built":
            return f"nothing is built in {self.home} yet"
        return None

    def hint(self) -> str:
        if self.state == "incomplete":
            return "run `arklore build` again to resume"
        return "run `arklore build`"

    def warning(self) -> str | None:
        """The one-line warning a turn on this home carries, or None when it is built."""
        problem = self.problem()
        if problem is None:
            return None
        return f"{problem}: answers lack what those steps build; {self.hint()}"

    def warnings(self) -> list[str]:
        """What every turn on this home carries: one line when a build did not finish (a
        home never built has no turn to warn)."""
        line = self.warning() if self.state == "incomplete" else None
        return [line] if line else []

    def require_complete(self) -> None:
        """IncompleteBuildError when a build was started here and did not finish (exports
        refuse such a home unless told otherwise)."""
        if self.state == "incomplete":
            raise IncompleteBuildError(str(self.problem()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "home": str(self.home),
            "done": list(self.done),
            "missing": list(self.missing),
            "started_at": self.started_at,
        }


class BuildMark:
    """The file ``arklore build`` keeps while it runs (see the module doc)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / MARK_FILE
        self._done: list[str] = []
        self._started = 0.0

    def start(self) -> None:
        """A build starts: every step is missing until it finishes in this build."""
        self._done, self._started = [], time.time()
        self._write()

    def step_done(self, step: str) -> None:
        if step not in self._done:
            self._done.append(step)
        self._write()

    def finish(self) -> None:
        """The build finished every step: the home is built."""
        self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        data = {"started_at": self._started, "done": self._done, "steps": list(BUILD_STEPS)}
        atomic_write_bytes(self.path, orjson.dumps(data, option=orjson.OPT_INDENT_2))

    def status(self, *, has_store: bool) -> BuildStatus:
        """The home's state; ``has_store``: whether anything was ever ingested (a home built
        before this record existed, or with the single-step commands, counts as built)."""
        if not self.path.is_file():
            if has_store:
                return BuildStatus("built", self.home, done=BUILD_STEPS)
            return BuildStatus("not built", self.home, missing=BUILD_STEPS)
        try:
            data = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            data = {}  # a damaged record still says a build did not finish
        data = data if isinstance(data, dict) else {}
        listed = data.get("done")
        done = tuple(s for s in BUILD_STEPS if isinstance(listed, list) and s in listed)
        started = data.get("started_at")
        if len(done) == len(BUILD_STEPS):  # stopped between its last step and removing this
            return BuildStatus("built", self.home, done=BUILD_STEPS)
        return BuildStatus(
            "incomplete",
            self.home,
            done=done,
            missing=tuple(s for s in BUILD_STEPS if s not in done),
            started_at=float(started) if isinstance(started, int | float) else None,
        )


__all__ = ["BUILD_STEPS", "MARK_FILE", "BuildMark", "BuildStatus"]
