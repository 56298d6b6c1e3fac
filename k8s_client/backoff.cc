// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/backoff.h"

#include <algorithm>
#include <random>

namespace k8s_cons_tres::k8s {

double defaultRandom() {
    thread_local std::mt19937_64 gen{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

Backoff::Backoff() : Backoff(Params{}) {}

Backoff::Backoff(Params p, Random random)
    : p_(p), random_(random ? std::move(random) : Random(defaultRandom)) {}

Backoff::Duration Backoff::next(Clock::time_point now) {
    bool quietLongEnough = last_ && now - *last_ > p_.reset;
    if (base_.count() == 0 || quietLongEnough) {
        base_ = p_.initial;
    } else {
        auto grown = Duration(static_cast<Duration::rep>(
            static_cast<double>(base_.count()) * p_.factor));
        base_ = std::min(grown, p_.cap);
    }
    last_ = now;
    double r = std::clamp(random_(), 0.0, 1.0);
    auto jittered = Duration(static_cast<Duration::rep>(
        static_cast<double>(base_.count()) * (1.0 + p_.jitter * r)));
    return std::min(jittered, p_.cap);
}

void Backoff::reset() {
    base_ = Duration{0};
    last_.reset();
}

}  // namespace k8s_cons_tres::k8s
