// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/topology_build_attrs.h"

#include <cstdint>

namespace k8s_cons_tres {
namespace detail {

template <class T, class L>
std::optional<T> AttrReader::get(const std::string &name, bool required, const char *type) {
    std::optional<AttrValue> value = s_.attribute(i_, name);
    if (!value) {
        if (required)
            fail("device " + name_ + ": missing attribute " + name);
        return std::nullopt;
    }
    if (T *v = std::get_if<T>(&*value))
        return std::move(*v);
    const L *list = std::get_if<L>(&*value);
    if (list && list->size() == 1)
        return T((*list)[0]);
    if (required)
        fail("device " + name_ + ": attribute " + name + " is not " + type);
    else if (list)
        notes_.add(name_, "attribute " + name + " has " + std::to_string(list->size()) +
                                " values, expected one; ignored");
    else
        notes_.add(name_, "attribute " + name + " is not " + type + "; ignored");
    return std::nullopt;
}

std::optional<int64_t> AttrReader::int_attr(const std::string &name, bool required) {
    return get<int64_t, AttrInts>(name, required, "int");
}

std::optional<std::string> AttrReader::str_attr(const std::string &name, bool required) {
    return get<std::string, AttrStrings>(name, required, "string");
}

std::optional<bool> AttrReader::bool_attr(const std::string &name, bool required) {
    return get<bool, AttrBools>(name, required, "bool");
}

std::vector<std::string> AttrReader::str_list(const std::string &name) {
    std::optional<AttrValue> value = s_.attribute(i_, name);
    if (!value)
        return {};
    if (auto *s = std::get_if<std::string>(&*value))
        return {std::move(*s)};
    if (auto *l = std::get_if<AttrStrings>(&*value))
        return std::move(*l);
    notes_.add(name_, "attribute " + name + " is not string or strings; ignored");
    return {};
}

std::optional<int64_t> AttrReader::first_int(std::initializer_list<std::string> names) {
    std::optional<int64_t> value;
    std::string used;
    for (const std::string &n : names) {
        if (!has(n))
            continue;
        auto v = int_attr(n, false);
        if (!v)
            continue;
        if (!value) {
            value = v;
            used = n;
        } else if (*v != *value) {
            notes_.add(name_, "attributes " + used + " (" + std::to_string(*value) + ") and " +
                                    n + " (" + std::to_string(*v) + ") disagree; " + used +
                                    " used");
        }
    }
    return value;
}

void AttrReader::fail(const std::string &msg) {
    if (error_.empty())
        error_ = msg;
}

bool fits_int32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

std::optional<int64_t> parse_count(const std::string &q) {
    if (q.empty() || q.size() > 9)
        return std::nullopt;
    int64_t v = 0;
    for (char c : q) {
        if (c < '0' || c > '9')
            return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

std::string taint_reason(const DeviceTaint &t) {
    if (t.effect == "None")
        return "";
    return "taint " + t.key + "=" + t.effect;
}

}  // namespace detail

}  // namespace k8s_cons_tres
