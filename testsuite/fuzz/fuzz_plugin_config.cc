// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: the k8s_cons_tres.conf parser (core/plugin_config.h).
// Contract checked: parse_plugin_config never throws; it returns either a
// configuration or an error naming the file; no sanitizer report or hang.
#include "core/plugin_config.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string text(reinterpret_cast<const char *>(data), size);
    k8s_cons_tres::ConfigResult r = k8s_cons_tres::parse_plugin_config(text, "k8s_cons_tres.conf");
    if (r.config.has_value() == !r.error.empty())
        abort();  // exactly one of config and error
    if (!r.config && r.error.rfind("k8s_cons_tres.conf", 0) != 0)
        abort();  // errors name the file
    if (r.config) {
        (void)r.config->k8s_node_name("node-1");
    }
    return 0;
}
