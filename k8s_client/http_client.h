// SPDX-License-Identifier: GPL-2.0-or-later
// HTTPS transport to the API server on libcurl. One Client per thread: it
// owns one easy handle, reused so connections, TLS sessions and DNS results
// are kept between requests. TLS verification is on unless the kubeconfig
// explicitly turns it off. The bearer token never reaches a log line.
#pragma once

#include "k8s_client/config.h"
#include "k8s_client/log.h"
#include "k8s_client/stopper.h"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace k8s_cons_tres::k8s {

// Supplies the bearer token; re-reads tokenFile when it changes on disk
// (projected service-account tokens rotate). Thread-safe.
class TokenSource {
public:
    explicit TokenSource(const Config &cfg);
    std::string token();

private:
    std::mutex mu_;
    std::string static_, file_, cached_;
    std::optional<std::chrono::nanoseconds> stamp_;
    uintmax_t size_ = 0;
};

struct ClientOptions {
    std::chrono::milliseconds connectTimeout{5000};
    std::chrono::milliseconds requestTimeout{30000};  // whole request, non-watch
    std::chrono::seconds streamIdleTimeout{90};       // watch: no byte for this long
    size_t maxBodyBytes = size_t(1) << 30;            // a larger answer is an error
    std::string userAgent = "k8s-cons-tres/0.1";
};

struct HttpResponse {
    long status = 0;           // 0 when no HTTP answer arrived
    std::string body;          // body (for streams: only a non-2xx body)
    std::string error;         // transport error, "" when status != 0
    bool timedOut = false;
    bool aborted = false;      // stopped by shutdown or by the stream consumer
    std::optional<std::chrono::seconds> retryAfter;
    bool ok() const { return status >= 200 && status < 300; }
};

class Client {
public:
    // Returning false from a stream consumer ends the transfer.
    using ChunkFn = std::function<bool(const char *data, size_t len)>;

    Client(std::shared_ptr<const Config> cfg, std::shared_ptr<TokenSource> token,
           ClientOptions opts, std::shared_ptr<Stopper> stop, Logger log = {});
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    HttpResponse request(const std::string &method, const std::string &path,
                         const std::string &body = {});
    HttpResponse get(const std::string &path) { return request("GET", path); }
    // Called once when the status line and headers of an answer have arrived.
    using OpenFn = std::function<void(long status)>;
    // Long-lived GET (watch): the body goes to onChunk while the status is 2xx.
    HttpResponse stream(const std::string &path, ChunkFn onChunk, OpenFn onOpen = {});

    // A one-line, token-free description of a failure, with the likely fix.
    std::string describe(const HttpResponse &r, const std::string &what) const;
    const Config &config() const { return *cfg_; }

private:
    HttpResponse perform(const std::string &method, const std::string &path,
                         const std::string *body, ChunkFn *onChunk, OpenFn *onOpen = nullptr);
    void setupTls();
    void setCommonOptions(const std::string &url, char *errbuf, bool streaming);

    std::shared_ptr<const Config> cfg_;
    std::shared_ptr<TokenSource> token_;
    ClientOptions opts_;
    std::shared_ptr<Stopper> stop_;
    Logger log_;
    void *easy_ = nullptr;  // CURL*, kept opaque so users need no curl headers
};

// Percent-encodes a query parameter value.
std::string urlEncode(const std::string &v);

}  // namespace k8s_cons_tres::k8s
