"""Exact models, one module per problem; importing the package registers them all."""

from . import (  # noqa: F401  (each registers its methods)
    genie,
    horus,
    inference,
    inference_edf,
    inference_lagrange,
    liquid,
    offline,
)
