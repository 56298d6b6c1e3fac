# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared fixtures for the real-cluster tests: every cluster gets its own run
directory and free ports, and is always taken down, even on failure.

Also the markers every test gets from what it uses, without a list kept by
hand (pytest_collection_modifyitems below):
  cluster              it starts Slurm daemons (a Cluster, the demo, the
                       cluster or slurm-suite programs)
  slurm_release(V...)  it needs these private Slurm builds (and the plugin
                       built for them): from its parameters, the release
                       strings its code and fixtures name, and
                       $K8S_SLURM_RELEASE for a cluster test
  asan_plugin          it needs build-asan's plugin (testsuite/run-sanitizers)
  slow                 set by hand on the tests that take a minute or more
testsuite/run-tests --quick runs -m "not cluster and not slurm_release and
not slow" under K8S_NO_CLUSTERS=1 (harness/cluster.py: a test that starts
Slurm all the same fails, saying its marker is wrong).
`testsuite/run-tests FILE...` asks a --collect-only run of the selection
what it needs (K8S_TEST_NEEDS=FILE) and builds only that."""
import inspect
import os
import sys
import types
from pathlib import Path

import pytest

TESTSUITE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTSUITE))

from harness import slurm_release  # noqa: E402
from harness.cluster import Cluster, new_run_dir, remove_run_dirs  # noqa: E402

FIXTURES = TESTSUITE / "fixtures"

MARKERS = {
    "cluster": "starts Slurm daemons on loopback (set from the fixtures and code a test uses)",
    "slurm_release(*versions)": "needs these private Slurm releases built (set from the test's "
                                "parameters and code)",
    "asan_plugin": "needs build-asan's plugin (testsuite/run-sanitizers asan-plugin)",
    "slow": "takes a minute or more (set by hand)",
}
# What starts a cluster: the harness classes, and the programs under
# testsuite/ that make one (named as TESTSUITE / "demo" and the like).
CLUSTER_NAMES = {"Cluster", "HACluster"}
CLUSTER_PROGRAMS = {"demo", "cluster", "slurm-suite"}
# The calls that take a Slurm release (harness/slurm_release.py, cluster.py,
# test_releases_plugin.require).
RELEASE_USERS = {"get", "Release", "require", "prepare", "up"}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def release_unavailable(version: str, reason: str):
    """A test that needs Slurm `version` (or a plugin built for it) and finds
    it missing: a failure where it is required (slurm_release.required:
    run-tests requires the releases it built), else a skip with the reason."""
    if slurm_release.required(version):
        pytest.fail(reason)
    pytest.skip(reason)


def _codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _ours(obj) -> bool:
    """Defined in a module under testsuite/ (not pytest's, not the stdlib's)."""
    f = getattr(inspect.getmodule(obj), "__file__", None)
    return bool(f) and Path(f).resolve().is_relative_to(TESTSUITE)


class _Uses:
    """What a test's code, its fixtures' and the testsuite functions they
    call (transitively) name: cluster classes and programs, release strings,
    build-asan."""

    def __init__(self):
        self.seen = set()
        self.cluster = False
        self.releases = set()
        self.asan = False

    def walk(self, func):
        func = inspect.unwrap(func)
        code = getattr(func, "__code__", None)
        if code is None or code in self.seen:
            return
        self.seen.add(code)
        glob = getattr(func, "__globals__", {})
        for co in _codes(code):
            names = set(co.co_names)
            strings = {c for c in co.co_consts if isinstance(c, str)}
            if names & CLUSTER_NAMES:
                self.cluster = True
            if strings & CLUSTER_PROGRAMS and ("TESTSUITE" in names or "testsuite" in strings):
                self.cluster = True
            # A release named where the harness is asked for one
            # (slurm_release.get("26.05.3"), require(RELEASE), prepare(...,
            # slurm="26.05.3")), not in a message an assertion looks for.
            asks = bool(names & RELEASE_USERS)
            if asks:
                self.releases |= strings & set(slurm_release.PRIVATE)
            self.asan |= "build-asan" in strings
            for name in names:
                obj = glob.get(name)
                if asks and isinstance(obj, str) and obj in slurm_release.PRIVATE:
                    self.releases.add(obj)  # RELEASE = "26.05.3"
                elif inspect.isfunction(obj) and _ours(obj):
                    self.walk(obj)
                elif isinstance(obj, types.ModuleType) and _ours(obj):
                    # module.function(...): the attribute names are in co_names too
                    for attr in names:
                        fn = getattr(obj, attr, None)
                        if inspect.isfunction(fn):
                            self.walk(fn)


def _item_uses(item) -> _Uses:
    uses = _Uses()
    uses.walk(item.obj)
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in item.fixturenames:
        for fdef in defs.get(name, ()):
            uses.walk(fdef.func)
    params = getattr(getattr(item, "callspec", None), "params", {})
    uses.releases |= {v for v in params.values() if isinstance(v, str) and v in slurm_release.PRIVATE}
    return uses


def _shares_a_fixture(item) -> bool:
    """It uses one of our fixtures wider than a test (a module's API server
    or cluster): under `--dist loadgroup` (run-tests --quick) its module's
    tests stay on one worker, as under loadfile; the other tests go to any
    worker one by one, so that one file's many configure runs
    (test_configure.py) do not keep one worker busy alone."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(fdef.scope != "function" and _ours(fdef.func)
               for name in item.fixturenames for fdef in defs.get(name, ()))


@pytest.hookimpl(tryfirst=True)  # before xdist reads xdist_group
def pytest_collection_modifyitems(config, items):
    env_release = os.environ.get("K8S_SLURM_RELEASE")
    for item in items:
        if _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.location[0]))
        uses = _item_uses(item)
        if uses.cluster:
            item.add_marker(pytest.mark.cluster)
            if env_release in slurm_release.PRIVATE:
                uses.releases.add(env_release)
        if uses.releases:
            item.add_marker(pytest.mark.slurm_release(*sorted(uses.releases)))
        if uses.asan:
            item.add_marker(pytest.mark.asan_plugin)
    # Files with a slow test first (stable otherwise): the workers take one
    # file at a time, so the longest begun first lets both finish together
    # instead of one running the fault matrix's six minutes on alone.
    slow = {item.location[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.location[0] not in slow)


def pytest_collection_finish(session):
    """K8S_TEST_NEEDS=FILE: write what the selected tests need, one word a
    line (asan_plugin, slurm-VERSION), for testsuite/run-tests."""
    out = os.environ.get("K8S_TEST_NEEDS")
    if not out:
        return
    needs = set()
    for item in session.items:
        for m in item.iter_markers("slurm_release"):
            needs |= {f"slurm-{v}" for v in m.args}
        if item.get_closest_marker("asan_plugin"):
            needs.add("asan_plugin")
    Path(out).write_text("".join(f"{n}\n" for n in sorted(needs)))


def pytest_sessionfinish(session, exitstatus):
    """A session (or xdist worker) with no failure removes the clusters' run
    directories; one with a failure keeps them all for the post-mortem."""
    if session.testsfailed == 0 and exitstatus in (0, 5):
        remove_run_dirs()
    elif os.environ.get("PYTEST_XDIST_WORKER") is None:
        print(f"\nrun directories kept under {os.environ.get('TMPDIR', '/tmp')} for the failures above")


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
