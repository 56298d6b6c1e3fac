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
