// SPDX-License-Identifier: GPL-2.0-or-later
// ResourceSlice (resource.k8s.io/v1) JSON <-> core/dra_types.h, both ways.
// Bare attribute and capacity names are qualified with the driver's domain
// when decoding ("cpuID" from driver "dra.cpu" becomes "dra.cpu/cpuID").
#pragma once

#include "core/dra_types.h"
#include "k8s_client/json.h"

#include <string>

namespace k8sdra::k8s {

// Throws json::Error when the object is not a usable ResourceSlice.
ResourceSlice decodeResourceSlice(const rapidjson::Value &obj);
ResourceSlice parseResourceSlice(const std::string &text);

// Writes one complete ResourceSlice object (apiVersion, kind, metadata, spec).
void writeResourceSlice(json::Writer &w, const ResourceSlice &slice);
std::string encodeResourceSlice(const ResourceSlice &slice);

// "cpuID" + "dra.cpu" -> "dra.cpu/cpuID"; names with a '/' are kept.
std::string qualifyName(const std::string &name, const std::string &driver);

}  // namespace k8sdra::k8s
