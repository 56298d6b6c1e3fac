// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/user_names.h"

#include "k8s_sync/claim_json.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace k8s_cons_tres::k8s {

namespace {

using Clock = std::chrono::steady_clock;

// A renamed or newly added user shows within these; a job's labels are
// informational, so staleness costs nothing but accuracy.
constexpr auto kKnownFor = std::chrono::minutes(10);
constexpr auto kUnknownFor = std::chrono::minutes(1);
constexpr size_t kMaxEntries = 4096;

struct Entry {
    std::string name;
    Clock::time_point until;
};

std::mutex mu;
std::unordered_map<uint32_t, Entry> cache;

std::string lookup(uint32_t uid) {
    long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 1024);
    for (;;) {
        struct passwd pw, *found = nullptr;
        int rc = getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found);
        if (rc == ERANGE && buf.size() < (1u << 20)) {
            buf.resize(buf.size() * 2);
            continue;
        }
        return rc == 0 && found && found->pw_name ? found->pw_name : "";
    }
}

}  // namespace

std::string userName(uint32_t uid) {
    const auto now = Clock::now();
    {
        std::lock_guard lock(mu);
        if (auto it = cache.find(uid); it != cache.end() && it->second.until > now)
            return it->second.name;
    }
    std::string name = lookup(uid);
    std::lock_guard lock(mu);
    if (cache.size() >= kMaxEntries) cache.clear();
    cache[uid] = {name, now + (name.empty() ? kUnknownFor : kKnownFor)};
    return name;
}

std::map<std::string, std::string> withUserLabel(const std::map<std::string, std::string> &labels,
                                                 std::optional<uint32_t> uid) {
    if (!uid || labels.count(kLabelUser)) return labels;
    std::string name = userName(*uid);
    if (name.empty()) return labels;
    auto out = labels;
    out[kLabelUser] = labelValue(name);
    return out;
}

}  // namespace k8s_cons_tres::k8s
