// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: the ResourceSlice decoders (k8s_sync/slice_json.h and
// the compact form the informer uses, k8s_sync/compact_slice.h).
// Contract checked: any input either decodes or throws json::Error (the
// informer skips that one slice); anything else (another exception, a
// sanitizer report, a hang) is a bug. A slice that decodes re-encodes and
// decodes again.
#include "k8s_sync/compact_slice.h"
#include "k8s_client/json.h"
#include "k8s_sync/slice_json.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace k8s_cons_tres;

namespace {

void decodeOne(const rapidjson::Value &obj) {
    try {
        ResourceSlice s = k8s::decodeResourceSlice(obj);
        std::string again = k8s::encodeResourceSlice(s);
        (void)k8s::parseResourceSlice(again);  // what we write must read back
    } catch (const json::Error &) {
    }
    try {
        (void)k8s::decodeCompactSlice(obj);
    } catch (const json::Error &) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string text(reinterpret_cast<const char *>(data), size);
    rapidjson::Document doc;
    try {
        json::parse(doc, text);
    } catch (const json::Error &) {
        return 0;
    }
    // A ResourceSliceList (as listed) or one ResourceSlice (as watched).
    const rapidjson::Value *items = doc.IsObject() ? json::member(doc, "items") : nullptr;
    if (items && items->IsArray()) {
        for (const auto &item : items->GetArray())
            decodeOne(item);
    } else {
        decodeOne(doc);
    }
    // The in-situ parser the watch stream uses must agree with the copying one.
    std::string buffer = text;
    rapidjson::Document insitu;
    try {
        json::parseInsitu(insitu, buffer);
    } catch (const json::Error &) {
        __builtin_trap();  // parse accepted it, parseInsitu must too
    }
    return 0;
}
