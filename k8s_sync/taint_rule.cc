// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/taint_rule.h"

#include <algorithm>

namespace k8s_cons_tres::k8s {

namespace {
std::optional<std::string> optionalString(const rapidjson::Value &o, const char *key) {
    const rapidjson::Value *v = json::member(o, key);
    if (!v || v->IsNull())
        return std::nullopt;
    if (!v->IsString())
        throw json::Error(std::string("deviceSelector.") + key + " is not a string");
    return std::string(v->GetString(), v->GetStringLength());
}
}  // namespace

bool TaintRule::matches(const CompactSlice &s, size_t i) const {
    return hasSelector && (!driver || *driver == s.driver) && (!pool || *pool == s.pool.name) &&
           (!device || *device == s.devices[i].name);
}

TaintRule decodeTaintRule(const rapidjson::Value &obj) {
    TaintRule r;
    const rapidjson::Value &meta = json::requireObject(obj, "metadata", "DeviceTaintRule");
    r.name = json::getString(meta, "name");
    const rapidjson::Value &spec = json::requireObject(obj, "spec", "DeviceTaintRule");
    if (const rapidjson::Value *sel = json::member(spec, "deviceSelector"); sel && !sel->IsNull()) {
        if (!sel->IsObject())
            throw json::Error("deviceSelector is not an object");
        r.hasSelector = true;
        r.driver = optionalString(*sel, "driver");
        r.pool = optionalString(*sel, "pool");
        r.device = optionalString(*sel, "device");
    }
    const rapidjson::Value &taint = json::requireObject(spec, "taint", "DeviceTaintRule spec");
    r.taint = {json::getString(taint, "key"), json::getString(taint, "value"), json::getString(taint, "effect")};
    if (r.taint.key.empty() || r.taint.effect.empty())
        throw json::Error("taint without key or effect");
    return r;
}

TaintRule salvageTaintRule(const rapidjson::Value &obj, const std::string &why) {
    TaintRule r;
    if (const rapidjson::Value *meta = json::member(obj, "metadata"); meta && meta->IsObject())
        r.name = json::getString(*meta, "name");
    r.hasSelector = true;  // empty: every device
    r.taint = {"k8s-cons-tres.slurm.io/undecodable-device-taint-rule", why.substr(0, 63), "NoSchedule"};
    return r;
}

std::optional<CompactSlice> withRuleTaints(const CompactSlice &slice, const TaintRuleMap &rules) {
    if (rules.size() == 0)
        return std::nullopt;
    std::optional<CompactSlice> out;
    rules.forEach([&](const std::string &, const TaintRule &r) {
        for (size_t i = 0; i < slice.devices.size(); ++i) {
            if (!r.matches(slice, i))
                continue;
            if (!out)
                out = slice;
            auto e = std::find_if(out->extras.begin(), out->extras.end(),
                                  [&](const CompactExtra &x) { return x.device == i; });
            if (e == out->extras.end()) {
                out->extras.push_back(CompactExtra{static_cast<uint32_t>(i), {}, {}});
                e = std::prev(out->extras.end());
            }
            if (std::find(e->taints.begin(), e->taints.end(), r.taint) == e->taints.end())
                e->taints.push_back(r.taint);
        }
    });
    return out;
}

}  // namespace k8s_cons_tres::k8s
