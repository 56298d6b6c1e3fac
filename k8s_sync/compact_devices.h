// SPDX-License-Identifier: GPL-2.0-or-later
// A compact slice's devices as core/'s topology builder reads them: values
// are looked up in place in the flat arrays (interned keys and strings),
// no Device maps are built.
#pragma once

#include "core/slice_devices.h"
#include "k8s_sync/compact_slice.h"

namespace k8s_cons_tres::k8s {

// The slice must outlive this view.
class CompactDevices final : public SliceDevices {
public:
    explicit CompactDevices(const CompactSlice &s) : s_(s) {}
    const std::string &driver() const override { return s_.driver; }
    size_t size() const override { return s_.devices.size(); }
    const std::string &name(size_t i) const override { return s_.devices[i].name; }
    std::optional<AttrValue> attribute(size_t i, const std::string &qualified) const override {
        return s_.attribute(i, qualified);
    }
    bool has_attribute(size_t i, const std::string &qualified) const override;
    const std::string *capacity(size_t i, const std::string &qualified) const override;
    std::map<std::string, std::string> capacities(size_t i) const override;
    bool allow_multiple_allocations(size_t i) const override {
        return s_.devices[i].allowMultipleAllocations;
    }
    const std::vector<DeviceTaint> &taints(size_t i) const override;
    const std::vector<CounterConsumption> &consumes_counters(size_t i) const override;

private:
    const CompactExtra *extra(size_t i) const;
    const CompactSlice &s_;
};

}  // namespace k8s_cons_tres::k8s
