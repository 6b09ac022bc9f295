"""A problem's parsed ``params``, kept per object: a simulator and its policies parse the
same workload's params at every event, and validating them again costs more than the
decision itself."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def kept_per_object(parse: Callable[[Mapping[str, Any]], T], maxsize: int = 64
                    ) -> Callable[[Mapping[str, Any]], T]:
    """``parse`` with its result kept for the last ``maxsize`` params objects.

    A result is reused only for the same object with equal contents (a deep copy is kept
    beside it, so an object changed in place is parsed again); callers only read it.
    """
    kept: dict[int, tuple[Mapping[str, Any], Any, T]] = {}

    @functools.wraps(parse)
    def parsed(params: Mapping[str, Any]) -> T:
        hit = kept.get(id(params))
        if hit is not None and hit[0] is params and hit[1] == params:
            return hit[2]
        result = parse(params)
        if len(kept) >= maxsize:
            del kept[next(iter(kept))]
        kept[id(params)] = (params, copy.deepcopy(dict(params)), result)
        return result

    return parsed
