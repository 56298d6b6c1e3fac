# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers of testsuite/slurm-suite: SchedMD's expect tests under
select/cons_tres and under select/k8s_cons_tres on the same harness cluster."""
