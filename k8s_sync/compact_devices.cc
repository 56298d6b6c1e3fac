// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/compact_devices.h"

namespace k8s_cons_tres::k8s {

bool CompactDevices::has_attribute(size_t i, const std::string &qualified) const {
    const CompactDevice &d = s_.devices[i];
    const StringPool &pool = StringPool::instance();
    for (uint32_t k = d.attrBegin; k < d.attrBegin + d.attrCount; ++k)
        if (pool.get(s_.attrs[k].key) == qualified)
            return true;
    return false;
}

const std::string *CompactDevices::capacity(size_t i, const std::string &qualified) const {
    const CompactDevice &d = s_.devices[i];
    const StringPool &pool = StringPool::instance();
    for (uint32_t k = d.capBegin; k < d.capBegin + d.capCount; ++k)
        if (pool.get(s_.caps[k].key) == qualified)
            return &pool.get(s_.caps[k].value);  // the pool never moves its strings
    return nullptr;
}

std::map<std::string, std::string> CompactDevices::capacities(size_t i) const {
    const CompactDevice &d = s_.devices[i];
    const StringPool &pool = StringPool::instance();
    std::map<std::string, std::string> out;
    for (uint32_t k = d.capBegin; k < d.capBegin + d.capCount; ++k)
        out.emplace(pool.get(s_.caps[k].key), pool.get(s_.caps[k].value));
    return out;
}

// Taints and counters are rare: a scan of the few extras beats an index.
const CompactExtra *CompactDevices::extra(size_t i) const {
    for (const CompactExtra &e : s_.extras)
        if (e.device == i)
            return &e;
    return nullptr;
}

const std::vector<DeviceTaint> &CompactDevices::taints(size_t i) const {
    static const std::vector<DeviceTaint> none;
    const CompactExtra *e = extra(i);
    return e ? e->taints : none;
}

const std::vector<CounterConsumption> &CompactDevices::consumes_counters(size_t i) const {
    static const std::vector<CounterConsumption> none;
    const CompactExtra *e = extra(i);
    return e ? e->consumesCounters : none;
}

}  // namespace k8s_cons_tres::k8s
