#include "cli/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/run_quip.h"

namespace quip::cli {
namespace {

namespace fs = std::filesystem;

Config parse_ok(std::string_view text) {
  auto c = parse_config(text, "/etc/quip/config.toml");
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? std::move(*c) : Config{};
}

std::string parse_error(std::string_view text) {
  auto c = parse_config(text, "/etc/quip/config.toml");
  EXPECT_FALSE(c.ok()) << "parsed: " << text;
  return c.ok() ? "" : c.error().message;
}

TEST(Config, ReadsDefaultsAndAliases) {
  const Config c = parse_ok(R"(
model = "qwen"
temp = 0.5
threads = 3

[models.qwen]
path = "models/qwen.gguf"
system = "Be brief."
top_k = 40
top_p = 0.9
min_p = 0.05
repeat_penalty = 1.1
seed = 7
ctx_size = 2048
n_predict = 64
template = "/t/chatml.jinja"
think = "off"

[models.abs]
path = "/m/a.gguf"
temp = 1

[cache]
max_size = "2GiB"
)");
  EXPECT_EQ(c.cache_max_size, uint64_t{2} << 30);
  EXPECT_EQ(c.default_model, "qwen");
  EXPECT_EQ(c.settings.temp, 0.5);
  EXPECT_EQ(c.settings.threads, 3);
  ASSERT_EQ(c.models.size(), 2u);
  const ModelAlias& q = c.models.at("qwen");
  EXPECT_EQ(q.path, fs::path("/etc/quip/models/qwen.gguf"));  // relative to the config file
  EXPECT_EQ(q.settings.system, "Be brief.");
  EXPECT_EQ(q.settings.top_k, 40);
  EXPECT_EQ(q.settings.top_p, 0.9);
  EXPECT_EQ(q.settings.min_p, 0.05);
  EXPECT_EQ(q.settings.repeat_penalty, 1.1);
  EXPECT_EQ(q.settings.seed, 7);
  EXPECT_EQ(q.settings.ctx_size, 2048);
  EXPECT_EQ(q.settings.n_predict, 64);
  EXPECT_EQ(q.settings.template_file, fs::path("/t/chatml.jinja"));
  EXPECT_EQ(q.settings.think, "off");
  EXPECT_FALSE(c.settings.think.has_value());
  EXPECT_FALSE(q.settings.temp.has_value());
  EXPECT_EQ(c.models.at("abs").settings.temp, 1.0);  // an integer where a number goes
}

TEST(Config, HomeInPaths) {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') GTEST_SKIP() << "HOME is not set";
  const Config c = parse_ok("[models.m]\npath = \"~/m.gguf\"\n");
  EXPECT_EQ(c.models.at("m").path, fs::path(home) / "m.gguf");
}

TEST(Config, ModelSettingsOverrideTheTopLevel) {
  Settings base;
  base.temp = 0.2;
  base.top_k = 10;
  Settings over;
  over.temp = 0.9;
  over.system = "x";
  const Settings m = merged(base, over);
  EXPECT_EQ(m.temp, 0.9);
  EXPECT_EQ(m.top_k, 10);
  EXPECT_EQ(m.system, "x");
  EXPECT_FALSE(m.seed.has_value());
}

TEST(Config, EmptyTextIsAnEmptyConfig) {
  const Config c = parse_ok("");
  EXPECT_FALSE(c.default_model.has_value());
  EXPECT_TRUE(c.models.empty());
}

// Every broken config is refused with one line naming the file, the line and
// the key: a typo must not silently become a default.
TEST(Config, BackendTables) {
  const Config c = parse_ok(
      "[backends.gpu]\nurl = \"http://gpu:8080/v1\"\nmodel = \"qwen\"\n"
      "api_key_env = \"GPU_KEY\"\ntimeout = 30\n[backends.local]\nurl = \"http://localhost\"\n");
  ASSERT_EQ(c.backends.size(), 2u);
  const BackendConfig& gpu = c.backends.at("gpu");
  EXPECT_EQ(gpu.url, "http://gpu:8080/v1");
  EXPECT_EQ(gpu.model, "qwen");
  EXPECT_EQ(gpu.api_key_env, "GPU_KEY");
  EXPECT_EQ(gpu.timeout_s, 30);
  EXPECT_FALSE(c.backends.at("local").model);
}

TEST(Config, BrokenBackendTables) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"[backends.a]\nmodel = \"x\"\n", "backends.a: has no 'url'"},
      {"[backends.a]\nurl = 3\n", "backends.a.url: expected a string, got an integer"},
      {"[backends.a]\nurl = \"\"\n", "backends.a.url: is empty"},
      {"[backends.a]\nurl = \"http://h\"\napi_key_env = \"1X\"\n", "is not a variable name"},
      {"[backends.a]\nurl = \"http://h\"\ntimeout = 0\n", "backends.a.timeout: expected an integer"},
      {"[backends.a]\nurl = \"http://h\"\nurls = 1\n", "backends.a.urls: unknown key"},
      {"[backends.a]\nurl = \"http://h\"\n[models.a]\npath = \"m.gguf\"\n", "is also [models.a]"},
      {"backends = 1\n", "backends: expected a table"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(parse_error(c.text).find(c.expected), std::string::npos)
        << c.text << " -> " << parse_error(c.text);
  }
  // A key written in the file is refused, and not quoted back.
  const std::string m = parse_error("[backends.a]\nurl = \"http://h\"\napi_key = \"sk-123\"\n");
  EXPECT_NE(m.find("api_key_env"), std::string::npos) << m;
  EXPECT_EQ(m.find("sk-123"), std::string::npos) << m;
}

