// SPDX-License-Identifier: GPL-2.0-or-later
// The plugin's view of every Kubernetes node as JSON, for admins: free,
// Kubernetes-held and Slurm-held devices per node. The feed writes it to
// <StateSaveLocation>/k8s_cons_tres_view.json after every new inventory.
#pragma once

#include "core/inventory.h"

#include <string>

namespace k8s_cons_tres::k8s {

std::string inventory_view_json(const Inventory &inventory, uint64_t version);

// Writes text to path through a temporary file and a rename; false on error.
bool write_file_atomically(const std::string &path, const std::string &text, std::string *error);

}  // namespace k8s_cons_tres::k8s
