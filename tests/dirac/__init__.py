"""Dirac-structure tests: linear algebra of :mod:`manifold_dirac.dirac`, independent of the engine.

Ported unchanged from the numpy-engine suite except that the shared
strategies are imported relatively: this folder is a package, so its modules
have names of their own next to the old suite's.
"""
