"""The other half of the example scripts (see ``test_examples.py``)."""

import pytest

from tests.test_examples import SCRIPTS, run_example


@pytest.mark.parametrize("script", SCRIPTS[1::2], ids=lambda p: p.stem)
def test_example_runs_and_writes_figures(script, tmp_path, capsys, monkeypatch):
    run_example(script, tmp_path, capsys, monkeypatch)
