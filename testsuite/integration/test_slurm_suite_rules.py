# SPDX-License-Identifier: GPL-2.0-or-later
"""testsuite/slurm-suite's rule for timing ties (slurm_suite/placement.py):
which differing node choices it accepts. No cluster: placements as the
runner records them."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slurm_suite.placement import Job, timing_ties  # noqa: E402


def attempt(*nodes):
    """One attempt of a test: job #i started on nodes[i-1]."""
    jobs = [Job(i, name=f"job{i}", nodes=n, per_node={n: ([0], [])}) for i, n in enumerate(nodes, 1)]
    return {"jobs": jobs, "log": [(i, n) for i, n in enumerate(nodes, 1)]}


def test_a_tie_cons_tres_itself_broke_both_ways_is_accepted():
    # test39.10 on 24.11.5: cons_tres took node1 then node5, the plugin node5 then node1
    assert timing_ties(attempt("node2", "node1"), attempt("node2", "node5"),
                       attempt("node2", "node5"), attempt("node2", "node1")) == {2}


def test_a_node_cons_tres_never_chose_stays_a_difference():
    assert timing_ties(attempt("node1"), attempt("node5"), attempt("node3"), attempt("node1")) == set()


def test_a_choice_cons_tres_repeats_stays_a_difference():
    # cons_tres is consistent; the plugin differing twice is a real difference
    assert timing_ties(attempt("node1"), attempt("node1"), attempt("node5"), attempt("node5")) == set()


def test_jobs_of_other_names_are_never_matched():
    a2 = attempt("node5")
    a2["jobs"][0].name = "other"
    a2["log"] = []
    assert timing_ties(attempt("node1"), a2, attempt("node5"), attempt("node1")) == set()


def shaped(*nodes, req="cpu=2,gres/gpu=2"):
    """One attempt of a test that runs one shape back to back."""
    jobs = [Job(i, name="t", nodes=n, per_node={n: ([0], [])}, req=req) for i, n in enumerate(nodes, 1)]
    return {"jobs": jobs, "log": [(i, n) for i, n in enumerate(nodes, 1)]}


def test_one_shape_back_to_back_sent_elsewhere_by_either_select_is_a_tie():
    # test39.10 on 24.11.5 with three suites side by side: most jobs go to
    # node5; whichever finds node5 still completing goes to node1, under
    # cons_tres (#3) as under the plugin (#4)
    a = shaped("node5", "node5", "node1", "node5")
    b = shaped("node5", "node5", "node5", "node1")
    same = shaped("node5", "node5", "node5", "node5")
    assert timing_ties(a, same, b, same) == {3, 4}


def test_a_node_cons_tres_never_used_for_the_shape_stays_a_difference():
    a = shaped("node5", "node1", "node5")
    b = shaped("node5", "node3", "node5")
    assert timing_ties(a, a, b, b) == set()


def test_a_shape_the_plugin_sends_elsewhere_as_a_rule_stays_a_difference():
    # cons_tres once took node1 by timing; the plugin takes node1 for most jobs
    a = shaped("node5", "node5", "node1", "node5")
    b = shaped("node1", "node1", "node1", "node5")
    assert timing_ties(a, a, b, b) == set()


def test_jobs_of_another_name_do_not_explain_a_choice():
    # cons_tres sent only a job of another name to node1
    a = shaped("node5", "node1", "node5", "node5")
    b = shaped("node5", "node1", "node1", "node5")
    for r in (a, b):
        r["jobs"][1].name = "other"
    assert timing_ties(a, a, b, b) == set()
    b["jobs"][2].name = a["jobs"][2].name = "other"  # the same name: a tie
    assert timing_ties(a, a, b, b) == {3}


def test_a_loop_of_requests_back_to_back_is_one_name():
    # test39.7 on 26.05.3: its loop doubles --cpus-per-gpu; job #8 (4 CPUs)
    # went to node2 under cons_tres, job #12 (8 CPUs) under the plugin
    reqs = ["cpu=%d" % (2 ** (i // 3)) for i in range(15)]
    a1 = shaped(*(["node1"] * 7 + ["node2"] + ["node1"] * 7))
    b1 = shaped(*(["node1"] * 15))
    a2 = shaped(*(["node1"] * 15))
    b2 = shaped(*(["node1"] * 11 + ["node2"] + ["node1"] * 3))
    for r in (a1, b1, a2, b2):
        for j, req in zip(r["jobs"], reqs):
            j.req = req
    assert timing_ties(a1, a2, b1, b2) == {8, 12}
