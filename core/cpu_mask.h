// SPDX-License-Identifier: GPL-2.0-or-later
// Bit sets over uint64 words: the compact form in which the core keeps CPU
// and GPU sets, so that counting free devices costs O(words), not O(devices).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace k8s_cons_tres {

using Words = std::vector<uint64_t>;

inline size_t words_for(size_t bits) { return (bits + 63) / 64; }

inline void bit_set(uint64_t *w, size_t i) { w[i / 64] |= uint64_t{1} << (i % 64); }
inline void bit_clear(uint64_t *w, size_t i) { w[i / 64] &= ~(uint64_t{1} << (i % 64)); }
inline bool bit_test(const uint64_t *w, size_t i) {
    return (w[i / 64] >> (i % 64)) & 1U;
}

inline void bit_set(Words &w, size_t i) { bit_set(w.data(), i); }
inline void bit_clear(Words &w, size_t i) { bit_clear(w.data(), i); }
inline bool bit_test(const Words &w, size_t i) { return bit_test(w.data(), i); }

inline uint32_t popcount(const uint64_t *w, size_t n) {
    uint32_t c = 0;
    for (size_t i = 0; i < n; ++i)
        c += static_cast<uint32_t>(std::popcount(w[i]));
    return c;
}

// Number of bits set in a & b.
inline uint32_t popcount_and(const uint64_t *a, const uint64_t *b, size_t n) {
    uint32_t c = 0;
    for (size_t i = 0; i < n; ++i)
        c += static_cast<uint32_t>(std::popcount(a[i] & b[i]));
    return c;
}

// Calls f(index) for every set bit, in increasing order.
template <class F>
void for_each_bit(const uint64_t *w, size_t n, F &&f) {
    for (size_t i = 0; i < n; ++i) {
        uint64_t x = w[i];
        while (x) {
            f(i * 64 + static_cast<size_t>(std::countr_zero(x)));
            x &= x - 1;
        }
    }
}

}  // namespace k8s_cons_tres
