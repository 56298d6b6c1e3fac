// SPDX-License-Identifier: GPL-2.0-or-later
// ResourceSlice (resource.k8s.io/v1) JSON <-> core/dra_types.h, both ways;
// decoding goes through the one decoder, compact_slice.h's.
// Bare attribute and capacity names are qualified with the driver's domain
// when decoding ("cpuID" from driver "dra.cpu" becomes "dra.cpu/cpuID").
#pragma once

#include "core/dra_types.h"
#include "k8s_client/json.h"

#include <map>
#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

// Throws json::Error when the object is not a usable ResourceSlice.
ResourceSlice decodeResourceSlice(const rapidjson::Value &obj);

// Pieces shared with the compact decoder. An attribute value of any v1 form
// (lists included); throws for an unknown form or a mistyped value.
AttrValue decodeAttrValue(const rapidjson::Value &v, const std::string &name);
// {"name": {"value": Q}, ...} -> name -> Q (counters of a set or consumption).
std::map<std::string, std::string> decodeCounters(const rapidjson::Value *counters);
std::vector<DeviceTaint> decodeTaints(const rapidjson::Value &device);
std::vector<CounterConsumption> decodeConsumption(const rapidjson::Value &device);
std::vector<CounterSet> decodeSharedCounters(const rapidjson::Value &spec);

// The fields every form of a slice decodes alike (name, resourceVersion,
// driver, nodeName, pool); returns spec for the devices.
template <class Slice>
const rapidjson::Value &decodeSliceHeader(const rapidjson::Value &obj, Slice &s) {
    if (!obj.IsObject())
        throw json::Error("ResourceSlice is not an object");
    const rapidjson::Value &meta = json::requireObject(obj, "metadata", "ResourceSlice");
    s.name = json::getString(meta, "name");
    s.resourceVersion = json::getString(meta, "resourceVersion");
    const rapidjson::Value &spec = json::requireObject(obj, "spec", "ResourceSlice");
    s.driver = json::getString(spec, "driver");
    if (s.driver.empty())
        throw json::Error("ResourceSlice " + s.name + ": spec.driver missing");
    s.nodeName = json::getString(spec, "nodeName");
    const rapidjson::Value &pool = json::requireObject(spec, "pool", "ResourceSlice spec");
    s.pool.name = json::getString(pool, "name");
    s.pool.generation = json::getInt(pool, "generation");
    s.pool.resourceSliceCount = json::getInt(pool, "resourceSliceCount", 1);
    return spec;
}
ResourceSlice parseResourceSlice(const std::string &text);

// Writes one complete ResourceSlice object (apiVersion, kind, metadata, spec).
void writeResourceSlice(json::Writer &w, const ResourceSlice &slice);
std::string encodeResourceSlice(const ResourceSlice &slice);

// "cpuID" + "dra.cpu" -> "dra.cpu/cpuID"; names with a '/' are kept.
std::string qualifyName(const std::string &name, const std::string &driver);

}  // namespace k8s_cons_tres::k8s
