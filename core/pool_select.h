// SPDX-License-Identifier: GPL-2.0-or-later
// Picks the ResourceSlices that count: per (driver, pool) only the highest
// generation, and only once all resourceSliceCount slices of it are present.
#pragma once

#include "core/dra_types.h"

#include <map>
#include <string>
#include <vector>

namespace k8sdra {

struct NodeSlices {
    std::vector<const ResourceSlice *> complete;  // slices of complete pools
    std::vector<std::string> incomplete;          // one line per incomplete pool
};

// Node-local slices only (spec.nodeName set), grouped by node name. The
// returned pointers point into `slices`.
std::map<std::string, NodeSlices> select_pools(const std::vector<ResourceSlice> &slices);

}  // namespace k8sdra
