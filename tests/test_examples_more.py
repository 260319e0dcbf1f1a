"""The other half of the example scripts (see ``test_examples.py``)."""

import pytest

from tests._tiers import slow_cases
from tests.test_examples import SCRIPTS, SLOW_EXAMPLES, run_example


@pytest.mark.parametrize("script", slow_cases(SCRIPTS[1::2], SLOW_EXAMPLES & {p.stem for p in SCRIPTS[1::2]},
                                              ids=lambda p: p.stem))
def test_example_runs_and_writes_figures(script, tmp_path, capsys, monkeypatch):
    run_example(script, tmp_path, capsys, monkeypatch)
