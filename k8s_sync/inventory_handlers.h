// SPDX-License-Identifier: GPL-2.0-or-later
// The informer handlers that turn decoded objects into snapshots: each keeps
// its informer's working copy (a CowMap) and publishes it to the store. A
// relist builds a fresh map while the previous snapshot stays published.
#pragma once

#include "k8s_client/informer.h"
#include "k8s_sync/snapshot.h"

#include <functional>

namespace k8s_cons_tres::k8s {

class SliceHandler : public InformerHandler {
public:
    SliceHandler(SnapshotStore &store, std::string driver, Logger log);
    void beginList() override;
    void listItem(const rapidjson::Value &obj) override;
    void endList() override;
    void upsert(const rapidjson::Value &obj) override;
    void remove(const rapidjson::Value &obj) override;
    void commit() override;
    const SliceMap &working() const { return working_; }

private:
    bool add(SliceMap &m, const rapidjson::Value &obj);
    SnapshotStore &store_;
    std::string driver_;
    Logger log_;
    SliceMap working_, staging_;
    bool synced_ = false;
};

// Claims and holder pods: objects keyed by namespace/name, decoded whole.
// A claim that cannot be decoded is kept as its salvage (claim_json.h), from
// a list or an event alike: dropping it would free its devices.
template <class T>
class ObjectHandler : public InformerHandler {
public:
    using Map = CowMap<T>;
    using Decode = std::function<T(const rapidjson::Value &)>;
    using Publish = void (SnapshotStore::*)(const Map &, bool);
    // What stands for an object that cannot be decoded; null: nothing does.
    using Salvage = T (*)(const rapidjson::Value &, const std::string &why);
    ObjectHandler(SnapshotStore &store, const char *kind, Decode decode, Publish publish, Logger log,
                  Salvage salvage = nullptr, const char *salvaged = "keeps the nodes it names out")
        : store_(store), kind_(kind), decode_(std::move(decode)), publish_(publish), log_(std::move(log)),
          salvage_(salvage), salvaged_(salvaged) {}
    void beginList() override;
    void listItem(const rapidjson::Value &obj) override;
    void endList() override;
    void upsert(const rapidjson::Value &obj) override;
    void remove(const rapidjson::Value &obj) override;
    void commit() override;
    const Map &working() const { return working_; }

private:
    void add(Map &m, const rapidjson::Value &obj);
    // An undecodable object: its salvage when there is one, else skipped
    // (a list) or the last good version kept (an event).
    void undecodable(Map &m, const rapidjson::Value &obj, const std::exception &e, bool listing);
    SnapshotStore &store_;
    const char *kind_;
    Decode decode_;
    Publish publish_;
    Logger log_;
    Salvage salvage_;
    const char *salvaged_;  // what the stand-in does, for the log
    Map working_, staging_;
    bool synced_ = false;
};

class ClaimHandler : public ObjectHandler<ClaimHolding> {
public:
    ClaimHandler(SnapshotStore &store, Logger log);
};

class PodHandler : public ObjectHandler<PodHolding> {
public:
    PodHandler(SnapshotStore &store, Logger log);
};

// slurm-bridge's pods, in every namespace (their claims' Slurm jobs).
class BridgePodHandler : public ObjectHandler<PodHolding> {
public:
    BridgePodHandler(SnapshotStore &store, Logger log);
};

// Keeps of each Node only the labels and annotations `keys` names.
class NodeHandler : public ObjectHandler<KubeNode> {
public:
    NodeHandler(SnapshotStore &store, Logger log, TopologyKeys keys = {});
};

// A rule that cannot be decoded keeps every device from new jobs
// (salvageTaintRule), from a list or an event alike.
class TaintRuleHandler : public ObjectHandler<TaintRule> {
public:
    TaintRuleHandler(SnapshotStore &store, Logger log);
};

}  // namespace k8s_cons_tres::k8s
