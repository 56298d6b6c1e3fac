// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: the ResourceClaim decoder (k8s_sync/claim_json.h,
// parseClaimHolding, salvageClaimHolding). Contract checked: any input
// decodes or throws json::Error; what parses as JSON but does not decode is
// salvaged without throwing at all (the informer keeps its nodes out); no
// sanitizer report or hang.
#include "k8s_sync/claim_json.h"
#include "k8s_client/json.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace k8s_cons_tres;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string text(reinterpret_cast<const char *>(data), size);
    rapidjson::Document doc;
    try {
        json::parse(doc, text);
    } catch (const json::Error &) {
        return 0;
    }
    try {
        ClaimHolding h = k8s::decodeClaimHolding(doc);
        (void)h;
    } catch (const json::Error &e) {
        ClaimHolding s = k8s::salvageClaimHolding(doc, e.what());  // never throws
        (void)s;
    }
    return 0;
}
