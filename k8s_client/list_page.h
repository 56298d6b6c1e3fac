// SPDX-License-Identifier: GPL-2.0-or-later
// What the informer reads of a LIST page before parsing it whole: its
// continue token, so that the next page can be asked for while this one is
// decoded (the API server writes metadata before items; the scan stops at
// items and never reads them).
#pragma once

#include <optional>
#include <string>

namespace k8s_cons_tres::k8s {

// metadata.continue of a list page ("" on the last page), or nullopt when it
// cannot be known without reading the items (metadata after them, bad JSON).
// The same value json::getString(metadata, "continue") gives on the page.
std::optional<std::string> peekContinue(const std::string &page);

}  // namespace k8s_cons_tres::k8s
