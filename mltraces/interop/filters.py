"""How a recipe filters a trace: rules in order, applied to the whole trace or batch by batch.

A :class:`Recipe` is a paper artifact's filter stated as :class:`Rule` s over the
common columns of ``mltraces.jobs``. Most rules judge each job alone (``keeps``);
some need something of every job that reaches them first:

- ``gather``: a fact of all the jobs reaching the rule (the first submission of
  a trace, per cluster), collected in a pass over the trace before the jobs are
  judged (:meth:`RecipeRun.gather`);
- ``limit``: the rule keeps the first ``limit`` jobs reaching it, counted across
  batches;
- ``change``: the rule rewrites jobs instead of dropping them (a VC merged into
  another) and reports how many it changed.

A recipe may read catalog tables (``tables``) into a ``context`` once (the VCs a
cluster configures). :func:`apply` runs a recipe on one frame; an export runs
:class:`RecipeRun` on the batches of a trace it streams, with the same result
whatever the batch size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import duckdb

    from mltraces.jobmap import JobTable

__all__ = ["Facts", "Gather", "Recipe", "RecipeRun", "Rule", "apply", "recorded_columns"]


@dataclass(frozen=True)
class Facts:
    """What a rule may read besides the jobs: the recipe's context and its gathered fact."""

    context: Any = None
    gathered: Any = None


@dataclass(frozen=True)
class Gather:
    """A fact of every job reaching a rule: ``partial`` of each batch, ``combine`` of them all."""

    partial: Callable[[pd.DataFrame], Any]
    combine: Callable[[list[Any]], Any]


@dataclass(frozen=True)
class Rule:
    """One rule: the jobs it keeps (or how it rewrites them) and why."""

    name: str
    description: str
    keeps: Callable[[pd.DataFrame, Facts], pd.Series] | None = None
    #: the columns it needs; a rule whose columns a trace does not record keeps every job
    #: and is reported as not applicable
    needs: tuple[str, ...] = ()
    gather: Gather | None = None
    limit: int | None = None
    change: Callable[[pd.DataFrame, Facts], pd.DataFrame] | None = None
    #: where the artifact applies it, when the recipe's rules come from several files
    where: str = ""


def _no_context(con: duckdb.DuckDBPyConnection | None, entry: JobTable | None) -> None:
    return None


def _no_tables(source: str) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Recipe:
    """A paper artifact's filter, rule by rule, in the order the artifact applies them."""

    name: str
    title: str
    artifact: str  # repository@commit path
    rules: tuple[Rule, ...]
    #: the catalog tables its context reads for a trace of a source
    tables: Callable[[str], tuple[str, ...]] = _no_tables
    #: what its rules read besides the jobs (from those tables), loaded once
    context: Callable[[duckdb.DuckDBPyConnection | None, JobTable | None], Any] = _no_context
    #: what an export records of the context beside the kept jobs (the artifact's capacity)
    describe: Callable[[Any, set[tuple[Any, Any]]], dict | None] | None = None


def recorded_columns(frame: pd.DataFrame) -> set[str]:
    """The columns ``frame`` records (a state of UNKNOWN is not recorded)."""
    found = {c for c in frame.columns if c != "state" and frame[c].notna().any()}
    if "state" in frame and (frame["state"] != "UNKNOWN").any():
        found.add("state")
    return found


