"""Seeded instance generators, trace importers and the pinned instance library.

Importing the package registers every generator module (``*_gen.py``).
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if _module.name.endswith("_gen"):
        importlib.import_module(f"{__name__}.{_module.name}")
