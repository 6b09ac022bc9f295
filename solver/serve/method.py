"""A batch policy as a registered method of the ``inference`` problem.

``solve(window, "heuristic")`` means: replay the window's query stream in the serving
simulator (:func:`dlsched.serve.serve`) under the policy, with the seed of the call and
the delay table's durations (a decision's batches last their table entries; the
instance's ``delay_cv`` is the noise of ``dlsched simulate`` runs), and return the batches
it ran as the decision (status feasible: a policy proves no bound). ``dlsched simulate``
runs the same policy object on a whole workload (:func:`dlsched.serve.run.run_policy`), so
a method and a simulated policy are one thing chosen by one name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..instance import Instance
from ..problems.inference.policies import BatchPolicy
from ..registry import OptionRule, check_option_values, check_options
from ..result import MethodOutput, Status
from .engine import serve


@dataclass(frozen=True)
class PolicyMethod:
    """The ``run`` of a registered serving-policy method.

    Parameters
    ----------
    make
        ``make(instance, seed=..., **options)`` returns a fresh :class:`BatchPolicy`.
    options
        The options ``make`` accepts; any other is an ``InputError``.
    rules, nullable
        Checks of the options' values (:func:`dlsched.registry.check_option_values`).
    """

    make: Callable[..., BatchPolicy]
    options: tuple[str, ...] = ()
    rules: Mapping[str, OptionRule] = field(default_factory=dict)
    nullable: tuple[str, ...] = ()

    def policy(self, instance: Instance, *, seed: int = 0, **options: Any) -> BatchPolicy:
        """A fresh policy for ``instance``, options checked.

        Parameters
        ----------
        instance
            An ``inference`` instance.
        seed
            Seed of a randomized policy (``learned-batching`` with ``greedy=False``).
        options
            The method's options.

        Returns
        -------
        BatchPolicy
            The policy, ready for :func:`dlsched.serve.serve`.
        """
        check_options(options, self.options)
        check_option_values(options, self.rules, self.nullable)
        return self.make(instance, seed=seed, **options)

    def __call__(self, instance: Instance, *, backend: str | None = None,
                 time_limit: float | None = None, seed: int = 0, **options: Any
                 ) -> MethodOutput:
        """Replay ``instance`` under the policy with the table's delays; its batches are
        the decision."""
        run = serve(instance, self.policy(instance, seed=seed, **options), seed=seed,
                    noise_cv=0.0)
        return MethodOutput(run.decision(), Status.FEASIBLE,
                            extra={"decisions": run.decisions,
                                   "dropped": int(run.dropped.sum())})
