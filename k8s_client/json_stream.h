// SPDX-License-Identifier: GPL-2.0-or-later
// Splits a byte stream of concatenated JSON objects (a watch response) into
// complete top-level objects, whatever the chunk boundaries are. It tracks
// only nesting and string state; each object is then parsed on its own.
#pragma once

#include <string>
#include <string_view>

namespace k8s_cons_tres::k8s {

class JsonStreamSplitter {
public:
    // Appends data; then call next() until it returns false.
    void feed(const char *data, size_t len) { buf_.append(data, len); }
    // Moves the next complete object into out (mutable, for in-situ parsing).
    bool next(std::string &out);
    size_t buffered() const { return buf_.size() - start_; }
    // Bytes of the current incomplete object larger than this is an error.
    // The API server refuses requests over 3 MiB, so no real event is near it.
    static constexpr size_t kMaxObject = 32u << 20;

private:
    std::string buf_;
    size_t start_ = 0;     // first byte not yet returned
    size_t scan_ = 0;      // next byte to examine
    int depth_ = 0;
    bool inString_ = false, escape_ = false;
    size_t objStart_ = std::string::npos;
};

}  // namespace k8s_cons_tres::k8s
