// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/http_client.h"

#include <curl/curl.h>

#include <cctype>
#include <new>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace k8s_cons_tres::k8s {
namespace {

std::once_flag gCurlInit;

std::string trimToken(std::string s) {
    while (!s.empty() && std::isspace((unsigned char)s.back()))
        s.pop_back();
    size_t i = 0;
    while (i < s.size() && std::isspace((unsigned char)s[i]))
        ++i;
    return s.substr(i);
}

CURL *handle(void *p) { return static_cast<CURL *>(p); }

// Per-transfer state the curl callbacks see.
struct Transfer {
    Stopper *stop;
    CURL *easy;
    Client::ChunkFn *onChunk;
    HttpResponse *resp;
    size_t maxBody;
    Client::OpenFn *onOpen = nullptr;
    bool consumerStopped = false;
    bool tooLarge = false;
    std::exception_ptr error;  // thrown by the consumer; rethrown after curl returns
};

// The blank line ending a header block: the answer has started (a 1xx block
// is followed by another).
size_t onHeader(char *data, size_t, size_t n, void *ud) {
    auto *tr = static_cast<Transfer *>(ud);
    const bool blank = (n == 2 && data[0] == '\r' && data[1] == '\n') || (n == 1 && data[0] == '\n');
    if (!blank || !tr->onOpen || !*tr->onOpen)
        return n;
    long code = 0;
    curl_easy_getinfo(tr->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
        try {
            (*tr->onOpen)(code);
        } catch (...) {
            tr->error = std::current_exception();
            return 0;
        }
        tr->onOpen = nullptr;
    }
    return n;
}

size_t onWrite(char *data, size_t, size_t n, void *ud) {
    auto *tr = static_cast<Transfer *>(ud);
    long code = 0;
    curl_easy_getinfo(tr->easy, CURLINFO_RESPONSE_CODE, &code);
    if (!tr->onChunk || code < 200 || code >= 300) {
        if (tr->resp->body.size() + n > tr->maxBody) {  // hostile or broken server
            tr->tooLarge = true;
            return 0;
        }
        tr->resp->body.append(data, n);
        return n;
    }
    // No exception may unwind through libcurl's C frames.
    try {
        if ((*tr->onChunk)(data, n))
            return n;
    } catch (...) {
        tr->error = std::current_exception();
    }
    tr->consumerStopped = true;
    return 0;
}

// Called at least once a second even on an idle stream: aborts on shutdown.
int onProgress(void *ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto *tr = static_cast<Transfer *>(ud);
    return tr->stop && tr->stop->stopped() ? 1 : 0;
}

struct SlistFree {
    void operator()(curl_slist *l) const { curl_slist_free_all(l); }
};
using Headers = std::unique_ptr<curl_slist, SlistFree>;

void append(Headers &h, const std::string &line) {
    curl_slist *l = curl_slist_append(h.get(), line.c_str());
    if (!l)
        throw std::bad_alloc();
    h.release();
    h.reset(l);
}

void setBody(CURL *e, const std::string &method, const std::string *body) {
    // A DELETE's body is its DeleteOptions (UID precondition, grace period).
    if (body && (method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE")) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body->data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body->size()));
    }
    if (method != "GET" && method != "POST")
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method.c_str());
}

void readResult(CURL *e, CURLcode rc, const Transfer &t, const char *errbuf, bool streaming,
                HttpResponse &resp) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &resp.status);
    curl_off_t retryAfter = 0;
    if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &retryAfter) == CURLE_OK && retryAfter > 0)
        resp.retryAfter = std::chrono::seconds(retryAfter);
    if (rc == CURLE_OK)
        return;
    resp.timedOut = rc == CURLE_OPERATION_TIMEDOUT;
    resp.aborted = rc == CURLE_ABORTED_BY_CALLBACK || t.consumerStopped;
    resp.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (t.tooLarge)
        resp.error = "answer larger than " + std::to_string(t.maxBody >> 20) + " MiB";
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
        rc == CURLE_SSL_CONNECT_ERROR)
        resp.error = "TLS: " + resp.error;
    if (!streaming)
        resp.status = 0;  // a half-received answer is no answer
}

}  // namespace

