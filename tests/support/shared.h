// Access to the test data in ../shared (QUIP_SHARED_DIR at configure time).
//
// A test that needs it calls QUIP_REQUIRE_SHARED(): when the folder is
// missing the test is skipped with a message, or fails when the environment
// variable CI is set (CI must never skip silently).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace quip::testing {

// The shared folder, or an empty path when it is missing.
std::filesystem::path shared_dir();

// Files under shared_dir()/sub whose names end with `suffix`, sorted.
std::vector<std::filesystem::path> shared_files(const std::string& sub, const std::string& suffix);

// A model that scripts/fetch_models.sh fetches, by its file name, in
// QUIP_MODELS_DIR, or an empty path when it has not been fetched.
std::filesystem::path fetched_model(const std::string& file);

// The demo model (SmolLM2-135M-Instruct, Q4_1), as fetched_model.
std::filesystem::path demo_model();

// Reads a whole file.
std::string read_file(const std::filesystem::path& path);

// shared_dir()/sub as a string, for command lines.
std::string shared_path(const std::string& sub);

// The first python3 (on PATH, then /usr/bin) that has the jsonschema and
// rfc3339-validator packages (scripts/setup.sh installs them), or "".
std::string python_with_jsonschema();

}  // namespace quip::testing

#define QUIP_REQUIRE_SHARED()                                                      \
  do {                                                                             \
    if (::quip::testing::shared_dir().empty()) {                                   \
      if (std::getenv("CI") != nullptr) {                                          \
        FAIL() << "shared test data not found at " QUIP_SHARED_DIR " (CI is set)"; \
      }                                                                            \
      GTEST_SKIP() << "shared test data not found at " QUIP_SHARED_DIR             \
                      " (configure with -DQUIP_SHARED_DIR=...)";                   \
    }                                                                              \
  } while (0)

// For tests on a fetched model (file name `file`): skips with a message
// when it is missing, or fails when CI is set. Declares `model` (its path).
#define QUIP_REQUIRE_FETCHED_MODEL(model, file)                                               \
  const std::filesystem::path model = ::quip::testing::fetched_model(file);                   \
  do {                                                                                        \
    if (model.empty()) {                                                                      \
      if (std::getenv("CI") != nullptr) {                                                     \
        FAIL() << (file)                                                                      \
               << " is not in " QUIP_MODELS_DIR                                               \
                  " (CI is set): run "                                                        \
                  "scripts/fetch_models.sh (make models)";                                    \
      }                                                                                       \
      GTEST_SKIP() << (file) << " is not in " QUIP_MODELS_DIR << " (make models fetches it)"; \
    }                                                                                         \
  } while (0)

#define QUIP_REQUIRE_DEMO_MODEL(model) \
  QUIP_REQUIRE_FETCHED_MODEL(model, std::string("SmolLM2-135M-Instruct.Q4_1.gguf"))
