// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/placement_key.h"

namespace k8s_cons_tres {

uint64_t hash_words(const std::vector<uint64_t> &words) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (uint64_t w : words) {
        h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
    }
    return h ^ (h >> 33);
}

PlacementKey::PlacementKey(const NodeView &v, const Request &req, const SearchOptions &opts) {
    words_.reserve(8 + (v.cpu ? v.cpu->words : 0));
    placement_inputs(v, req, opts, [this](uint64_t w) { words_.push_back(w); });
    hash_ = hash_words(words_);
}

}  // namespace k8s_cons_tres
