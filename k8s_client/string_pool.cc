// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/string_pool.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace k8s_cons_tres::k8s {

StringPool &StringPool::instance() {
    static StringPool *pool = new StringPool();  // never destroyed: ids outlive statics
    return *pool;
}

uint32_t StringPool::intern(std::string_view s) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = ids_.find(s);
    if (it != ids_.end())
        return it->second;
    uint32_t id = next_;
    size_t chunk = id >> kChunkBits;
    if (chunk >= kMaxChunks || id >= limit_)
        throw std::length_error("string pool full (" + std::to_string(next_) + " distinct strings)");
    if ((id & kChunkMask) == 0) {
        owned_.push_back(std::make_unique<std::string[]>(size_t(1) << kChunkBits));
        chunks_[chunk].store(owned_.back().get(), std::memory_order_release);
    }
    std::string &slot = chunks_[chunk].load(std::memory_order_relaxed)[id & kChunkMask];
    slot.assign(s);
    ids_.emplace(std::string_view(slot), id);
    ++next_;
    return id;
}

void StringPool::set_limit(size_t limit) {
    std::lock_guard<std::mutex> lk(mu_);
    limit_ = std::min(limit, kMaxChunks << kChunkBits);
}

size_t StringPool::size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return next_;
}

}  // namespace k8s_cons_tres::k8s
