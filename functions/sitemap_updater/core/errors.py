"""The one error type for rejected input: every problem names the field it is about; and how many rejected
events a bulk load (``build``, a bootstrap's export object) tolerates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only the model path has pydantic's errors to word; a build of plain lines never imports it
    from pydantic import ValidationError


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason an event was rejected: a dotted field path (``videos[0].title``) and a human reason."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Oversized:
    """Stands for a JSON integer too long to read (Python reads at most 4,300 digits), so that the field
    holding it is the one rejected."""

    digits: int

    @property
    def reason(self) -> str:
        return f"a number of {self.digits:,} digits is out of range (at most 4,300 digits can be read)"


class EventRejected(ValueError):
    """An event that cannot be accepted. ``str()`` gives ``field: reason[; field: reason ...]``."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, field: str, reason: str) -> EventRejected:
        return cls([Problem(field, reason)])

    @classmethod
    def from_validation_error(cls, error: ValidationError, prefix: str = "") -> EventRejected:
        problems = []
        for item in error.errors(include_url=False):
            field = _field_path(item["loc"], prefix)
            found = item.get("input")
            if isinstance(found, Oversized):
                message = found.reason
            else:
                message = _MESSAGES.get(item["type"]) or str(item["msg"]).removeprefix("Value error, ")
            if Problem(field, message) not in problems:
                problems.append(Problem(field, message))
        return cls(problems)


class LimitExceeded(RuntimeError):
    """A protocol limit cannot be met (for example more than 50,000 sitemap files in one index)."""


# Clearer words for pydantic errors that users meet.
_MESSAGES = {"string_unicode": "contains a lone surrogate, which is not allowed in XML"}


def _field_path(loc: tuple[int | str, ...], prefix: str) -> str:
    path = prefix.rstrip(".")
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(event)"


# A build over this share of rejected events is refused (the old output stays): a few bad records still
# publish (the sample export rejects 2 of 14 lines), a systemic fault (the wrong --site, an exporter that
# renamed a field for a whole content type) stops before a quarter of the site disappears from its sitemaps.
MAX_REJECTED_SHARE = 0.25


def refusal(accepted: int, rejected: int, max_share: float) -> str | None:
    """Why events with these counts must not replace a site's sitemaps, or None when they may."""
    if accepted == 0:
        return f"no event was accepted ({rejected:,} rejected): nothing to publish"
    share = rejected / (accepted + rejected)
    if share > max_share:
        return (
            f"{rejected:,} of {accepted + rejected:,} events were rejected ({share:.1%}), "
            f"more than the {max_share:.0%} allowed"
        )
    return None
