// SPDX-License-Identifier: GPL-2.0-or-later
// C++ side of the inventory handle of the C ABI: lets C++ code (the
// background thread) publish an Inventory through k8s_cons_tres.h.
#pragma once

#include "core/inventory.h"
#include "testsuite/support/k8s_cons_tres_test.h"
#include "testsuite/support/rank_index.h"

#include <mutex>

struct k8s_cons_tres_inventory {
    std::mutex mu;  // serializes C ABI calls on this inventory
    k8s_cons_tres::Inventory inv;
    k8s_cons_tres::RankIndex ranks;  // k8s_cons_tres_rank's answers, kept by node stamps
};

namespace k8s_cons_tres {

// Caller owns the result (free with k8s_cons_tres_inventory_free).
k8s_cons_tres_inventory *wrap_inventory(Inventory inv);

}  // namespace k8s_cons_tres
