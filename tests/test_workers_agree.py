"""Under MultiWorkerMirroredStrategy every decision of the schedule comes
from values all workers agree on: two workers whose own validation losses
differ finish together, with the same history (subprocesses, one per worker)."""

import json
import os
import sys

import pytest

from cluster_runs import ROOT, finish, start_workers

SCRIPT = os.path.join(ROOT, "tests", "diverging_workers.py")


@pytest.mark.slow
def test_workers_with_different_validation_losses_cut_and_stop_together(tmp_path):
    finish(start_workers([sys.executable, SCRIPT, str(tmp_path)]), timeout=240)
    first, second = (json.loads((tmp_path / f"worker{i}.json").read_text()) for i in (0, 1))
    assert first == second
    # The agreed loss (the mean of the two) made the schedule cut the rate:
    # without agreement worker 1's falling loss would not have.
    assert len(set(first["lr"])) > 1


@pytest.mark.slow
@pytest.mark.research
def test_a_used_out_refused_by_the_chief_stops_every_worker_with_its_reason(tmp_path):
    """Only the chief sees that its --out is taken (each worker has its own
    folder here, as on separate machines); every worker stops with the
    chief's one-line reason and status 2, none waits for the others."""
    cwds = [tmp_path / "chief", tmp_path / "worker"]
    for cwd in cwds:
        cwd.mkdir()
    (cwds[0] / "out").mkdir()
    (cwds[0] / "out" / "results.json").write_text("{}")
    argv = [sys.executable, os.path.join(ROOT, "scripts", "run.py"), "--dset", "moons",
            "--hidden", "8", "--epochs", "1", "--no-exact", "--no-plots", "--quiet",
            "--out", "out"]
    procs = start_workers(argv, cwds=cwds)
    outs = [p.communicate(timeout=240) for p in procs]
    errors = [err.strip().splitlines()[-1] for _, err in outs]
    assert [p.returncode for p in procs] == [2, 2], outs
    assert errors[0] == errors[1] and errors[0].startswith("run.py: error: ")
    assert "out" in errors[0] and os.listdir(cwds[1]) == []
