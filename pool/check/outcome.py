"""One check's result, printed as one line (PASS / FAIL / SKIP) with indented details."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Status = Literal["PASS", "FAIL", "SKIP"]
MAX_DETAILS = 12  # a suite with hundreds of problems still prints a screenful, and says how many more


class CheckInputError(ValueError):
    """The command line names nothing usable (a missing file, an unknown model): exit 2."""


@dataclass(frozen=True)
class Outcome:
    """``check`` passed, failed or was skipped; ``summary`` says what was found, ``todo`` what to do
    (a failure always says), ``details`` one line per problem or observation."""

    check: str
    status: Status
    summary: str
    todo: str = ""
    details: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status == "FAIL" and not self.todo:
            raise ValueError(f"check {self.check!r}: a failure must say what to do")

    def lines(self) -> list[str]:
        head = f"{self.status} {self.check}: {self.summary}"
        if self.todo:
            head += f" — to do: {self.todo}"
        shown = list(self.details[:MAX_DETAILS])
        if len(self.details) > MAX_DETAILS:
            shown.append(f"... and {len(self.details) - MAX_DETAILS} more")
        return [head, *(f"    {line}" for line in shown)]


def failed(check: str, summary: str, todo: str, details: Sequence[str] = ()) -> Outcome:
    return Outcome(check, "FAIL", summary, todo, tuple(details))


def passed(check: str, summary: str, details: Sequence[str] = ()) -> Outcome:
    return Outcome(check, "PASS", summary, "", tuple(details))


def counted(counts: dict[str, int]) -> str:
    """``{"exam": 25, "tcm": 17}`` → ``"exam 25, tcm 17"`` (sorted by name)."""
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
