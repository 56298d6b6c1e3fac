// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/pool_select.h"

namespace k8s_cons_tres {

std::map<std::string, NodeSlices> select_pools(const std::vector<ResourceSlice> &slices) {
    std::vector<const ResourceSlice *> all;
    all.reserve(slices.size());
    for (const ResourceSlice &s : slices)
        all.push_back(&s);
    return select_pools_of(all);
}

}  // namespace k8s_cons_tres
