// SPDX-License-Identifier: GPL-2.0-or-later
// How the engine gets its Kubernetes view without core/ doing any I/O: the
// Kubernetes client registers a factory for a Feed (its informers and the
// thread that turns their snapshots into Inventories). core/ only starts and
// stops it.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace k8sdra {

class Engine;

class Feed {
public:
    virtual ~Feed() = default;  // stops promptly: no hang at slurmctld shutdown
};

// level as enum k8sdra_log_level, message without prefix.
using FeedLog = std::function<void(int level, const std::string &msg)>;
// Returns null and sets *error when the configuration cannot be used.
using FeedFactory = std::function<std::unique_ptr<Feed>(std::shared_ptr<Engine> engine, FeedLog log,
                                                        std::string *error)>;

// Called once at load time by the client library (a static registrar).
void register_feed_factory(FeedFactory factory);
const FeedFactory &feed_factory();

}  // namespace k8sdra
