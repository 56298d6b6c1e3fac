# SPDX-License-Identifier: GPL-2.0-or-later
"""testsuite/slurm-suite's cache of cons_tres's side (slurm_suite/cache.py):
the key changes with every input, an entry round-trips, and only a clean
run is stored. No cluster: fake release, source and suite trees."""
import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import cluster as cluster_mod  # noqa: E402
from harness import slurm_release  # noqa: E402
from slurm_suite import cache, runner  # noqa: E402
from slurm_suite.placement import Job  # noqa: E402

TESTS = ["test1.84", "test39.7"]


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A private release build, a source tree, a patch, the suite's files
    and a plugin, all small and fake; the cache under tmp_path."""
    monkeypatch.setenv("K8S_CONS_TRES_CACHE", str(tmp_path / "cache"))
    for k in [k for k in os.environ if k.startswith(cache.ENV_PREFIXES)]:
        monkeypatch.delenv(k)
    rel = slurm_release.get("24.11.5")
    files = {
        rel.dir / "stamp": "version 24.11.5\nsha256 abc\nconfigure ./configure --prefix=x\nseconds 180\n",
        rel.prefix / "sbin" / "slurmctld": "ctld",
        rel.prefix / "bin" / "srun": "srun",
        rel.prefix / "lib" / "slurm" / "select_cons_tres.so": "cons_tres",
        rel.prefix / "lib" / "libslurmfull.so": "full",
    }
    src = tmp_path / "src"
    files.update({src / "META": "Major: 24\n", src / "config.h": "#define X 1\n",
                  src / "slurm" / "slurm.h": "struct x;\n",
                  src / "testsuite" / "expect" / "globals": "proc check_config_select {} {}\n",
                  src / "testsuite" / "expect" / "test1.84": "#!/usr/bin/expect\n",
                  src / "testsuite" / "expect" / "test39.7.prog.c": "int main(void) { return 0; }\n"})
    top = tmp_path / "top"
    for rel_path in cache.SUITE_FILES:
        p = top / rel_path
        files[p / "code.py" if not Path(rel_path).suffix and not rel_path.endswith("slurm-suite") else p] = rel_path
    patch = top / "testsuite" / "slurm_suite" / "check_config_select-24.11.patch"
    files[patch] = "--- a/globals\n+++ b/globals\n"
    plugin = tmp_path / "build" / ".libs" / "select_k8s_cons_tres.so"
    files[plugin] = "plugin"
    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    # the tools are what they are on this machine: the same in every call
    inputs = lambda **kw: cache.key_inputs(**{"release": rel, "src": src, "patch": patch, "tests": TESTS,  # noqa: E731
                                              "timeout": 300, "plugin": plugin, "top": top, **kw})
    return {"release": rel, "src": src, "top": top, "patch": patch, "plugin": plugin, "files": files,
            "key": lambda **kw: cache.key_of(inputs(**kw)), "inputs": inputs}


def test_every_input_file_changes_the_key(world):
    base = world["key"]()
    assert world["key"]() == base  # deterministic
    for p in world["files"]:
        if p == world["plugin"]:
            continue  # not loaded under cons_tres by a private release: below
        text = p.read_text()
        p.write_text(text + "x")
        assert world["key"]() != base, f"{p} is not in the key"
        p.write_text(text)
        assert world["key"]() == base
        if p.name == "stamp":
            continue  # read as text
        mode = p.stat().st_mode
        p.chmod(mode | stat.S_IXUSR)
        assert world["key"]() != base, f"{p}'s executable bit is not in the key"
        p.chmod(mode)


def test_new_and_removed_files_change_the_key(world):
    base = world["key"]()
    extra = world["src"] / "testsuite" / "expect" / "inc" / "test1.84.prog.c"
    extra.parent.mkdir()
    extra.write_text("x")
    assert world["key"]() != base
    extra.unlink()
    extra.parent.rmdir()
    assert world["key"]() == base
    (world["top"] / "testsuite" / "harness" / "code.py").unlink()
    assert world["key"]() != base


def test_tests_timeout_release_and_environment_change_the_key(world, monkeypatch):
    base = world["key"]()
    assert world["key"](tests=TESTS[::-1]) != base  # order: the cluster's state carries over
    assert world["key"](tests=TESTS[:1]) != base
    assert world["key"](timeout=120) != base
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    assert world["key"]() != base
    monkeypatch.delenv("SLURM_TIME_FORMAT")
    monkeypatch.setenv("SLURM_CONF", "/elsewhere")  # set by each run
    assert world["key"]() == base


def test_the_build_time_in_the_stamp_is_not_in_the_key(world):
    base = world["key"]()
    stamp = world["release"].dir / "stamp"
    stamp.write_text(stamp.read_text().replace("seconds 180", "seconds 240"))
    assert world["key"]() == base


def test_compiled_python_is_not_in_the_key(world):
    base = world["key"]()
    pyc = world["top"] / "testsuite" / "slurm_suite" / "__pycache__" / "code.cpython-311.pyc"
    pyc.parent.mkdir()
    pyc.write_bytes(b"\0")
    assert world["key"]() == base


def test_the_plugin_is_in_the_key_only_where_cons_tres_loads_it(world):
    # a private release under cons_tres runs without the plugin
    base = world["key"]()
    world["plugin"].write_text("another plugin")
    assert world["key"]() == base
    # the installed 22.05 loads every select plugin of PluginDir, ours too
    try:
        cluster_mod._installed_plugin_dir()
    except cluster_mod.ClusterError:
        pytest.skip("no installed Slurm")
    installed = slurm_release.get(slurm_release.INSTALLED)
    assert cluster_mod.loads_plugin("cons_tres", installed)
    before = world["key"](release=installed)
    world["plugin"].write_text("a third plugin")
    assert world["key"](release=installed) != before


def test_the_suite_files_exist():
    # a rename must not leave the key hashing "missing"
    for rel in cache.SUITE_FILES:
        assert (cache.TOP / rel).exists(), rel
    assert (cache.TOP / "testsuite" / "slurm_suite" / "runner.py").is_file()


def result(name, outcome="PASS"):
    jobs = [Job(1, name="wrap", state="COMPLETED", nodes="node[1-2]",
                per_node={"node1": ([0, 1, 2], [0]), "node2": ([8, 9], [])}, req="ReqTRES=cpu=4",
                submitted=1764762953.0, ended=1764762955.5),
            Job(2, name="hostname", state="CANCELLED", per_node={}, submitted=1764762956.0, ended=None)]
    return runner.TestResult(name, outcome, 12.34, "msg", jobs, [(1, "node[1-2]")],
                             [(1764762953.791, "alloc", 1, "node[1-2]"), (1764762955.942, "done", 1, "")],
                             "[...] sched: Allocate JobId=508 NodeList=node[1-2]")


def test_a_cached_run_round_trips(world):
    results = {t: result(t) for t in TESTS}
    key = world["key"]()
    path = cache.store("24.11.5", key, world["inputs"](), TESTS, results, 321.0, "/tmp/ks-x")
    assert path == cache.entry_path("24.11.5", key) and path.parent == cache.root()
    assert cache.root().parent == Path(os.environ["K8S_CONS_TRES_CACHE"])
    assert [p.name for p in cache.root().iterdir()] == [path.name]  # no temporary file left
    run, why = cache.load("24.11.5", key, TESTS, fx="fx")
    assert why == "" and run.cached and run.fx == "fx" and run.elapsed == 321.0
    assert run.results == results  # tuples stay tuples, None stays None
    assert run.to_json() == runner.results_json(results)
    # another key, other tests: a miss
    assert cache.load("24.11.5", "0" * 24, TESTS, None)[0] is None
    assert cache.load("24.11.5", key, TESTS[:1], None)[0] is None
    assert cache.load("25.11.7", key, TESTS, None)[0] is None


def test_a_broken_entry_is_a_miss(world):
    key = world["key"]()
    path = cache.entry_path("24.11.5", key)
    path.parent.mkdir(parents=True)
    path.write_text('{"format": 1, "key": "')
    run, why = cache.load("24.11.5", key, TESTS, None)
    assert run is None and "unreadable" in why


def test_old_entries_are_pruned(world):
    results = {t: result(t) for t in TESTS}
    for i in range(cache.KEEP + 2):
        p = cache.store("24.11.5", f"{i:024d}", {}, TESTS, results, 1.0, "/tmp/ks-x")
        os.utime(p, (1000 + i, 1000 + i))
    cache.store("22.05.8", "a" * 24, {}, TESTS, results, 1.0, "/tmp/ks-x")
    left = sorted(p.name for p in cache.root().glob("cons_tres-24.11.5-*"))
    assert len(left) == cache.KEEP and f"cons_tres-24.11.5-{0:024d}.json" not in left
    assert cache.entry_path("22.05.8", "a" * 24).is_file()


def test_only_a_clean_run_is_stored():
    listed = {"test39.7"}.__contains__
    ok = {t: result(t) for t in TESTS}
    why = lambda res, clean=set(TESTS), warnings=(): cache.why_not_storable(  # noqa: E731
        res, TESTS, list(warnings), clean, lambda t, _: listed(t))
    assert why(ok) == ""
    assert "test1.84" in why(ok, clean={"test39.7"})  # differed from the plugin's
    assert "warned" in why(ok, warnings=["timed out waiting for every node idle"])
    assert "test1.84 FAIL" in why({**ok, "test1.84": result("test1.84", "FAIL")})  # not listed
    assert why({**ok, "test39.7": result("test39.7", "FAIL")}) == ""  # listed as failing under both
    assert "TIMEOUT" in why({**ok, "test39.7": result("test39.7", "TIMEOUT")})  # never
    assert "not every test" in why({"test1.84": ok["test1.84"]})
