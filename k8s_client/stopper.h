// SPDX-License-Identifier: GPL-2.0-or-later
// A shared stop flag that sleeping threads can wait on, so that shutdown
// interrupts backoff waits at once and aborts transfers within a second.
// It also counts the API server's answers (answered()), so that a thread
// waiting out a backoff may retry as soon as the server is seen answering
// again rather than when its backoff ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace k8s_cons_tres::k8s {

class Stopper {
public:
    enum class Woke { Timeout, Stopped, Answered };

    void stop() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stopped_ = true;
        }
        cv_.notify_all();
    }
    bool stopped() const { return stopped_.load(); }
    // Sleeps up to d; returns true when stopped.
    template <class Rep, class Period>
    bool waitFor(std::chrono::duration<Rep, Period> d) {
        std::unique_lock<std::mutex> lk(mu_);
        return cv_.wait_for(lk, d, [&] { return stopped_.load(); });
    }

    // The API server answered a request (any 2xx, on any thread sharing this).
    void answered() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            ++answers_;
        }
        cv_.notify_all();
    }
    uint64_t answers() const { return answers_.load(); }
    // Sleeps up to d, or until stopped, or until an answer beyond `seen`
    // (a value of answers() read when the wait's cause failed).
    template <class Rep, class Period>
    Woke waitFor(std::chrono::duration<Rep, Period> d, uint64_t seen) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_for(lk, d, [&] { return stopped_.load() || answers_.load() > seen; });
        if (stopped_.load()) return Woke::Stopped;
        return answers_.load() > seen ? Woke::Answered : Woke::Timeout;
    }

private:
    std::atomic<bool> stopped_{false};
    std::atomic<uint64_t> answers_{0};
    std::mutex mu_;
    std::condition_variable cv_;
};

}  // namespace k8s_cons_tres::k8s
