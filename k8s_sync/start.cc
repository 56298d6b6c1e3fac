// SPDX-License-Identifier: GPL-2.0-or-later
// The plugin's start-up, wired in one place: the engine (core/) fed from
// Kubernetes by the EngineFeed of this folder. core/ knows no feed of its
// own, so a build without this file has no k8sdra_start to link.
#include "core/feed.h"
#include "core/k8sdra.h"
#include "k8s_sync/engine_feed.h"

extern "C" int k8sdra_start(const struct k8sdra_start_args *args, char *err, size_t errlen) {
    return k8sdra::start_core(args, k8sdra::k8s::make_engine_feed, err, errlen);
}
