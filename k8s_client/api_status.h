// SPDX-License-Identifier: GPL-2.0-or-later
// The Kubernetes Status object returned with every API error.
#pragma once

#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

struct StatusCause {
    std::string reason, message, field;
};

struct ApiStatus {
    long code = 0;
    std::string reason;   // "NotFound", "AlreadyExists", "Conflict", "Invalid", "Expired"...
    std::string message;
    std::vector<StatusCause> causes;
    // "reason: message [field: cause; ...]"
    std::string summary() const;
};

// Parses a Status body; tolerates non-JSON bodies (message = raw text).
ApiStatus parseApiStatus(long httpStatus, const std::string &body);

}  // namespace k8s_cons_tres::k8s
