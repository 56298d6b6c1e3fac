// SPDX-License-Identifier: GPL-2.0-or-later
// A Kubernetes Event (core/v1) about a pod's ResourceClaim, so that its
// owner sees it in `kubectl describe` and `kubectl get events`: today the
// launch gate's overlap, a pod claim that got a device of a starting job.
#pragma once

#include <string>

namespace k8s_cons_tres::k8s {

struct ClaimEvent {
    std::string ns, claim;   // the ResourceClaim it is about
    std::string reason;      // UpperCamelCase, as Kubernetes' own
    std::string message;
    std::string type = "Warning";
};

inline constexpr const char *kReasonGateOverlap = "DeviceOfStartingSlurmJob";

// Unique per call: the claim's name and a suffix from the time, as
// client-go's recorder names them.
std::string eventName(const ClaimEvent &e);
// POST body of the Event named name, reported by this slurmctld (host).
std::string encodeClaimEvent(const ClaimEvent &e, const std::string &name, const std::string &host);

}  // namespace k8s_cons_tres::k8s
