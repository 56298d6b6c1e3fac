// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/build_notes.h"

namespace k8s_cons_tres::detail {

void Notes::add(const std::string &device, const std::string &what) {
    Seen &s = seen_[what];
    if (s.count++ == 0) {
        s.first = device;
        order_.push_back(what);
    }
}

std::vector<std::string> Notes::lines() const {
    std::vector<std::string> out;
    for (const std::string &what : order_) {
        const Seen &s = seen_.at(what);
        std::string who = "device " + s.first;
        if (s.count > 1)
            who += " (and " + std::to_string(s.count - 1) + " more)";
        out.push_back(who + ": " + what);
    }
    return out;
}

}  // namespace k8s_cons_tres::detail
