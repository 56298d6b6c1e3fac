// SPDX-License-Identifier: GPL-2.0-or-later
// The devices of one ResourceSlice as the topology builder reads them,
// whatever form holds them: a core/dra_types.h ResourceSlice (here), or the
// client's compact slices, read in place without building a map per device
// (k8s_sync/compact_devices.h). One builder reads both, so both give the
// same topology.
#pragma once

#include "core/dra_types.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres {

class SliceDevices {
public:
    virtual ~SliceDevices() = default;
    virtual const std::string &driver() const = 0;
    virtual size_t size() const = 0;
    virtual const std::string &name(size_t i) const = 0;
    // Device i's value of a fully qualified attribute, if it publishes one.
    virtual std::optional<AttrValue> attribute(size_t i, const std::string &qualified) const = 0;
    virtual bool has_attribute(size_t i, const std::string &qualified) const = 0;
    // The Quantity of a fully qualified capacity; nullptr when absent.
    virtual const std::string *capacity(size_t i, const std::string &qualified) const = 0;
    virtual std::map<std::string, std::string> capacities(size_t i) const = 0;
    virtual bool allow_multiple_allocations(size_t i) const = 0;
    virtual const std::vector<DeviceTaint> &taints(size_t i) const = 0;
    virtual const std::vector<CounterConsumption> &consumes_counters(size_t i) const = 0;
};

// A plain ResourceSlice, which must outlive this view.
class PlainSliceDevices final : public SliceDevices {
public:
    explicit PlainSliceDevices(const ResourceSlice &s) : s_(s) {}
    const std::string &driver() const override { return s_.driver; }
    size_t size() const override { return s_.devices.size(); }
    const std::string &name(size_t i) const override { return s_.devices[i].name; }
    std::optional<AttrValue> attribute(size_t i, const std::string &qualified) const override;
    bool has_attribute(size_t i, const std::string &qualified) const override {
        return s_.devices[i].attributes.count(qualified) != 0;
    }
    const std::string *capacity(size_t i, const std::string &qualified) const override;
    std::map<std::string, std::string> capacities(size_t i) const override {
        return s_.devices[i].capacity;
    }
    bool allow_multiple_allocations(size_t i) const override {
        return s_.devices[i].allowMultipleAllocations;
    }
    const std::vector<DeviceTaint> &taints(size_t i) const override { return s_.devices[i].taints; }
    const std::vector<CounterConsumption> &consumes_counters(size_t i) const override {
        return s_.devices[i].consumesCounters;
    }

private:
    const ResourceSlice &s_;
};

}  // namespace k8s_cons_tres
