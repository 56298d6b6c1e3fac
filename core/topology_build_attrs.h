// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to the topology builder (topology_build*.cc): typed reading of
// device attributes in every form the drivers publish, from any SliceDevices.
#pragma once

#include "core/build_notes.h"
#include "core/dra_types.h"
#include "core/slice_devices.h"
#include "core/topology.h"
#include "core/topology_build.h"

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres::detail {

inline constexpr const char *kNumaAttr = "resource.kubernetes.io/numaNode";
inline constexpr const char *kPciBusAttr = "resource.kubernetes.io/pciBusID";
inline constexpr const char *kPcieRootAttr = "resource.kubernetes.io/pcieRoot";
// dra.cpu releases publish NUMA under these two only (the standard name is
// on main); dra.net/numaNode keeps a literal domain whatever the driver name.
inline constexpr const char *kNetNumaAttr = "dra.net/numaNode";

// Reads typed attributes of one device. A required attribute that is missing
// or unusable sets error (first one kept); an optional one that is unusable
// becomes a note and reads as absent. A one-element list reads as its value.
class AttrReader {
public:
    AttrReader(const SliceDevices &s, size_t device, std::string &error, Notes &notes)
        : s_(s), i_(device), name_(s.name(device)), error_(error), notes_(notes) {}

    std::optional<int64_t> int_attr(const std::string &name, bool required);
    std::optional<std::string> str_attr(const std::string &name, bool required);
    std::optional<bool> bool_attr(const std::string &name, bool required);
    // A string or a strings list: all values (empty when absent or unusable).
    std::vector<std::string> str_list(const std::string &name);
    // The first usable of `names` (preference order); a later one that
    // disagrees becomes a note.
    std::optional<int64_t> first_int(std::initializer_list<std::string> names);
    bool has(const std::string &name) const { return s_.has_attribute(i_, name); }

private:
    template <class T, class L>
    std::optional<T> get(const std::string &name, bool required, const char *type);
    void fail(const std::string &msg);

    const SliceDevices &s_;
    size_t i_;
    const std::string &name_;
    std::string &error_;
    Notes &notes_;
};

bool fits_int32(int64_t v);
// A plain non-negative integer Quantity ("64"); nullopt for anything else.
std::optional<int64_t> parse_count(const std::string &q);
// "taint KEY=EFFECT" for taints that keep new users away; "" for effect None.
std::string taint_reason(const DeviceTaint &t);

// The GPU side of a node: reads the physical GPUs of the GPU drivers'
// slices (MIG / partition devices become children of their GPU, taints make
// a GPU unavailable). False with err set when the node cannot be used.
bool read_gpus(const std::vector<const SliceDevices *> &slices, const BuildOptions &opts,
               std::vector<GpuInfo> &out, std::string &err, Notes &notes);
// After attach_gpus: NUMA node from the pcieRoot lists of the CPUs for GPUs
// without a usable NUMA attribute; notes the GPUs left unknown.
void resolve_gpu_affinity(NodeTopology &t, Notes &notes);

}  // namespace k8s_cons_tres::detail
