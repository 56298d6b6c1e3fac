// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/hostlist.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <utility>

namespace k8s_cons_tres {
namespace {

// A range of numbers of one width after one prefix, and its text.
struct Group {
    std::string prefix;
    size_t width = 0;
    std::vector<uint32_t> numbers;
};

std::string padded(uint32_t n, size_t width) {
    std::string s = std::to_string(n);
    return std::string(width > s.size() ? width - s.size() : 0, '0') + s;
}

std::string group_text(const Group &g) {
    if (g.numbers.size() == 1) return g.prefix + padded(g.numbers.front(), g.width);
    std::string ranges;
    for (size_t i = 0; i < g.numbers.size();) {
        size_t j = i;
        while (j + 1 < g.numbers.size() && g.numbers[j + 1] == g.numbers[j] + 1) ++j;
        ranges += (ranges.empty() ? "" : ",") + padded(g.numbers[i], g.width);
        if (j > i) ranges += "-" + padded(g.numbers[j], g.width);
        i = j + 1;
    }
    return g.prefix + "[" + ranges + "]";
}

}  // namespace

std::string hostlist_of(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    // (prefix, width) -> numbers; names without a prefix and a short numeric
    // tail stand alone.
    std::map<std::pair<std::string, size_t>, Group> groups;
    std::vector<std::pair<std::string, std::string>> tokens;  // (first name, text)
    for (const std::string &n : names) {
        size_t d = n.size();
        while (d > 0 && std::isdigit(static_cast<unsigned char>(n[d - 1]))) --d;
        const size_t width = n.size() - d;
        if (width == 0 || width > 9 || d == 0) {  // "[1-3]" alone is no name
            tokens.emplace_back(n, n);
            continue;
        }
        Group &g = groups[{n.substr(0, d), width}];
        g.prefix = n.substr(0, d);
        g.width = width;
        g.numbers.push_back(static_cast<uint32_t>(std::stoul(n.substr(d))));
    }
    for (auto &[key, g] : groups) {
        std::sort(g.numbers.begin(), g.numbers.end());
        tokens.emplace_back(g.prefix + padded(g.numbers.front(), g.width), group_text(g));
    }
    std::sort(tokens.begin(), tokens.end());
    std::string out;
    for (const auto &[_, text] : tokens) out += (out.empty() ? "" : ",") + text;
    return out;
}

}  // namespace k8s_cons_tres
