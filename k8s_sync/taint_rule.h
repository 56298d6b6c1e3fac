// SPDX-License-Identifier: GPL-2.0-or-later
// DeviceTaintRules (resource.k8s.io v1beta2, v1alpha3 before 1.36): an
// admin's taint on the devices a selector names, with the same effect as if
// the driver had put it into the ResourceSlice. kube-scheduler adds them to
// the slices it allocates from; the inventory does the same, so a device an
// admin took out of service (NoSchedule, NoExecute) gets no new Slurm job,
// and one tainted with effect None stays usable.
#pragma once

#include "core/dra_types.h"
#include "k8s_client/cow_map.h"
#include "k8s_client/json.h"
#include "k8s_sync/compact_slice.h"

#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

struct TaintRule {
    std::string ns;    // always "": cluster-scoped (ObjectHandler's key is "/name")
    std::string name;
    // No deviceSelector: the rule matches no device. An empty one: every
    // device. Otherwise each field set must equal the device's.
    bool hasSelector = false;
    std::optional<std::string> driver, pool, device;
    DeviceTaint taint;
    bool operator==(const TaintRule &) const = default;

    bool matches(const CompactSlice &slice, size_t device) const;
};

using TaintRuleMap = CowMap<TaintRule>;  // key: "/name"

// Where the API server may serve them, preferred first.
inline constexpr const char *kTaintRulePaths[] = {
    "/apis/resource.k8s.io/v1beta2/devicetaintrules",   // Kubernetes 1.36
    "/apis/resource.k8s.io/v1alpha3/devicetaintrules",  // 1.33-1.35
};

TaintRule decodeTaintRule(const rapidjson::Value &obj);
// A rule that cannot be decoded: it matches every device with effect
// NoSchedule, for what it names cannot be known (fail closed).
TaintRule salvageTaintRule(const rapidjson::Value &obj, const std::string &why);

// The slice with the rules' taints added to the devices they match, as
// kube-scheduler sees it; nullopt when no rule matches any of its devices.
std::optional<CompactSlice> withRuleTaints(const CompactSlice &slice, const TaintRuleMap &rules);

}  // namespace k8s_cons_tres::k8s
