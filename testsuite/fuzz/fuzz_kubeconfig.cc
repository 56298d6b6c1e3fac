// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: the kubeconfig loader (k8s_client/config.h). It reads a
// file, so each input is written to a scratch file first, alone in its
// directory: relative file references (resolved against the kubeconfig's
// directory) find nothing.
// Contract checked: any input loads or throws ConfigError (naming file, key
// and fix); nothing else escapes, and no sanitizer report or hang.
#include "k8s_client/config.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

char scratchDir[] = "/tmp/k8s_cons_tres-fuzz-kubeconfig-XXXXXX";

void removeScratch() {
    std::remove((std::string(scratchDir) + "/kubeconfig").c_str());
    std::remove(scratchDir);
}

std::string scratchFile() {
    if (!mkdtemp(scratchDir))
        abort();
    atexit(removeScratch);
    return std::string(scratchDir) + "/kubeconfig";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const std::string path = scratchFile();
    FILE *f = fopen(path.c_str(), "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    try {
        k8s_cons_tres::k8s::Config c = k8s_cons_tres::k8s::loadKubeconfig(path);
        (void)c;
    } catch (const k8s_cons_tres::k8s::ConfigError &) {
    }
    return 0;
}