std::string urlEncode(const std::string &v) {
    static const char *hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : v) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(char(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

TokenSource::TokenSource(const Config &cfg) : static_(cfg.token), file_(cfg.tokenFile) {}

std::string TokenSource::token() {
    if (file_.empty())
        return static_;
    std::lock_guard<std::mutex> lk(mu_);
    std::error_code ec;
    auto mtime = std::filesystem::last_write_time(file_, ec);
    auto size = ec ? 0 : std::filesystem::file_size(file_, ec);
    if (ec)
        return cached_;  // keep the last good token while the file is replaced
    auto stamp = mtime.time_since_epoch();
    if (stamp_ && *stamp_ == stamp && size_ == size)
        return cached_;
    std::ifstream in(file_);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string t = trimToken(ss.str());
    if (!t.empty()) {
        cached_ = std::move(t);
        stamp_ = stamp;
        size_ = size;
    }
    return cached_;
}

Client::Client(std::shared_ptr<const Config> cfg, std::shared_ptr<TokenSource> token,
               ClientOptions opts, std::shared_ptr<Stopper> stop, Logger log)
    : cfg_(std::move(cfg)), token_(std::move(token)), opts_(opts),
      stop_(std::move(stop)), log_(std::move(log)) {
    std::call_once(gCurlInit, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    easy_ = curl_easy_init();
    if (!easy_)
        throw std::runtime_error("curl_easy_init failed");
}

Client::~Client() { curl_easy_cleanup(handle(easy_)); }

void Client::setupTls() {
    CURL *e = handle(easy_);
    const Config &c = *cfg_;
    if (c.insecureSkipTlsVerify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    // A configured CA is the only trust anchor: no system store besides it.
    if (!c.caData.empty()) {
        curl_blob blob{const_cast<char *>(c.caData.data()), c.caData.size(), CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
        curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    } else if (!c.caFile.empty()) {
        curl_easy_setopt(e, CURLOPT_CAINFO, c.caFile.c_str());
        curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    }
    if (!c.clientCertData.empty()) {
        curl_blob cert{const_cast<char *>(c.clientCertData.data()), c.clientCertData.size(),
                       CURL_BLOB_COPY};
        curl_blob key{const_cast<char *>(c.clientKeyData.data()), c.clientKeyData.size(),
                      CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (!c.clientCertFile.empty()) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, c.clientCertFile.c_str());
        curl_easy_setopt(e, CURLOPT_SSLKEY, c.clientKeyFile.c_str());
    }
}

HttpResponse Client::request(const std::string &method, const std::string &path,
                             const std::string &body) {
    const bool none = body.empty() && (method == "GET" || method == "DELETE");
    return perform(method, path, none ? nullptr : &body, nullptr);
}

HttpResponse Client::stream(const std::string &path, ChunkFn onChunk, OpenFn onOpen) {
    return perform("GET", path, nullptr, &onChunk, &onOpen);
}

void Client::setCommonOptions(const std::string &url, char *errbuf, bool streaming) {
    CURL *e = handle(easy_);
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, opts_.userAgent.c_str());
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, long(opts_.connectTimeout.count()));
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    if (streaming) {  // no deadline for a watch, but a bound on silence
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, long(opts_.streamIdleTimeout.count()));
    } else {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, long(opts_.requestTimeout.count()));
    }
    setupTls();
}

HttpResponse Client::perform(const std::string &method, const std::string &path,
                             const std::string *body, ChunkFn *onChunk, OpenFn *onOpen) {
    HttpResponse resp;
    if (stop_ && stop_->stopped()) {
        resp.aborted = true;
        resp.error = "stopping";
        return resp;
    }
    CURL *e = handle(easy_);
    curl_easy_reset(e);  // keeps live connections and the TLS session cache
    std::string url = cfg_->server + path;
    char errbuf[CURL_ERROR_SIZE] = {0};
    setCommonOptions(url, errbuf, onChunk != nullptr);

    Headers headers;
    append(headers, "Accept: application/json");
    if (body)
        append(headers, "Content-Type: application/json");
    if (std::string token = token_ ? token_->token() : std::string(); !token.empty())
        append(headers, "Authorization: Bearer " + token);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
    setBody(e, method, body);

    Transfer t{stop_.get(), e, onChunk, &resp, opts_.maxBodyBytes, onOpen, false, false, nullptr};
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, onWrite);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, onProgress);

    CURLcode rc = curl_easy_perform(e);
    if (t.error)
        std::rethrow_exception(t.error);
    readResult(e, rc, t, errbuf, onChunk != nullptr, resp);
    return resp;
}

std::string Client::describe(const HttpResponse &r, const std::string &what) const {
    std::ostringstream m;
    m << what << " at " << cfg_->server;
    if (r.status == 0) {
        m << " failed: " << r.error;
        if (r.error.rfind("TLS:", 0) == 0)
            m << "; fix: check certificate-authority / certificate-authority-data in "
              << cfg_->source << " (TLS verification stays on)";
        return m.str();
    }
    m << " failed: HTTP " << r.status;
    if (r.status == 401)
        m << " Unauthorized: the bearer token was rejected; fix: check token/tokenFile in "
          << cfg_->source;
    else if (r.status == 403)
        m << " Forbidden: the credentials lack RBAC permission; fix: grant the "
             "verbs on this resource (see etc/ RBAC manifests)";
    return m.str();
}

}  // namespace k8s_cons_tres::k8s
