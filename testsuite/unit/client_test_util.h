// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers shared by the k8s_client unit tests: fixture files and
// scratch directories that clean up after themselves.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef K8S_CONS_TRES_FIXTURE_DIR
#define K8S_CONS_TRES_FIXTURE_DIR "testsuite/fixtures/json"
#endif

namespace k8s_cons_tres::test {

inline std::string readFixture(const std::string &name) {
    std::ifstream in(std::string(K8S_CONS_TRES_FIXTURE_DIR) + "/" + name);
    if (!in)
        throw std::runtime_error("missing fixture " + name);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "k8s_cons_tres-XXXXXX").string();
        if (!mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    std::string file(const std::string &name, const std::string &content) const {
        std::string p = path_ + "/" + name;
        std::ofstream(p, std::ios::binary) << content;
        return p;
    }
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

}  // namespace k8s_cons_tres::test
