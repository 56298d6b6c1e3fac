// SPDX-License-Identifier: GPL-2.0-or-later
// The plugin's start-up, wired in one place: the engine (core/) fed from
// Kubernetes by the EngineFeed of this folder. core/ knows no feed of its
// own, so a build without this file has no k8s_cons_tres_start to link.
#include "core/feed.h"
#include "core/k8s_cons_tres.h"
#include "k8s_sync/engine_feed.h"

extern "C" int k8s_cons_tres_start(const struct k8s_cons_tres_start_args *args, char *err, size_t errlen) {
    return k8s_cons_tres::start_core(args, k8s_cons_tres::k8s::make_engine_feed, err, errlen);
}
