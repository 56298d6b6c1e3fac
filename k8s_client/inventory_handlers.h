// SPDX-License-Identifier: GPL-2.0-or-later
// The informer handlers that turn decoded objects into snapshots: each keeps
// its informer's working copy (a CowMap) and publishes it to the store. A
// relist builds a fresh map while the previous snapshot stays published.
#pragma once

#include "k8s_client/informer.h"
#include "k8s_client/snapshot.h"

namespace k8sdra::k8s {

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

class ClaimHandler : public InformerHandler {
public:
    ClaimHandler(SnapshotStore &store, Logger log);
    void beginList() override;
    void listItem(const rapidjson::Value &obj) override;
    void endList() override;
    void upsert(const rapidjson::Value &obj) override;
    void remove(const rapidjson::Value &obj) override;
    void commit() override;
    const ClaimMap &working() const { return working_; }

private:
    void add(ClaimMap &m, const rapidjson::Value &obj);
    SnapshotStore &store_;
    Logger log_;
    ClaimMap working_, staging_;
    bool synced_ = false;
};

}  // namespace k8sdra::k8s
