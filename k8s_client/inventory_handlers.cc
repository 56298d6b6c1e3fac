// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/inventory_handlers.h"

#include "k8s_client/claim_json.h"
#include "k8s_client/slice_json.h"

namespace k8sdra::k8s {

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
    : store_(store), log_(std::move(log)) {}

void ClaimHandler::beginList() { staging_ = ClaimMap(); }

void ClaimHandler::listItem(const rapidjson::Value &obj) {
    try {
        add(staging_, obj);
    } catch (const std::exception &e) {
        log_.error("skipping undecodable ResourceClaim '" + nameOf(obj) + "': " + e.what());
    }
}

void ClaimHandler::endList() {
    working_ = std::move(staging_);
    staging_ = ClaimMap();
    synced_ = true;
    store_.publishClaims(working_, true);
}

void ClaimHandler::upsert(const rapidjson::Value &obj) {
    try {
        add(working_, obj);
    } catch (const std::exception &e) {
        // The version seen before (if any) keeps holding its devices.
        log_.error("keeping the last good version of undecodable ResourceClaim '" + nameOf(obj) +
                   "': " + e.what());
    }
}

void ClaimHandler::remove(const rapidjson::Value &obj) {
    const rapidjson::Value *meta = json::member(obj, "metadata");
    if (meta && meta->IsObject())
        working_.erase(claimKey(json::getString(*meta, "namespace"),
                                json::getString(*meta, "name")));
}

void ClaimHandler::commit() { store_.publishClaims(working_, synced_); }

void ClaimHandler::add(ClaimMap &m, const rapidjson::Value &obj) {
    auto c = std::make_shared<ClaimHolding>(decodeClaimHolding(obj));
    std::string key = claimKey(c->ns, c->name);
    m.set(key, std::move(c));
}

}  // namespace k8sdra::k8s
