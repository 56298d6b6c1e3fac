// SPDX-License-Identifier: GPL-2.0-or-later
// A shared stop flag that sleeping threads can wait on, so that shutdown
// interrupts backoff waits at once and aborts transfers within a second.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace k8s_cons_tres::k8s {

class Stopper {
public:
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

private:
    std::atomic<bool> stopped_{false};
    std::mutex mu_;
    std::condition_variable cv_;
};

}  // namespace k8s_cons_tres::k8s
