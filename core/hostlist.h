// SPDX-License-Identifier: GPL-2.0-or-later
// Names as one Slurm hostlist expression ("n[01-04,07],login"), so that
// generated topology lines stay short for thousands of nodes.
#pragma once

#include <string>
#include <vector>

namespace k8s_cons_tres {

// The names (any order, duplicates dropped) as a hostlist Slurm expands back
// to exactly them. Only names whose trailing digits have the same width are
// put into one range, so "n9" and "n10" stay apart: Slurm pads every number
// of a range to the width of its first one.
std::string hostlist_of(std::vector<std::string> names);

}  // namespace k8s_cons_tres
