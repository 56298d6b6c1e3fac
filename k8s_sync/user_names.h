// SPDX-License-Identifier: GPL-2.0-or-later
// The user label of a job's claims and holder pods. A name lookup goes
// through NSS (possibly LDAP or SSSD, which can block for seconds), so the
// plugin never makes one under slurmctld's locks: it passes the uid, and the
// writer's threads resolve it when they encode the object.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace k8s_cons_tres::k8s {

inline constexpr const char *kLabelUser = "k8s-cons-tres.slurm.io/user";

// uid's name, "" when it has none. Cached (bounded, entries expire) and safe
// from any thread; the lookup itself runs outside the cache's lock.
std::string userName(uint32_t uid);

// labels with the user label added from uid, unless they carry one already
// or uid has no name.
std::map<std::string, std::string> withUserLabel(const std::map<std::string, std::string> &labels,
                                                 std::optional<uint32_t> uid);

}  // namespace k8s_cons_tres::k8s
