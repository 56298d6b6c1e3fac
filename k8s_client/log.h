// SPDX-License-Identifier: GPL-2.0-or-later
// Logging through a callback injected by the embedder (slurmctld's log
// functions in the plugin, stderr in tools). Every line carries a prefix.
#pragma once

#include <functional>
#include <string>

namespace k8s_cons_tres::k8s {

enum class LogLevel { Error = 0, Info = 1, Verbose = 2, Debug = 3 };

using LogFn = std::function<void(LogLevel, const std::string &)>;

class Logger {
public:
    Logger() = default;
    Logger(LogFn fn, std::string prefix) : fn_(std::move(fn)), prefix_(std::move(prefix)) {}
    void operator()(LogLevel level, const std::string &msg) const {
        if (fn_)
            fn_(level, prefix_ + msg);
    }
    void error(const std::string &m) const { (*this)(LogLevel::Error, m); }
    void info(const std::string &m) const { (*this)(LogLevel::Info, m); }
    void verbose(const std::string &m) const { (*this)(LogLevel::Verbose, m); }
    void debug(const std::string &m) const { (*this)(LogLevel::Debug, m); }
    Logger child(const std::string &sub) const { return Logger(fn_, prefix_ + sub); }

private:
    LogFn fn_;
    std::string prefix_;
};

}  // namespace k8s_cons_tres::k8s
