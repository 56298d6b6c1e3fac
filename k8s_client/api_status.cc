// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/api_status.h"

#include "k8s_client/json.h"

namespace k8s_cons_tres::k8s {

std::string ApiStatus::summary() const {
    std::string s = reason.empty() ? "HTTP " + std::to_string(code) : reason;
    if (!message.empty())
        s += ": " + message;
    if (!causes.empty()) {
        s += " [";
        for (size_t i = 0; i < causes.size(); ++i) {
            if (i)
                s += "; ";
            s += causes[i].field.empty() ? causes[i].message
                                         : causes[i].field + ": " + causes[i].message;
        }
        s += "]";
    }
    return s;
}

ApiStatus parseApiStatus(long httpStatus, const std::string &body) {
    ApiStatus st;
    st.code = httpStatus;
    rapidjson::Document doc;
    try {  // the bounded parser: an error body is untrusted input too
        json::parse(doc, body);
    } catch (const json::Error &) {
        st.message = body.substr(0, 200);
        return st;
    }
    if (!doc.IsObject()) {
        st.message = body.substr(0, 200);
        return st;
    }
    try {
        st.reason = json::getString(doc, "reason");
        st.message = json::getString(doc, "message");
        if (long c = long(json::getInt(doc, "code")); c != 0)
            st.code = c;
        const rapidjson::Value *details = json::member(doc, "details");
        const rapidjson::Value *causes = details ? json::member(*details, "causes") : nullptr;
        if (causes && causes->IsArray())
            for (const auto &c : causes->GetArray())
                st.causes.push_back({json::getString(c, "reason"),
                                     json::getString(c, "message"),
                                     json::getString(c, "field")});
    } catch (const json::Error &) {
        st.message = body.substr(0, 200);
    }
    return st;
}

}  // namespace k8s_cons_tres::k8s
