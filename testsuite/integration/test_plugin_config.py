# SPDX-License-Identifier: GPL-2.0-or-later
"""k8s_cons_tres.conf in the real slurmctld: a bad file stops start-up with
a line naming the file, the line and the fix; no file means integration off."""
import re

import pytest

from harness.cluster import Cluster, new_run_dir
from conftest import FIXTURES

BAD = [
    ("InCluster=yes\nColour=blue\n", ":2: unknown key 'Colour' (known keys: "),
    ("InCluster=yes\nStaleAfter=soon\n", ":2: bad value for StaleAfter='soon': expected a whole number of seconds"),
    ("ClaimNamespace=hpc\n", ": no API server configured: set one of Kubeconfig=, InCluster=yes or APIServer="),
    ("APIServer=https://127.0.0.1:6443\n", ": APIServer= needs TokenFile="),
]


@pytest.fixture
def prepared():
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    c.prepare(str(FIXTURES / "demo.json"))
    yield c
    c.down()


@pytest.mark.parametrize("text,message", BAD, ids=["unknown-key", "bad-value", "no-server", "no-token"])
def test_bad_config_stops_slurmctld_with_the_reason(prepared, text, message):
    prepared.plugin_conf.write_text(text)
    res = prepared.run("slurmctld", "-D", check=False, timeout=60)
    assert res.returncode != 0
    log = (prepared.run_dir / "log" / "slurmctld.log").read_text()
    expected = f"error: select/k8s_cons_tres: core did not start: {prepared.plugin_conf}{message}"
    assert expected in log, log[-2000:]
    # 22.05 and 24.11 name the plugin, 25.11 and later the interface
    assert re.search(r"fatal: (Can't find plugin for select/k8s_cons_tres|"
                     r"failed to initialize node selection plugin)", log), log[-2000:]


def test_missing_config_runs_with_integration_off(demo_cluster):
    log = (demo_cluster.run_dir / "log" / "slurmctld.log").read_text()
    assert f"no {demo_cluster.plugin_conf}: Kubernetes integration is OFF" in log
