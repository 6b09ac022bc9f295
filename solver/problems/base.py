"""The Problem interface every scheduling problem implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InputError

if TYPE_CHECKING:
    from ..decision import Decision
    from ..instance import Instance


@dataclass(frozen=True)
class Violation:
    """One reason a decision is infeasible. ``kind`` is a stable machine-readable tag."""

    kind: str
    job: str | None
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.job + ': ' if self.job else ''}{self.message}"


class Problem:
    """Base class: subclass it, set the class attributes and implement the hooks.

    A problem says what a valid decision is and what it costs, independently of every
    model and heuristic; :func:`dlsched.validate` and :func:`dlsched.evaluate` call its
    hooks. Register an instance with :func:`register_problem`.

    Attributes
    ----------
    name
        The problem's name, as written in instance files (``"problem": ...``).
    sense
        ``"min"`` or ``"max"``: the direction of :meth:`evaluate`'s objective.
    job_fields
        Job fields every job of this problem must carry (checked on load).
    exclusive_gpus
        GPUs are not shared between jobs (running ones included).
    whole_batch
        A decision must place every pending job or none.
    simulator
        The simulator that replays a workload of this problem, by its registered name:
        ``"events"`` (the event simulator, :func:`dlsched.simulate`) or ``"serving"``
        (the serving simulator, :func:`dlsched.serve`); ``dlsched simulate`` looks it up.
    """

    name: ClassVar[str]
    sense: ClassVar[str] = "min"  # "min" or "max"
    job_fields: ClassVar[tuple[str, ...]] = ()
    exclusive_gpus: ClassVar[bool] = False
    whole_batch: ClassVar[bool] = False  # a decision must place every pending job or none
    simulator: ClassVar[str] = "events"

    def parse_params(self, params: Mapping[str, Any]) -> Any:
        """Typed, validated parameters of the instance's ``params`` object.

        Parameters
        ----------
        params
            The instance file's ``params`` mapping.

        Returns
        -------
        Any
            The problem's parameter object (the mapping itself by default).

        Raises
        ------
        InputError
            A parameter is missing or bad (field ``params.X``).
        """
        return params

    def check_instance(self, instance: Instance) -> None:
        """Check that ``instance`` has what this problem needs (called on load).

        Parameters
        ----------
        instance
            The instance being loaded or built.

        Returns
        -------
        None

        Raises
        ------
        InputError
            A bad parameter, or a job without one of :attr:`job_fields`.
        """
        self.parse_params(instance.params)
        for i, job in enumerate(instance.jobs):
            for name in self.job_fields:
                if getattr(job, name) is None:
                    raise InputError(
                        f"job {job.id!r} has no {name}",
                        field=f"jobs[{i}].{name}",
                        fix=f"problem {self.name!r} needs {name} on every job",
                    )

    def check_decision(self, instance: Instance, decision: Decision) -> list[Violation]:
        """Problem-specific feasibility rules beyond the validator's generic ones.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A decision that already passes the generic rules (ids, demands, capacities).

        Returns
        -------
        list of Violation
            Every problem rule the decision breaks (empty when none).
        """
        return []

    def decision_from_solution(self, doc: Mapping[str, Any]) -> Decision | None:
        """The decision of a solution document, for problems whose decisions are not
        generic placements.

        Parameters
        ----------
        doc
            A solution document that passed the solution schema and names this instance.

        Returns
        -------
        Decision or None
            ``None`` (the base class): the generic ``placements`` reader applies.

        Raises
        ------
        InputError
            The document lacks, or carries, a field this problem's decisions need or
            forbid (field named, one line).
        """
        return None

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        """The objective value of a (valid) decision, from the decision alone.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A decision that passes :func:`dlsched.validate`.

        Returns
        -------
        float
            The objective, lower is better when :attr:`sense` is ``"min"``.
        """
        raise NotImplementedError

    def snapshot_bound(self, instance: Instance) -> float | None:
        """A bound on the objective of every valid decision that needs no solver.

        Parameters
        ----------
        instance
            The snapshot.

        Returns
        -------
        float or None
            An upper bound (``sense == "max"``) or lower bound (``"min"``) of the
            snapshot's optimum; ``None`` when the problem has none (the default).
        """
        return None

    # ---- what a benchmark report shows (dlsched.benchmarks.report) ----
    report_gap: ClassVar[str] = "relative"
    """How the report states a run's distance to the best known value: ``"relative"``
    (|a − b| / max(|a|, |b|), printed only when every value of the group has one sign,
    else ``"absolute"``), or ``"absolute"`` (a − b in the units of :attr:`report_gap_on`)."""
    report_gap_on: ClassVar[str | None] = None
    """The :meth:`report_metrics` entry the gap is taken on (``None``: the objective)."""

    def report_metrics(self, instance: Instance, decision: Decision) -> dict[str, float]:
        """The quantities a reader compares between methods, for a (valid) decision.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A decision that passes :func:`dlsched.validate`.

        Returns
        -------
        dict of str to float
            Name (with its unit) → value; the base class gives the objective alone.
        """
        return {"objective": float(self.evaluate(instance, decision))}

    # ---- rate models (dlsched.problems.rates): how fast a job runs on a placement ----
    default_locality: ClassVar[str | None] = None
    """The registered locality model (:func:`dlsched.problems.rates.register_locality`)
    that simulations and offline schedules of this problem use unless told otherwise;
    ``None``: no locality slowdown."""
    default_interference: ClassVar[str | None] = None
    """The registered interference model (:func:`dlsched.problems.rates.
    register_interference`) they use; ``None``: jobs sharing a GPU do not slow down."""

    # ---- offline schedules (timed decisions: every placement has start and end) ----
    schedule_objectives: ClassVar[Mapping[str, str]] = {}
    """Objectives of whole-workload schedules this problem defines: name -> "min"/"max"."""

    def schedule_duration(self, instance: Instance, job_id: str, gpus: tuple[str, ...]
                          ) -> float:
        """Run time of ``job_id`` alone on the GPUs ``gpus`` (exclusive, non-preemptive).

        Problems that define offline schedules override it; the validator checks every
        timed placement's ``end - start`` against it.

        Parameters
        ----------
        instance
            The workload (jobs with submit times).
        job_id
            The job's id.
        gpus
            The GPU ids of the placement.

        Returns
        -------
        float
            Seconds (the base class raises ``NotImplementedError``).
        """
        raise NotImplementedError(f"problem {self.name!r} defines no timed schedules")

    def evaluate_schedule(self, instance: Instance, decision: Decision, objective: str
                          ) -> float:
        """A schedule objective of a (valid) timed decision, from its starts and ends.

        ``makespan``: last end − first submit time; ``weighted_jct``: Σ weight × (end −
        submit); ``qos``: percentage of jobs with a deadline after their submit time that
        end by it (GENIE's QoS guarantee, Eq. 14).

        Parameters
        ----------
        instance
            The workload.
        decision
            A valid timed decision (every placement has ``start`` and ``end``).
        objective
            One of :attr:`schedule_objectives`.

        Returns
        -------
        float
            The objective value (seconds, or percent for ``qos``).

        Raises
        ------
        InputError
            ``objective`` is not one of :attr:`schedule_objectives`.
        """
        if objective not in self.schedule_objectives:
            raise InputError(f"unknown schedule objective {objective!r}", field="objective",
                             fix=f"use one of {sorted(self.schedule_objectives)}")
        ends = {p.job: float(p.end) for p in decision.placements}
        jobs = instance.jobs
        if objective == "makespan":
            return max(ends.values()) - min(j.submit_time for j in jobs)
        if objective == "weighted_jct":
            return sum(j.weight * (ends[j.id] - j.submit_time) for j in jobs)
        met = sum(1 for j in jobs if j.deadline is not None and j.deadline > j.submit_time
                  and ends[j.id] <= j.deadline + 1e-9)
        return 100.0 * met / len(jobs)


_PROBLEMS: dict[str, Problem] = {}


def register_problem(problem: Problem) -> Problem:
    """Add a problem to the registry (idempotent for the same object)."""
    _PROBLEMS[problem.name] = problem
    return problem


def get_problem(name: str, *, field: str = "problem") -> Problem:
    """The registered problem ``name``; unknown names are an InputError."""
    try:
        return _PROBLEMS[name]
    except KeyError:
        raise InputError(
            f"unknown problem {name!r}",
            field=field,
            fix=f"use one of: {', '.join(sorted(_PROBLEMS))}",
        ) from None


def problem_names() -> list[str]:
    """Names of the registered problems, sorted."""
    return sorted(_PROBLEMS)
