// SPDX-License-Identifier: GPL-2.0-or-later
// What the topology builder could not use of a node's devices, for a debug
// log. The same note on many devices becomes one line ("device cpudev000
// (and 127 more): ..."), so a node stays small.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace k8s_cons_tres::detail {

class Notes {
public:
    void add(const std::string &device, const std::string &what);
    std::vector<std::string> lines() const;

private:
    struct Seen {
        std::string first;
        size_t count = 0;
    };
    std::map<std::string, Seen> seen_;
    std::vector<std::string> order_;
};

}  // namespace k8s_cons_tres::detail
