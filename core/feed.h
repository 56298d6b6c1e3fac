// SPDX-License-Identifier: GPL-2.0-or-later
// How the engine gets its Kubernetes view without core/ doing any I/O: the
// start-up (k8s_cons_tres_start, k8s_sync/start.cc) hands start_core() the factory
// of a Feed (the informers and the thread that turns their snapshots into
// Inventories). core/ only starts and stops it.
#pragma once

#include <functional>
#include <memory>
#include <string>

struct k8s_cons_tres_start_args;  // core/k8s_cons_tres.h

namespace k8s_cons_tres {

class Engine;

class Feed {
public:
    virtual ~Feed() = default;  // stops promptly: no hang at slurmctld shutdown
};

// level as enum k8s_cons_tres_log_level, message without prefix.
using FeedLog = std::function<void(int level, const std::string &msg)>;
// Returns null and sets *error when the configuration cannot be used.
using FeedFactory = std::function<std::unique_ptr<Feed>(std::shared_ptr<Engine> engine, FeedLog log,
                                                        std::string *error)>;

// k8s_cons_tres_start's work with the feed named: reads the configuration, makes
// the engine and, when Kubernetes integration is on, the feed through
// make_feed (empty: this build has none). Returns a K8S_CONS_TRES_* code and a
// one-line reason in err; throws nothing.
int start_core(const ::k8s_cons_tres_start_args *args, const FeedFactory &make_feed, char *err, size_t errlen);

}  // namespace k8s_cons_tres
