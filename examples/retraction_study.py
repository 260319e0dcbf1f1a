"""The retraction study: which retraction (exp, Cayley, SO(2) x R^2) and which
scheme for the Chaplygin sled, and at what cost -- a table and a work-precision plot,
made from the study's sweep Dataset (saved as NetCDF beside them)."""

from _common import output_dir

from manifold_dirac import retraction_study, save_dataset

out = output_dir(__doc__)
# 3 retractions x 2 schemes x 1 rule x 3 step sizes = 18 cells, in this process
# (workers=2 runs them on a local Dask cluster; client="tcp://host:8786" on a running one)
result = retraction_study("chaplygin_sled", schemes=("symmetric", "plus"), long_steps=500)
print(result.table())
ds = result.dataset
print(ds.error.sel(scheme="symmetric", rule="midpoint").to_pandas())  # error at T: retraction x h
(out / "chaplygin_sled_study.md").write_text(result.table())
result.figure(out / "chaplygin_sled_work_precision.png")
save_dataset(ds, out / "chaplygin_sled_study.nc")
