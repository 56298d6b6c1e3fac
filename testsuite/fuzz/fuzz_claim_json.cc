// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: the ResourceClaim decoder (k8s_client/claim_json.h,
// parseClaimHolding). Contract checked: any input decodes or throws
// json::Error (the informer skips that claim); nothing else escapes, and no
// sanitizer report or hang.
#include "k8s_client/claim_json.h"
#include "k8s_client/json.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace k8sdra;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string text(reinterpret_cast<const char *>(data), size);
    try {
        ClaimHolding h = k8s::parseClaimHolding(text);
        (void)h;
    } catch (const json::Error &) {
    }
    return 0;
}
