"""The retraction study: which retraction (exp, Cayley, SO(2) x R^2) and which
scheme for the Chaplygin sled, and at what cost -- a table and a work-precision plot."""

from _common import output_dir

from manifold_dirac.study import retraction_study

out = output_dir(__doc__)
result = retraction_study("chaplygin_sled", schemes=("symmetric", "plus"), long_steps=500)
print(result.table())
(out / "chaplygin_sled_study.md").write_text(result.table())
result.figure(out / "chaplygin_sled_work_precision.png")
