# SPDX-License-Identifier: GPL-2.0-or-later
"""Known differences between select/cons_tres and the plugin in SchedMD's
suite: a test whose result differs because of a limit of one Slurm release
that the plugin cannot lift. Each is listed for the release where it occurs
and excuses the result only; a job placed elsewhere is never excused."""

KNOWN_DIFFERENCES = {
    "22.05.8": {
        "test3.11":
            "Slurm 22.05's scontrol refuses CoreCnt= unless the select plugin id is "
            "cons_res's or cons_tres's, and 22.05 loads every select plugin of PluginDir "
            "and refuses two with id 109; slurmctld's side (reserved cores never go to "
            "other jobs) is tested in testsuite/integration/test_parity.py",
    },
}


def known_difference(test, version):
    """Why `test`'s result may differ on `version`, or None."""
    return KNOWN_DIFFERENCES.get(version, {}).get(test)


def accepted(test, version, same_result, same_nodes, cpus_ok):
    """(agrees, note): a differing result is accepted only where it is a
    known difference of this release; nodes and CPU spans always count."""
    known = known_difference(test, version) if not same_result else None
    ok = (same_result or known is not None) and same_nodes and cpus_ok
    return ok, ("KNOWN: " + known if known else "")
