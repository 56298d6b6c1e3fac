// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/interned.h"

#include <mutex>
#include <unordered_set>

namespace k8s_cons_tres {
namespace {

// Never shrinks: the values are bounded by the kinds of hardware seen.
const std::string *intern(const std::string &s) {
    static std::mutex mu;
    static std::unordered_set<std::string> pool;
    std::lock_guard<std::mutex> lock(mu);
    return &*pool.insert(s).first;
}

}  // namespace

IStr::IStr() : p_(intern(std::string())) {}
IStr::IStr(const std::string &s) : p_(intern(s)) {}

}  // namespace k8s_cons_tres
