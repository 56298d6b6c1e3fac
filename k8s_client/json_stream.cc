// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/json_stream.h"

#include "k8s_client/json.h"

namespace k8s_cons_tres::k8s {

bool JsonStreamSplitter::next(std::string &out) {
    for (; scan_ < buf_.size(); ++scan_) {
        char c = buf_[scan_];
        if (inString_) {
            if (escape_)
                escape_ = false;
            else if (c == '\\')
                escape_ = true;
            else if (c == '"')
                inString_ = false;
            continue;
        }
        if (c == '"') {
            inString_ = true;
        } else if (c == '{' || c == '[') {
            if (depth_++ == 0)
                objStart_ = scan_;
            else if (depth_ > json::kMaxDepth)  // refused early: the parser would anyway
                throw json::Error("watch stream: object nested deeper than " +
                                  std::to_string(json::kMaxDepth) + " levels");
        } else if (c == '}' || c == ']') {
            if (depth_ == 0)
                throw json::Error("watch stream: unbalanced '" + std::string(1, c) + "'");
            if (--depth_ == 0) {
                size_t len = scan_ + 1 - objStart_;
                out.reserve(len + json::kInsituSlack);  // parsed in situ next
                out.assign(buf_, objStart_, len);
                start_ = ++scan_;
                objStart_ = std::string::npos;
                // Drop consumed bytes once in a while to keep the buffer small.
                if (start_ > (1u << 20) || start_ == buf_.size()) {
                    buf_.erase(0, start_);
                    scan_ -= start_;
                    start_ = 0;
                }
                return true;
            }
        } else if (depth_ == 0) {
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
                throw json::Error("watch stream: unexpected byte outside an object");
            if (start_ == scan_)
                ++start_;  // whitespace between objects is consumed
        }
    }
    if (buffered() > kMaxObject)
        throw json::Error("watch stream: object larger than " +
                          std::to_string(kMaxObject >> 20) + " MiB");
    return false;
}

}  // namespace k8s_cons_tres::k8s
