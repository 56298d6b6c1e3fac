// SPDX-License-Identifier: GPL-2.0-or-later
// C++ side of the inventory handle of the C ABI: lets C++ code (the
// background thread) publish an Inventory through k8sdra.h.
#pragma once

#include "core/inventory.h"
#include "testsuite/support/k8sdra_test.h"
#include "testsuite/support/rank_index.h"

#include <mutex>

struct k8sdra_inventory {
    std::mutex mu;  // serializes C ABI calls on this inventory
    k8sdra::Inventory inv;
    k8sdra::RankIndex ranks;  // k8sdra_rank's answers, kept by node stamps
};

namespace k8sdra {

// Caller owns the result (free with k8sdra_inventory_free).
k8sdra_inventory *wrap_inventory(Inventory inv);

}  // namespace k8sdra
