"""The compiled (JAX) engine, built beside the numpy engine until it replaces it.

Importing this package enables float64 in JAX (``jax_enable_x64``) and the
persistent compilation cache (:mod:`manifold_dirac._next.config`).
"""

from . import config as _config

_config.configure()
