"""The runs: from a system and initial data to a trajectory, one file per job.

* :mod:`.integrator` -- :class:`~manifold_dirac._run.integrator.Integrator`, stepped by hand or run;
* :mod:`.integrate` -- :func:`~manifold_dirac._run.integrate.integrate`, one call;
* :mod:`.state` -- :class:`~manifold_dirac._run.state.RunState`, the state between steps;
* :mod:`.start` -- the Legendre map at ``q0`` and the checks that refuse an ill-posed start;
* :mod:`.loop` -- the compiled loop over chunks of stored points, and the host loop over chunks;
* :mod:`.recording` -- what is stored (:class:`~manifold_dirac._run.recording.Recording`) and the result;
* :mod:`.reports` -- progress, statuses and messages, raised failures;
* :mod:`.diagnosis` -- why a step failed, found eagerly at the failed member's state;
* :mod:`.validate` -- the argument checks;
* :mod:`.programs` -- the compiled programs of a system;
* :mod:`.trajectory` -- the :class:`~manifold_dirac._run.trajectory.Trajectory` result;
* :mod:`.rollout` -- :func:`~manifold_dirac._run.rollout.rollout`, a run that ``jax.grad`` goes through.

Nothing is re-exported here (``md.*`` names them all), so that no
function shadows the submodule of the same name (``integrate``, ``rollout``).
"""