TEST(Config, BrokenConfigsNameFileLineAndKey) {
  struct Case {
    const char* text;
    const char* expected;  // a part of the message
  };
  const Case cases[] = {
      {"tmep = 0.5\n", "config.toml:1: tmep: unknown key"},
      {"\n\ntemp = \"hot\"\n", "config.toml:3: temp: expected a number, got a string"},
      {"temp = -1\n", "temp: -1 is not in [0, 100]"},
      {"top_p = 1.5\n", "top_p: 1.5 is not in (0, 1]"},
      {"top_p = 0\n", "top_p: 0 is not in (0, 1]"},
      {"top_k = 2147483648\n", "top_k: 2147483648 is not in [0, 2147483647]"},
      {"n_predict = -2\n", "n_predict: -2 is not in [-1, 2147483647] (-1: no limit)"},
      {"ctx_size = 4294967297\n", "ctx_size: 4294967297 is not in [0, 2147483647]"},
      {"seed = -2\n", "seed: -2 is not in [-1, 9223372036854775807]"},
      {"temp = nan\n", "temp: nan is not in [0, 100]"},
      {"min_p = -0.1\n", "min_p"},
      {"top_k = 1.5\n", "top_k: expected an integer, got a number"},
      {"top_k = -3\n", "top_k: -3 is not in"},
      {"threads = 0\n", "threads: 0 is not in [1, 1024]"},
      {"repeat_penalty = 0\n", "repeat_penalty"},
      {"model = 3\n", "model: expected a string, got an integer"},
      {"model = \"\"\n", "model: is empty"},
      {"system = true\n", "system: expected a string, got a boolean"},
      {"think = \"maybe\"\n",
       "config.toml:1: think: 'maybe' is not one of hide, show, off, inline"},
      {"think = 1\n", "think: expected a string, got an integer"},
      {"models = 1\n", "models: expected a table"},
      {"[models.q]\nsystem = \"x\"\n", "config.toml:1: models.q: has no 'path'"},
      {"[models.q]\npath = \"a\"\ntemperature = 1\n",
       "config.toml:3: models.q.temperature: unknown key"},
      {"[models.q]\npath = 1\n", "models.q.path: expected a string"},
      {"[models]\nq = 1\n", "models.q: expected a table"},
      {"[cache\n", "config.toml:1:"},
      {"temp = 0.5\ntemp = 0.6\n", "config.toml:2:"},
      {"temp = \n", "config.toml:1:"},
      {"seed = t\n", "config.toml:1:"},  // the parser quotes the line break it saw
      {"seed = \"a\nb\"\n", "config.toml:1:"},
      {"\"te\\nmp\" = 1\n", "config.toml:1: te\\x0Amp: unknown key"},
      {"[models.\"\"]\npath = \"a\"\n", "config.toml:1: models.\"\": an alias needs a name"},
      {"[models.q]\npath = \"\"\n", "models.q.path: is empty"},
      {"[cache]\nmax_size = \"lots\"\n", "config.toml:2: cache.max_size: 'lots' is not a size"},
      {"[cache]\nmax_size = -1\n", "cache.max_size"},
      {"[cache]\nsize = 1\n", "config.toml:2: cache.size: unknown key"},
      {"cache = 1\n", "cache: expected a table"},
  };
  for (const Case& c : cases) {
    const std::string e = parse_error(c.text);
    EXPECT_NE(e.find(c.expected), std::string::npos) << "config: " << c.text << "\nerror: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.rfind("/etc/quip/config.toml:", 0), 0u) << e;
  }
}

TEST(Config, LoadsTheNamedFileOrNothing) {
  testing::TempDir dir;
  // A named file that is missing is an error.
  auto missing = load_config(dir / "absent.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("absent.toml"), std::string::npos);

  testing::write_bytes(dir / "c.toml", "model = \"m\"\n");
  auto c = load_config(dir / "c.toml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->default_model, "m");
  EXPECT_EQ(c->file, dir / "c.toml");
}

}  // namespace
}  // namespace quip::cli
