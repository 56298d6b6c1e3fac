// Plain C++ value types for what DRA publishes: the shared vocabulary between
// k8s_client/ (JSON <-> these types) and core/ (model, ledger, placement).
// No JSON, no HTTP, no Slurm here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace k8s_cons_tres {

// One DRA attribute value: exactly one of int / bool / string / version,
// or (Kubernetes 1.36, DRAListTypeAttributes) a list of one of those.
struct AttrVersion {
    std::string value;  // semver text, e.g. "8.0.0"
    bool operator==(const AttrVersion &) const = default;
};
using AttrInts = std::vector<int64_t>;
using AttrBools = std::vector<bool>;
using AttrStrings = std::vector<std::string>;
using AttrVersions = std::vector<AttrVersion>;
using AttrValue = std::variant<int64_t, bool, std::string, AttrVersion, AttrInts, AttrBools,
                               AttrStrings, AttrVersions>;

// spec.devices[].taints[]: a device with effect NoSchedule or NoExecute must
// not get new users; effect None is informational.
struct DeviceTaint {
    std::string key;
    std::string value;
    std::string effect;
    bool operator==(const DeviceTaint &) const = default;
};

// spec.devices[].consumesCounters[]: what a partition (MIG, example-driver
// partition) takes from a counter set of its physical device.
struct CounterConsumption {
    std::string counterSet;
    std::map<std::string, std::string> counters;  // counter name -> Quantity
    bool operator==(const CounterConsumption &) const = default;
};

// spec.sharedCounters[]: one counter set (usually one physical GPU).
struct CounterSet {
    std::string name;
    std::map<std::string, std::string> counters;  // counter name -> Quantity
    bool operator==(const CounterSet &) const = default;
};

struct Device {
    std::string name;
    // Fully qualified attribute name -> value. Bare names as published by the
    // driver are stored qualified with the driver domain ("dra.cpu/cpuID").
    std::map<std::string, AttrValue> attributes;
    // Fully qualified capacity name -> Quantity string ("40Gi", "64").
    std::map<std::string, std::string> capacity;
    bool allowMultipleAllocations = false;
    std::vector<DeviceTaint> taints;
    std::vector<CounterConsumption> consumesCounters;
    bool operator==(const Device &) const = default;
};

struct Pool {
    std::string name;
    int64_t generation = 0;
    int64_t resourceSliceCount = 1;
    bool operator==(const Pool &) const = default;
};

struct ResourceSlice {
    std::string name;              // metadata.name
    std::string resourceVersion;   // metadata.resourceVersion
    std::string driver;            // spec.driver
    std::string nodeName;          // spec.nodeName ("" when not node-local)
    Pool pool;
    std::vector<Device> devices;
    std::vector<CounterSet> sharedCounters;
    bool operator==(const ResourceSlice &) const = default;
};

// One entry of status.allocation.devices.results.
struct AllocationResult {
    std::string request;
    std::string driver;
    std::string pool;
    std::string device;
    std::string shareID;                              // "" when absent
    std::map<std::string, std::string> consumedCapacity;
    // kube-scheduler does not count an adminAccess result as allocating its
    // device (monitoring claims): it holds nothing, for pods or Slurm.
    bool adminAccess = false;
    bool operator==(const AllocationResult &) const = default;
};

// The part of a ResourceClaim the inventory needs: who holds which devices.
struct ClaimHolding {
    std::string ns;
    std::string name;
    std::string uid;
    std::string resourceVersion;
    std::map<std::string, std::string> labels;
    bool allocated = false;                       // status.allocation present
    std::vector<AllocationResult> results;
    std::string nodeName;                         // from allocation.nodeSelector, "" if none
    std::string opaqueCpuset;                     // dra.cpu opaque cpuset config, "" if none
    std::vector<std::string> reservedForPods;     // status.reservedFor: uids of the pods
    std::vector<std::string> reservedForPodNames; // and their names, in the same order
    // Set by k8s_client, never decoded: the Slurm job whose slurm-bridge pod
    // this claim is reserved for (k8s_client's bridgeClaimJob), 0 for any other.
    uint32_t bridgedJob = 0;
    // Why the claim could not be decoded, "" when it was. Such a claim keeps
    // every node it may name (nodeName, results' pools, as far as they could
    // be read) out of Slurm's reach until a decodable version replaces it.
    std::string undecodable;
    bool operator==(const ClaimHolding &) const = default;
};

}  // namespace k8s_cons_tres
