# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared fixtures for the real-cluster tests: every cluster gets its own run
directory and free ports, and is always taken down, even on failure."""
import sys
from pathlib import Path

import pytest

TESTSUITE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTSUITE))

from harness import slurm_release  # noqa: E402
from harness.cluster import Cluster, new_run_dir  # noqa: E402

FIXTURES = TESTSUITE / "fixtures"


def release_unavailable(version: str, reason: str):
    """A test that needs Slurm `version` (or a plugin built for it) and finds
    it missing: a failure where it is required (slurm_release.required:
    run-tests requires the releases it built), else a skip with the reason."""
    if slurm_release.required(version):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def cluster_factory():
    started = []

    def make(fixture="demo.json", select="k8s_cons_tres", kubernetes=True, slurm=None):
        c = Cluster(new_run_dir("k8s-cons-tres-test-"))
        started.append(c)
        c.up(str(FIXTURES / fixture), select=select, kubernetes=kubernetes, slurm=slurm)
        return c

    yield make
    for c in started:
        c.down()


@pytest.fixture(scope="module")
def k8s_cluster():
    """The demo fixture with the test API server: pods hold some devices."""
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.up(str(FIXTURES / "demo.json"))
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def demo_cluster():
    """The demo fixture with no k8s_cons_tres.conf: integration off."""
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.up(str(FIXTURES / "demo.json"), kubernetes=False)
        yield c
    finally:
        c.down()
