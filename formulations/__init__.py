"""Exact models, one module per problem; importing the package registers them all."""

from . import genie, horus, inference, inference_edf, liquid, offline  # noqa: F401  (each registers its methods)
