// SPDX-License-Identifier: GPL-2.0-or-later
// Process-wide interning of the strings that repeat across millions of
// devices (attribute names, string values, quantities): each is stored once
// and referred to by a 32-bit id. Append-only; ids stay valid for the life of
// the process. Lookups by id take no lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace k8s_cons_tres::k8s {

class StringPool {
public:
    static StringPool &instance();
    uint32_t intern(std::string_view s);
    const std::string &get(uint32_t id) const {
        return chunks_[id >> kChunkBits].load(std::memory_order_acquire)[id & kChunkMask];
    }
    size_t size() const;
    // At most this many strings (bounded memory whatever the slices hold);
    // intern() then throws std::length_error. Lowered only by tests.
    void set_limit(size_t limit);

private:
    static constexpr unsigned kChunkBits = 12;
    static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
    static constexpr size_t kMaxChunks = 1u << 12;  // 16.7 million strings
    StringPool() = default;
    mutable std::mutex mu_;
    std::unordered_map<std::string_view, uint32_t> ids_;
    uint32_t next_ = 0;
    size_t limit_ = kMaxChunks << kChunkBits;
    std::array<std::atomic<std::string *>, kMaxChunks> chunks_{};
    std::vector<std::unique_ptr<std::string[]>> owned_;
};

}  // namespace k8s_cons_tres::k8s
