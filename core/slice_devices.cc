// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/slice_devices.h"

namespace k8s_cons_tres {

std::optional<AttrValue> PlainSliceDevices::attribute(size_t i, const std::string &qualified) const {
    const auto &attrs = s_.devices[i].attributes;
    auto it = attrs.find(qualified);
    if (it == attrs.end())
        return std::nullopt;
    return it->second;
}

const std::string *PlainSliceDevices::capacity(size_t i, const std::string &qualified) const {
    const auto &caps = s_.devices[i].capacity;
    auto it = caps.find(qualified);
    return it == caps.end() ? nullptr : &it->second;
}

}  // namespace k8s_cons_tres
