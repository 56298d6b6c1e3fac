// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/inventory_handlers.h"

#include "k8s_sync/claim_json.h"
#include "k8s_sync/slice_json.h"

namespace k8s_cons_tres::k8s {

namespace {
std::string nameOf(const rapidjson::Value &obj) {
    const rapidjson::Value *meta = json::member(obj, "metadata");
    return meta && meta->IsObject() ? json::getString(*meta, "name") : std::string();
}
}  // namespace

SliceHandler::SliceHandler(SnapshotStore &store, std::string driver, Logger log)
    : store_(store), driver_(std::move(driver)), log_(std::move(log)) {}

void SliceHandler::beginList() { staging_ = SliceMap(); }

// One object that cannot be decoded (bad JSON, more than the bounds allow,
// a full string pool) costs only itself: it is logged and skipped, never
// a relist of everything.
void SliceHandler::listItem(const rapidjson::Value &obj) {
    try {
        add(staging_, obj);
    } catch (const std::exception &e) {
        log_.error("skipping undecodable ResourceSlice '" + nameOf(obj) + "': " + e.what());
    }
}

void SliceHandler::endList() {
    working_ = std::move(staging_);
    staging_ = SliceMap();
    synced_ = true;
    store_.publishSlices(driver_, working_, true);
}

void SliceHandler::upsert(const rapidjson::Value &obj) {
    try {
        if (!add(working_, obj))
            working_.erase(nameOf(obj));
    } catch (const std::exception &e) {
        // Its node loses this slice: an incomplete pool keeps the node out.
        working_.erase(nameOf(obj));
        log_.error("dropping undecodable ResourceSlice '" + nameOf(obj) + "': " + e.what());
    }
}

void SliceHandler::remove(const rapidjson::Value &obj) { working_.erase(nameOf(obj)); }

void SliceHandler::commit() { store_.publishSlices(driver_, working_, synced_); }

// False when the slice belongs to another driver (filtered out).
bool SliceHandler::add(SliceMap &m, const rapidjson::Value &obj) {
    auto s = std::make_shared<CompactSlice>(decodeCompactSlice(obj));
    if (s->driver != driver_)
        return false;
    std::string name = s->name;
    m.set(name, std::move(s));
    return true;
}

ClaimHandler::ClaimHandler(SnapshotStore &store, Logger log)
    : ObjectHandler(store, "ResourceClaim", decodeClaimHolding, &SnapshotStore::publishClaims, std::move(log),
                    salvageClaimHolding) {}

PodHandler::PodHandler(SnapshotStore &store, Logger log)
    : ObjectHandler(store, "Pod", decodePodHolding, &SnapshotStore::publishPods, std::move(log)) {}

BridgePodHandler::BridgePodHandler(SnapshotStore &store, Logger log)
    : ObjectHandler(store, "Pod", decodePodHolding, &SnapshotStore::publishBridgePods, std::move(log)) {}

NodeHandler::NodeHandler(SnapshotStore &store, Logger log, TopologyKeys keys)
    : ObjectHandler(
          store, "Node",
          [keys = std::move(keys)](const rapidjson::Value &obj) { return decodeKubeNode(obj, keys); },
          &SnapshotStore::publishNodes, std::move(log)) {}

TaintRuleHandler::TaintRuleHandler(SnapshotStore &store, Logger log)
    : ObjectHandler(store, "DeviceTaintRule", decodeTaintRule, &SnapshotStore::publishTaintRules, std::move(log),
                    salvageTaintRule, "keeps every device from new Slurm jobs") {}

template <class T>
void ObjectHandler<T>::beginList() { staging_ = Map(); }

template <class T>
void ObjectHandler<T>::undecodable(Map &m, const rapidjson::Value &obj, const std::exception &e, bool listing) {
    if (salvage_) {
        auto c = std::make_shared<T>(salvage_(obj, e.what()));
        log_.error(std::string("undecodable ") + kind_ + " '" + c->ns + "/" + c->name + "' " + salvaged_ + ": " +
                   e.what());
        std::string key = claimKey(c->ns, c->name);
        m.set(key, std::move(c));
    } else if (listing) {
        log_.error(std::string("skipping undecodable ") + kind_ + " '" + nameOf(obj) + "': " + e.what());
    } else {
        // The version seen before (if any) stays.
        log_.error(std::string("keeping the last good version of undecodable ") + kind_ + " '" + nameOf(obj) +
                   "': " + e.what());
    }
}

template <class T>
void ObjectHandler<T>::listItem(const rapidjson::Value &obj) {
    try {
        add(staging_, obj);
    } catch (const std::exception &e) {
        undecodable(staging_, obj, e, true);
    }
}

template <class T>
void ObjectHandler<T>::endList() {
    working_ = std::move(staging_);
    staging_ = Map();
    synced_ = true;
    (store_.*publish_)(working_, true);
}

template <class T>
void ObjectHandler<T>::upsert(const rapidjson::Value &obj) {
    try {
        add(working_, obj);
    } catch (const std::exception &e) {
        undecodable(working_, obj, e, false);
    }
}

template <class T>
void ObjectHandler<T>::remove(const rapidjson::Value &obj) {
    const rapidjson::Value *meta = json::member(obj, "metadata");
    if (meta && meta->IsObject())
        working_.erase(claimKey(json::getString(*meta, "namespace"), json::getString(*meta, "name")));
}

template <class T>
void ObjectHandler<T>::commit() { (store_.*publish_)(working_, synced_); }

template <class T>
void ObjectHandler<T>::add(Map &m, const rapidjson::Value &obj) {
    auto c = std::make_shared<T>(decode_(obj));
    std::string key = claimKey(c->ns, c->name);
    m.set(key, std::move(c));
}

template class ObjectHandler<ClaimHolding>;
template class ObjectHandler<PodHolding>;
template class ObjectHandler<KubeNode>;
template class ObjectHandler<TaintRule>;

}  // namespace k8s_cons_tres::k8s