@dataclass
class RecipeRun:
    """One application of a recipe to one trace, which may come in batches."""

    recipe: Recipe
    recorded: set[str]  # the columns the whole trace records
    context: Any = None
    gathered: dict[str, Any] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    changed: dict[str, int] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)
    seen: set[tuple[Any, Any]] = field(default_factory=set)  # (cluster, vc) of kept jobs

    def _applies(self, rule: Rule) -> bool:
        return all(c in self.recorded for c in rule.needs)

    @property
    def pending(self) -> Rule | None:
        """The first rule whose gathered fact is still unknown."""
        return next((r for r in self.recipe.rules if r.gather and self._applies(r)
                     and r.name not in self.gathered), None)

    def gather(self, batches: Iterable[pd.DataFrame]) -> None:
        """One pass over the trace: the fact of the first pending rule."""
        rule = self.pending
        if rule is None or rule.gather is None:
            return
        parts = []
        self.taken = {}
        for batch in batches:
            reaching = self._through(batch, stop=rule.name, count=False)
            parts.append(rule.gather.partial(reaching))
        self.gathered[rule.name] = rule.gather.combine(parts)
        self.taken = {}

    def restarted(self) -> RecipeRun:
        """The same run (context, gathered facts) with nothing counted yet: for another pass."""
        return RecipeRun(self.recipe, self.recorded, self.context, dict(self.gathered))

    def keep(self, batch: pd.DataFrame) -> pd.DataFrame:
        """The jobs of ``batch`` the recipe keeps (every gathered fact must be known)."""
        if self.pending is not None:
            raise MltracesError(f"recipe {self.recipe.name}: rule {self.pending.name} needs a "
                                "pass over the whole trace first")
        kept = self._through(batch, stop=None, count=True)
        if {"cluster", "vc"} <= set(kept.columns):
            self.seen.update(zip(kept["cluster"], kept["vc"], strict=True))
        return kept

    def _through(self, frame: pd.DataFrame, stop: str | None, count: bool) -> pd.DataFrame:
        for rule in self.recipe.rules:
            if rule.name == stop:
                break
            if not self._applies(rule):
                continue
            facts = Facts(self.context, self.gathered.get(rule.name))
            if rule.change is not None:
                changed = rule.change(frame, facts)
                if count:
                    differs = _differs(frame, changed)
                    self.changed[rule.name] = self.changed.get(rule.name, 0) + differs
                frame = changed
                continue
            keep = (rule.keeps(frame, facts).fillna(False).astype(bool) if rule.keeps
                    else pd.Series(True, index=frame.index))
            if rule.limit is not None:
                room = max(0, rule.limit - self.taken.get(rule.name, 0))
                keep &= keep.cumsum() <= room
                self.taken[rule.name] = self.taken.get(rule.name, 0) + int(keep.sum())
            if count:
                self.removed[rule.name] = self.removed.get(rule.name, 0) + int((~keep).sum())
            frame = frame[keep]
        return frame

    def report(self) -> list[dict]:
        """Per rule: what it removed (or changed), or why it could not apply."""
        out = []
        for rule in self.recipe.rules:
            entry: dict[str, Any] = {"rule": rule.name, "description": rule.description}
            if rule.where:
                entry["where"] = rule.where
            if not self._applies(rule):
                missing = [c for c in rule.needs if c not in self.recorded]
                entry |= {"removed": 0, "applied": False,
                          "why": f"the trace records no {', '.join(missing)}"}
            elif rule.change is not None:
                entry |= {"removed": 0, "changed": self.changed.get(rule.name, 0),
                          "applied": True}
            else:
                entry |= {"removed": self.removed.get(rule.name, 0), "applied": True}
            out.append(entry)
        return out

    def described(self) -> dict | None:
        """What the recipe records of its context for the jobs it kept (None: nothing)."""
        if self.recipe.describe is None:
            return None
        return self.recipe.describe(self.context, self.seen)


def _differs(before: pd.DataFrame, after: pd.DataFrame) -> int:
    """How many rows ``change`` rewrote (any column)."""
    if before.empty:
        return 0
    same = (before == after) | (before.isna() & after.isna())
    return int((~same.all(axis=1)).sum())


def apply(recipe: Recipe, frame: pd.DataFrame, context: Any = None
          ) -> tuple[pd.DataFrame, list[dict]]:
    """The jobs ``recipe`` keeps of ``frame`` and, per rule, how many it removed (or why it
    could not run); ``context`` is what :attr:`Recipe.context` loads, for recipes that read
    catalog tables."""
    run = RecipeRun(recipe, recorded_columns(frame), context)
    while run.pending is not None:
        run.gather([frame])
    kept = run.keep(frame)
    return kept, run.report()
