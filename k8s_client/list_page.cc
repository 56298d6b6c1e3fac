// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/list_page.h"

#include "k8s_client/json.h"

#include <string_view>

namespace k8s_cons_tres::k8s {
namespace {

// SAX events of the page's top-level object until its metadata has ended
// (or its items begin): returning false ends the scan there.
class MetaScan : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, MetaScan> {
public:
    bool Key(const char *s, rapidjson::SizeType n, bool) {
        const std::string_view k(s, n);
        if (depth_ == 1) {
            if (k == "items")
                return false;  // the items come first: nothing to gain
            metaNext_ = k == "metadata" && !metaSeen_;
        } else if (depth_ == 2 && inMeta_) {
            key_.assign(k);
        }
        return true;
    }
    bool String(const char *s, rapidjson::SizeType n, bool) {
        if (inMeta_ && depth_ == 2 && key_ == "continue" && !cont_)
            cont_ = std::string(s, n);
        return Default();
    }
    bool Null() {
        if (inMeta_ && depth_ == 2 && key_ == "continue" && !cont_)
            cont_ = std::string();
        return Default();
    }
    bool Default() {
        if (inMeta_ && depth_ == 2 && key_ == "continue" && !cont_)
            bad_ = true;  // not a string: the full parse decides
        metaNext_ = false;
        return true;
    }
    bool StartObject() {
        ++depth_;
        if (depth_ == 2 && metaNext_) {
            inMeta_ = metaSeen_ = true;
            key_.clear();
        }
        metaNext_ = false;
        return true;
    }
    bool EndObject(rapidjson::SizeType) {
        if (depth_ == 2 && inMeta_) {
            done_ = true;
            return false;  // metadata read: stop before the items
        }
        --depth_;
        return true;
    }
    bool StartArray() {
        ++depth_;
        metaNext_ = false;
        return true;
    }
    bool EndArray(rapidjson::SizeType) {
        --depth_;
        return true;
    }

    std::optional<std::string> result() const {
        if (!done_ || bad_)
            return std::nullopt;
        return cont_.value_or(std::string());
    }

private:
    int depth_ = 0;
    bool metaNext_ = false, metaSeen_ = false, inMeta_ = false, done_ = false, bad_ = false;
    std::string key_;  // the reader's copy lives only during the call
    std::optional<std::string> cont_;
};

}  // namespace

std::optional<std::string> peekContinue(const std::string &page) {
    MetaScan scan;
    rapidjson::MemoryStream in(page.data(), page.size());
    rapidjson::Reader reader;
    // Iterative: no recursion, whatever the nesting before metadata ends.
    reader.Parse<rapidjson::kParseIterativeFlag>(in, scan);
    return scan.result();
}

}  // namespace k8s_cons_tres::k8s
