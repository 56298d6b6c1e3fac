// SPDX-License-Identifier: GPL-2.0-or-later
// Interned strings: one process-wide copy of each value that repeats across
// thousands of nodes (driver names, GPU models, PCI ids), 8 bytes per use.
#pragma once

#include <compare>
#include <ostream>
#include <string>

namespace k8s_cons_tres {

class IStr {
public:
    IStr();
    IStr(const std::string &s);  // NOLINT: implicit on purpose, like std::string
    IStr(const char *s) : IStr(std::string(s)) {}

    const std::string &str() const { return *p_; }
    operator const std::string &() const { return *p_; }
    bool empty() const { return p_->empty(); }

    friend bool operator==(const IStr &a, const IStr &b) { return a.p_ == b.p_; }
    friend bool operator==(const IStr &a, const std::string &b) { return *a.p_ == b; }
    friend bool operator==(const IStr &a, const char *b) { return *a.p_ == b; }
    friend std::strong_ordering operator<=>(const IStr &a, const IStr &b) {
        return a.p_->compare(*b.p_) <=> 0;
    }
    friend std::ostream &operator<<(std::ostream &o, const IStr &s) { return o << *s.p_; }

private:
    const std::string *p_;
};

inline std::string operator+(const std::string &a, const IStr &b) { return a + b.str(); }
inline std::string operator+(const IStr &a, const std::string &b) { return a.str() + b; }

}  // namespace k8s_cons_tres
