// SPDX-License-Identifier: GPL-2.0-or-later
// The form in which snapshots hold ResourceSlices: flat arrays and interned
// strings, about 200 bytes per dra.cpu device instead of about 1.4 KB as
// core/dra_types.h maps. 15,000 nodes x 136 devices fit in well under 1 GiB,
// and a watch event is decoded without building one map node per attribute.
// expand() gives the plain ResourceSlice for core/ when it needs one.
#pragma once

#include "core/dra_types.h"
#include "k8s_client/json.h"
#include "k8s_client/string_pool.h"

#include <optional>

namespace k8s_cons_tres::k8s {

struct CompactAttr {
    enum Kind : uint8_t { Int, Bool, String, Version, List };
    uint32_t key;    // interned qualified name
    Kind kind;
    int64_t value;   // Int/Bool value, interned id of String/Version, index into lists
};

// Taints and counter consumption are rare (unhealthy GPUs, partitions), so
// they live beside the devices instead of costing every device two vectors.
struct CompactExtra {
    uint32_t device = 0;  // index into devices
    std::vector<DeviceTaint> taints;
    std::vector<CounterConsumption> consumesCounters;
};

struct CompactCapacity {
    uint32_t key;    // interned qualified name
    uint32_t value;  // interned Quantity string
};

struct CompactDevice {
    std::string name;
    uint32_t attrBegin = 0, capBegin = 0;
    uint16_t attrCount = 0, capCount = 0;
    bool allowMultipleAllocations = false;
};

struct CompactSlice {
    std::string name, resourceVersion, driver, nodeName;
    Pool pool;
    std::vector<CompactDevice> devices;
    std::vector<CompactAttr> attrs;
    std::vector<CompactCapacity> caps;
    std::vector<AttrValue> lists;  // list-form attribute values (alpha, rare)
    std::vector<CompactExtra> extras;
    std::vector<CounterSet> sharedCounters;

    ResourceSlice expand() const;
    Device expandDevice(size_t i) const;
    // The value of a qualified attribute of device i, if present.
    std::optional<AttrValue> attribute(size_t i, const std::string &qualifiedName) const;
    // The same driver and devices (names, attributes, capacities, taints,
    // counters; shared counters and metadata aside): all the topology
    // builder reads of a slice. devicesHash() agrees with it.
    bool sameDevices(const CompactSlice &o) const;
    uint64_t devicesHash() const;
};

// Decodes a ResourceSlice object straight into the compact form.
CompactSlice decodeCompactSlice(const rapidjson::Value &obj);
CompactSlice compactSlice(const ResourceSlice &s);

}  // namespace k8s_cons_tres::k8s
