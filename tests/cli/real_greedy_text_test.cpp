// quip's answer on the trained models of ../shared/real is llama.cpp's, byte
// for byte: every case of real/greedy-text.json, recorded with
//   llama-completion -m FILE -p PROMPT -n 200 --temp 0 -no-cnv
//                    --no-display-prompt -t 2 -c 1024 --seed 1
// and run here as `quip --raw` with the same limits. The cases are read from
// the json, so held-out models of the same kinds are tested by adding them.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "support/run_quip.h"
#include "support/shared.h"

namespace quip::cli {
namespace {

struct GreedyCase {
  std::string model, prompt, text;
  int n_predict = 0;
  bool stopped_at_eos = false;
  size_t index = 0;
};

void PrintTo(const GreedyCase& c, std::ostream* os) {
  *os << c.model << " '" << c.prompt.substr(0, 40) << "'";
}

std::vector<GreedyCase> greedy_cases() {
  const auto json = testing::shared_dir() / "real" / "greedy-text.json";
  if (testing::shared_dir().empty() || !std::filesystem::exists(json)) return {GreedyCase{}};
  std::vector<GreedyCase> cases;
  const nlohmann::json ref = nlohmann::json::parse(testing::read_file(json));
  for (const auto& c : ref.at("cases")) {
    cases.push_back({c.at("model"), c.at("prompt"), c.at("text"), c.at("n_predict"),
                     c.at("stopped_at_eos"), cases.size()});
  }
  return cases;
}

class RealGreedyText : public ::testing::TestWithParam<GreedyCase> {};

TEST_P(RealGreedyText, IsLlamaCppsByteForByte) {
  QUIP_REQUIRE_SHARED();
  const GreedyCase& c = GetParam();
  const std::string model = (testing::shared_dir() / "real" / c.model).string();
  const std::vector<std::string> args = {
      "--raw",  "-m",         model,    "-n",    std::to_string(c.n_predict),
      "--temp", "0",          "-t",     "2",     "--ctx-size",
      "1024",   "--no-cache", "--json", c.prompt};
  const testing::RunResult r = testing::run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << testing::describe(args, r);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("text").get<std::string>(), c.text);
  EXPECT_EQ(j.at("stop") == "end", c.stopped_at_eos) << j.at("stop");
  EXPECT_LE(testing::count_lines(r.err), 1u) << r.err;  // at most a warning about the file

  // Plain stdout holds the same bytes.
  std::vector<std::string> plain = args;
  std::erase(plain, std::string("--json"));
  const testing::RunResult p = testing::run_quip(plain);
  ASSERT_EQ(p.status, kExitOk) << testing::describe(plain, p);
  EXPECT_EQ(p.out, c.text);
}

INSTANTIATE_TEST_SUITE_P(Shared, RealGreedyText, ::testing::ValuesIn(greedy_cases()),
                         [](const ::testing::TestParamInfo<GreedyCase>& param_info) {
                           const GreedyCase& c = param_info.param;
                           std::string n = c.model.substr(0, c.model.find('.'));  // no ".gguf"
                           for (char& ch : n) {
                             if (ch == '-' || ch == '.') ch = '_';
                           }
                           return (n.empty() ? std::string("missing") : n) + "_" +
                                  std::to_string(c.index);
                         });

}  // namespace
}  // namespace quip::cli
