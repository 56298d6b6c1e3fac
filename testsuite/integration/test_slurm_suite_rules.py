# SPDX-License-Identifier: GPL-2.0-or-later
"""testsuite/slurm-suite's rule for timing ties (slurm_suite/placement.py):
which differing node choices it accepts. No cluster: placements as the
runner records them."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slurm_suite.placement import (Job, compare_test, completion_races, parse_show_job, timed_events,  # noqa: E402
                                   timing_ties)


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


def logged(lines, base=508):
    """One attempt from slurmctld log lines (job ids from `base`)."""
    text = "\n".join(lines)
    ev = timed_events(text, base)
    log = [(j, n) for _, k, j, n in ev if k == "alloc"]
    jobs = [Job(j, name="t", nodes=n, per_node={n: ([0], [])}) for j, n in log]
    return {"jobs": jobs, "log": log, "events": ev}


def srun_loop(second_node, gap_ms):
    """test39.10's loop on 25.11.7: job 508 ends on node5, 509 starts."""
    return logged([
        "[2026-12-03T12:15:53.791] sched: _slurm_rpc_allocate_resources JobId=508 NodeList=node5 usec=499",
        "[2026-12-03T12:15:53.942] _job_complete: JobId=508 WEXITSTATUS 0",
        "[2026-12-03T12:15:53.942] _job_complete: JobId=508 done",
        f"[2026-12-03T12:15:{53.942 + gap_ms / 1000:06.3f}] sched: _slurm_rpc_allocate_resources "
        f"JobId=509 NodeList={second_node} usec=343"])


class FxNode:
    threads_per_core, numa_nodes, cores_per_socket = 1, 1, 4

    def cores_of_numa(self, numa):
        return range(4)


class Fx:
    def node(self, name):
        return FxNode()


def test_a_job_sent_off_a_node_that_was_still_completing_is_a_race():
    # under one select node5 was still completing 23 ms after job 508 ended
    a, b = srun_loop("node5", 150), srun_loop("node1", 23)
    assert completion_races(a, b) == {2} and completion_races(b, a) == {2}
    c = compare_test(Fx(), a, b)
    assert c["node_diffs"] == [] and c["compared"] == 1
    assert any("#2" in n and "completion race" in n for n in c["notes"])
    # without the log's times the same placements are a difference
    for x in (a, b):
        del x["events"]
    assert compare_test(Fx(), a, b)["node_diff_jobs"] == [2, 2]


def test_the_same_choice_long_after_the_last_job_ended_stays_a_difference():
    a, b = srun_loop("node5", 150), srun_loop("node1", 900)
    assert completion_races(a, b) == set()


def test_a_node_no_job_had_just_left_stays_a_difference():
    # the plugin avoided node3, where nothing had ended
    a, b = srun_loop("node3", 150), srun_loop("node1", 23)
    assert completion_races(a, b) == set()


def cancelled(job_id, nodes, state="CANCELLED", pending_s=0):
    return Job(job_id, name="hostname", state=state, nodes=nodes,
               per_node={nodes: ([0, 1], [])} if nodes else {}, submitted=1000.0, ended=1000.0 + pending_s)


def test_a_job_the_test_cancelled_before_it_started_is_a_cancel_race():
    # test38.18 on 25.11.7: job #37 started under the plugin before the
    # test's scancel, under cons_tres it was still pending
    a = {"jobs": [cancelled(1, "node1"), cancelled(2, "")], "log": [(1, "node1")]}
    b = {"jobs": [cancelled(1, "node1"), cancelled(2, "node1")], "log": [(1, "node1"), (2, "node1")]}
    for x, y in ((a, b), (b, a)):
        c = compare_test(Fx(), x, y)
        assert c["node_diffs"] == [] and c["compared"] == 1
        assert any("#2" in n and "cancel race" in n for n in c["notes"])


def test_a_job_done_before_the_cancel_came_is_a_cancel_race():
    # test38.18 (24.11.5's tests) on 26.05.3: job #31, sbatch --wrap=hostname,
    # ran to its end under the plugin before the scancel, under cons_tres
    # the scancel found it pending
    a = {"jobs": [cancelled(1, "", pending_s=1)], "log": []}
    b = {"jobs": [cancelled(1, "node1", "COMPLETED")], "log": [(1, "node1")]}
    for x, y in ((a, b), (b, a)):
        c = compare_test(Fx(), x, y)
        assert c["node_diff_jobs"] == [] and any("cancel race" in n for n in c["notes"])


def test_a_job_cancelled_after_pending_a_while_stays_a_difference():
    # pending for a minute under one select: it waited for resources
    a = {"jobs": [cancelled(1, "", pending_s=60)], "log": []}
    b = {"jobs": [cancelled(1, "node1", "COMPLETED")], "log": [(1, "node1")]}
    assert compare_test(Fx(), a, b)["node_diff_jobs"] == [1]
    # no times known: no excuse either
    a["jobs"][0].submitted = None
    assert compare_test(Fx(), a, b)["node_diff_jobs"] == [1]


def test_show_job_gives_submit_and_end_times():
    text = ("JobId=7 JobName=wrap\n   JobState=CANCELLED Reason=None Dependency=(null)\n"
            "   SubmitTime=2026-12-04T10:00:00 EligibleTime=2026-12-04T10:00:00\n"
            "   StartTime=2026-12-04T10:00:02 EndTime=2026-12-04T10:00:02 Deadline=N/A\n")
    j = parse_show_job(text, lambda h: [h])[7]
    assert j.state == "CANCELLED" and j.ended - j.submitted == 2


def test_a_job_that_never_started_without_a_cancel_stays_a_difference():
    a = {"jobs": [cancelled(1, "node1", "COMPLETED")], "log": [(1, "node1")]}
    b = {"jobs": [cancelled(1, "", "PENDING")], "log": []}
    assert compare_test(Fx(), a, b)["node_diff_jobs"] == [1]
    # both cancelled, but on other nodes: a real difference
    a = {"jobs": [cancelled(1, "node1")], "log": []}
    b = {"jobs": [cancelled(1, "node2")], "log": []}
    assert compare_test(Fx(), a, b)["node_diff_jobs"] == [1]


def test_a_known_difference_excuses_the_result_on_its_release_only():
    from slurm_suite.known import accepted
    # test3.11's CoreCnt= limit is 22.05's: there a differing result is known
    ok, note = accepted("test3.11", "22.05.8", False, True, True)
    assert ok and note.startswith("KNOWN:")
    # on a release without that limit the same difference fails the suite
    assert accepted("test3.11", "26.05.3", False, True, True) == (False, "")
    # and never excuses a job placed elsewhere, nor worse CPU spans
    assert not accepted("test3.11", "22.05.8", False, False, True)[0]
    assert not accepted("test3.11", "22.05.8", True, False, True)[0]
    assert not accepted("test3.11", "22.05.8", False, True, False)[0]
    assert accepted("test1.1", "22.05.8", True, True, True) == (True, "")
