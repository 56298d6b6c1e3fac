# SPDX-License-Identifier: GPL-2.0-or-later
"""The quick start's demo as a user runs it, in its external-node form
(`testsuite/demo --external`, Slurm 26.05.3): the Kubernetes nodes it shows
are EXTERNAL nodes the plugin made from their slices, and every job of the
mix that runs lands clear of what pods hold. The demo leaves its cluster
running; the test takes it down."""
import re
import subprocess
import sys

from conftest import TESTSUITE
from harness.fixture import load
from test_releases_plugin import require

RELEASE = "26.05.3"


def test_demo_external_shows_discovered_nodes_and_places_the_mix():
    require(RELEASE)
    res = subprocess.run([sys.executable, str(TESTSUITE / "demo"), "--no-build", "--external"],
                         capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    run_dir = re.search(r"down --run-dir (\S+)", out)
    try:
        assert res.returncode == 0, out
        assert run_dir, "the demo printed no run directory to take down:\n" + out
        fx = load(str(TESTSUITE / "fixtures" / "demo.json"))
        kube = [n.name for n in fx.nodes if n.kubernetes]
        assert f"== Slurm {RELEASE}, Kubernetes nodes as EXTERNAL nodes" in out, out
        for name in kube:
            line = re.search(rf"^   {re.escape(name)}: (.*)$", out, re.M)
            assert line, out
            state = re.search(r"State=(\S+)", line.group(1))
            assert state and "EXTERNAL" in state.group(1).split("+"), line.group(0)
            assert "CPUTot=64" in line.group(1), line.group(0)
            assert re.search(r"Gres=gpu:\S+:8", line.group(1)), line.group(0)
        assert "cons_tres:     " not in out  # no comparison run: cons_tres cannot discover nodes
        rows = re.findall(r"k8s_cons_tres: (k8s-\S+ cpu .*)$", out, re.M)
        assert len(rows) >= 5, out  # the mix's jobs that fit, one row per node
        assert not [r for r in rows if "POD-HELD" in r], rows
        assert not [r for r in rows if "GPU-NOT-ALIGNED" in r], rows
        claims = re.findall(r"claims:\s+(\S.*)$", out, re.M)
        assert any(c.startswith("slurm-") for c in claims), out
    finally:
        if run_dir:
            subprocess.run([str(TESTSUITE / "cluster"), "down", "--run-dir", run_dir.group(1)],
                           capture_output=True, timeout=120)
