// `quip inspect` text output, its errors and exit statuses, and the
// top-level command line, tested through the `quip` binary (QUIP_BINARY).
#include "cli/inspect_fixtures.h"

namespace quip::cli {
namespace {

using namespace inspect_fixtures;  // NOLINT: the shared fixtures of these tests

// ---- Text output ------------------------------------------------------------

TEST(InspectText, ShowsArchitectureLayersAndHeads) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    auto f = GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto arch = f->get<std::string_view>("general.architecture");
    ASSERT_TRUE(arch.ok()) << arch.error().message;
    const std::string a(*arch);
    auto n_layer = f->get_uint(a + ".block_count");
    auto n_head = f->get_uint(a + ".attention.head_count");
    auto n_head_kv = f->get_uint(a + ".attention.head_count_kv");
    ASSERT_TRUE(n_layer.ok() && n_head.ok() && n_head_kv.ok());

    const std::vector<std::string> args = {"inspect", path.string()};
    const RunResult r = run_quip(args);
    ASSERT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(text_row(r.out, "architecture"), a) << r.out;
    EXPECT_EQ(text_row(r.out, "layers"), std::to_string(*n_layer)) << r.out;
    EXPECT_EQ(text_row(r.out, "heads"),
              std::to_string(*n_head) + " (KV heads " + std::to_string(*n_head_kv) + ")")
        << r.out;
    const std::optional<std::string> file_row = text_row(r.out, "file");
    ASSERT_TRUE(file_row.has_value()) << r.out;
    EXPECT_TRUE(file_row->starts_with(path.string() + " (GGUF v3, ")) << *file_row;
    const std::optional<std::string> tensors_row = text_row(r.out, "tensors");
    ASSERT_TRUE(tensors_row.has_value()) << r.out;
    EXPECT_TRUE(tensors_row->starts_with(std::to_string(f->tensors().size()) + ": "))
        << *tensors_row;
    EXPECT_EQ(text_row(r.out, "metadata keys"), std::to_string(f->metadata().size()));
    // Without --tensors, no tensor is listed.
    EXPECT_EQ(r.out.find(std::string(f->tensors().front().name)), std::string::npos) << r.out;
  }
}

// The lines after the summary's blank line, one per tensor:
// NAME TYPE D0 x D1 ... OFFSET.
void expect_tensor_lines(const std::string& out, const GgufFile& f) {
  const size_t blank = out.find("\n\n");
  ASSERT_NE(blank, std::string::npos) << out;
  const std::vector<std::string> lines = split_lines(out.substr(blank + 2));
  ASSERT_EQ(lines.size(), f.tensors().size()) << out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(lines[i]);
    std::vector<std::string> expected = {std::string(t.name), std::string(t.type.name)};
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      if (d > 0) expected.push_back("x");
      expected.push_back(std::to_string(t.shape[d]));
    }
    expected.push_back(std::to_string(t.offset));
    EXPECT_EQ(split_words(lines[i]), expected);
  }
}

TEST(InspectText, TensorsFlagListsOneLinePerTensor) {
  QUIP_REQUIRE_SHARED();
  const auto files = testing::shared_files("models", ".gguf");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    auto f = GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    const std::vector<std::string> args = {"inspect", path.string(), "--tensors"};
    const RunResult r = run_quip(args);
    ASSERT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "");
    expect_tensor_lines(r.out, *f);
  }
}

// What quip computes beyond the plain transformer, as ../shared/archs's
// README describes each file, and why it cannot run one.
TEST(InspectText, ShowsHowQuipComputesTheModel) {
  QUIP_REQUIRE_SHARED();
  const auto archs = [](const char* file) {
    return (testing::shared_dir() / "archs" / file).string();
  };
  const RunResult g2 = run_quip({"inspect", archs("tiny-gemma2-e96-f16.gguf")});
  ASSERT_EQ(g2.status, kExitOk) << g2.err;
  EXPECT_EQ(text_row(g2.out, "runs"), "yes") << g2.out;
  EXPECT_TRUE(text_row(g2.out, "sliding window")
                  .value_or("")
                  .starts_with("16 positions on 2 of 4 layers (pattern 2;"))
      << g2.out;
  EXPECT_EQ(text_row(g2.out, "soft caps"), "attention 10, final 20") << g2.out;

  const RunResult g3 = run_quip({"inspect", archs("tiny-gemma3-e64-f16.gguf")});
  ASSERT_EQ(g3.status, kExitOk) << g3.err;
  EXPECT_EQ(text_row(g3.out, "sliding window"),
            "16 positions on 3 of 4 layers (pattern 3; rope base 10000, angles x 1)")
      << g3.out;
  EXPECT_EQ(text_row(g3.out, "soft caps"), std::nullopt) << g3.out;

  const RunResult json = run_quip({"inspect", "--json", archs("tiny-gemma2-e96-f16.gguf")});
  ASSERT_EQ(json.status, kExitOk) << json.err;
  const auto computed = nlohmann::json::parse(json.out).at("summary").at("computed");
  EXPECT_EQ(computed.at("runs"), true);
  EXPECT_EQ(computed.at("sliding_window").at("window"), 16);
  EXPECT_EQ(computed.at("attn_softcap"), 10.0);
  EXPECT_EQ(computed.at("final_softcap"), 20.0);

  const RunResult moe = run_quip({"inspect", archs("tiny-qwen3moe-e64-f16.gguf")});
  ASSERT_EQ(moe.status, kExitOk) << moe.err;
  EXPECT_EQ(text_row(moe.out, "experts"),
            "8, 2 per token, FFN 64 wide (weights: softmax over all experts, normalized)")
      << moe.out;
  EXPECT_EQ(text_row(moe.out, "attention sinks"), std::nullopt) << moe.out;

  const RunResult oss = run_quip({"inspect", archs("tiny-gpt-oss-e64-f16.gguf")});
  ASSERT_EQ(oss.status, kExitOk) << oss.err;
  EXPECT_EQ(text_row(oss.out, "experts"),
            "8, 2 per token, FFN 64 wide (weights: softmax over the chosen)")
      << oss.out;
  EXPECT_EQ(text_row(oss.out, "attention sinks"), "a logit per head") << oss.out;

  const RunResult mla = run_quip({"inspect", archs("tiny-deepseek2-e64-f16.gguf")});
  ASSERT_EQ(mla.status, kExitOk) << mla.err;
  EXPECT_EQ(text_row(mla.out, "experts"),
            "8, 2 per token, FFN 32 wide (weights: sigmoid of each, normalized, x 1.8), and a "
            "shared expert 32 wide; the first 1 layers dense")
      << mla.out;
  EXPECT_EQ(text_row(mla.out, "attention"),
            "latent: rank 64 plus 16 rotated per position; queries through rank 48; heads 48 "
            "wide for scores, 32 for values")
      << mla.out;

  // inspect reads any GGUF, and says why quip cannot run one.
  TempDir dir;
  GgufWriter w;
  w.set("general.architecture", std::string("mamba2"));
  ASSERT_TRUE(w.write((dir / "mamba2.gguf").string()).ok());
  const RunResult other = run_quip({"inspect", (dir / "mamba2.gguf").string()});
  ASSERT_EQ(other.status, kExitOk) << other.err;
  const std::string runs = text_row(other.out, "runs").value_or("");
  EXPECT_TRUE(runs.starts_with("no: ")) << other.out;
  EXPECT_NE(runs.find("mamba2"), std::string::npos) << other.out;
  EXPECT_NE(runs.find("not supported"), std::string::npos) << other.out;
}

// A hybrid file: its recurrent layers, their heads, and the state a
// sequence carries: 3 layers of (conv 3 x 512 + 4 heads of 64 x 64) floats.
TEST(InspectText, ShowsTheRecurrentLayers) {
  testing::TempDir dir;
  const std::string model = (dir.path() / "q35.gguf").string();
  ASSERT_TRUE(testing::synthesize(model, "tiny-qwen35", {}));
  const RunResult r = run_quip({"inspect", model});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  const uint64_t state = 3 * (3 * 512 + 4 * 64 * 64) * 4;
  EXPECT_EQ(text_row(r.out, "recurrent"),
            "Gated DeltaNet in 3 of 4 layers: 4 value heads over 2 key heads of 64, a "
            "convolution of 4 taps; state " +
                std::to_string(state) + " bytes per sequence")
      << r.out;
  const RunResult j = run_quip({"inspect", "--json", model});
  ASSERT_EQ(j.status, kExitOk) << j.err;
  const auto dn = nlohmann::json::parse(j.out).at("summary").at("computed").at("delta_net");
  EXPECT_EQ(dn.at("recurrent_layers"), 3);
  EXPECT_EQ(dn.at("state_bytes"), state);
}

// RoPE scaling is named by its kind: a YaRN file is not shown as linear.
TEST(InspectText, NamesTheRopeScaling) {
  testing::TempDir dir;
  const std::string yarn = (dir.path() / "yarn.gguf").string();
  const std::string linear = (dir.path() / "linear.gguf").string();
  ASSERT_TRUE(testing::synthesize(yarn, "tiny", {"--rope-scaling", "yarn:4:512"}));
  ASSERT_TRUE(testing::synthesize(linear, "tiny", {"--rope-scaling", "linear:4"}));
  const RunResult y = run_quip({"inspect", yarn});
  ASSERT_EQ(y.status, kExitOk) << y.err;
  EXPECT_TRUE(text_row(y.out, "rope scaling").value_or("").starts_with("yarn, angles x 0.25"))
      << y.out;
  const RunResult l = run_quip({"inspect", linear});
  ASSERT_EQ(l.status, kExitOk) << l.err;
  EXPECT_EQ(text_row(l.out, "rope scaling"), "linear, angles x 0.25, cos and sin x 1") << l.out;
  const RunResult j = run_quip({"inspect", "--json", yarn});
  ASSERT_EQ(j.status, kExitOk) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out).at("summary").at("computed").at("rope_scaling"), "yarn");
  // LongRoPE: Phi-3's factor tensors, and the context that chooses them.
  const std::string longrope = (dir.path() / "longrope.gguf").string();
  ASSERT_TRUE(testing::synthesize(longrope, "tiny-phi3", {"--rope-scaling", "longrope:1024"}));
  const RunResult lr = run_quip({"inspect", longrope});
  ASSERT_EQ(lr.status, kExitOk) << lr.err;
  const std::string row = text_row(lr.out, "rope scaling").value_or("");
  EXPECT_TRUE(row.starts_with("longrope, angles x 1, cos and sin x 1.1")) << lr.out;
  EXPECT_NE(row.find("short factors up to a context of 1024 tokens, long beyond"),
            std::string::npos)
      << row;
  const RunResult lj = run_quip({"inspect", "--json", longrope});
  ASSERT_EQ(lj.status, kExitOk) << lj.err;
  const auto computed = nlohmann::json::parse(lj.out).at("summary").at("computed");
  EXPECT_EQ(computed.at("rope_scaling"), "longrope");
  EXPECT_EQ(computed.at("rope_original_context"), 1024);
}

// glm4's NextN blocks: counted in the file, shown as not run.
TEST(InspectText, ShowsNextNBlocks) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "glm4.gguf").string();
  ASSERT_TRUE(testing::synthesize(path, "tiny-glm4", {"--nextn", "1"}));
  const RunResult r = run_quip({"inspect", path});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(text_row(r.out, "layers"), "3") << r.out;
  EXPECT_EQ(text_row(r.out, "nextn blocks"),
            "1 after the 2 layers, not run (multi-token prediction)")
      << r.out;
  const RunResult j = run_quip({"inspect", "--json", path});
  ASSERT_EQ(j.status, kExitOk) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out).at("summary").at("computed").at("nextn_blocks"), 1);
}

// mistral3's attention temperature, with the context it counts in.
TEST(InspectText, ShowsTheAttentionTemperature) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "mistral3.gguf").string();
  ASSERT_TRUE(testing::synthesize(path, "tiny-mistral3",
                                  {"--rope-scaling", "yarn:16:64", "--attn-temperature", "0.1"}));
  const RunResult r = run_quip({"inspect", path});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(text_row(r.out, "temperature"), "queries x 1 + 0.1 ln(floor(position / 64) + 1)")
      << r.out;
  const RunResult j = run_quip({"inspect", "--json", path});
  ASSERT_EQ(j.status, kExitOk) << j.err;
  const auto computed = nlohmann::json::parse(j.out).at("summary").at("computed");
  EXPECT_NEAR(computed.at("attn_temperature_scale").get<double>(), 0.1, 1e-7);
  EXPECT_EQ(computed.at("rope_scaling"), "yarn");
}

TEST(InspectText, WrittenFileShowsItsValues) {
  TempDir dir;
  const fs::path path = dir / "every-type.gguf";
  auto written = every_value_type_writer().write(path.string());
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto f = GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;

  const std::vector<std::string> args = {"inspect", "--tensors", path.string()};
  const RunResult r = run_quip(args);
  ASSERT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(text_row(r.out, "architecture"), "testarch") << r.out;
  EXPECT_EQ(text_row(r.out, "layers"), "3") << r.out;
  EXPECT_EQ(text_row(r.out, "embedding size"), "48") << r.out;
  EXPECT_EQ(text_row(r.out, "heads"), "6 (KV heads 6)") << r.out;
  EXPECT_EQ(text_row(r.out, "head size"), "8") << r.out;
  EXPECT_EQ(text_row(r.out, "metadata keys"), "39") << r.out;
  const std::vector<std::string> tensor_lines = split_lines(r.out.substr(r.out.find("\n\n") + 2));
  ASSERT_EQ(tensor_lines.size(), 3u) << r.out;
  EXPECT_EQ(split_words(tensor_lines[0]),
            (std::vector<std::string>{"weights.f32", "F32", "4", "x", "2", "0"}));
  EXPECT_EQ(split_words(tensor_lines[1]),
            (std::vector<std::string>{"weights.q8_0", "Q8_0", "32", "x", "3", "64"}));
  EXPECT_EQ(split_words(tensor_lines[2]),
            (std::vector<std::string>{"weights.f16", "F16", "8", "x", "1", "x", "2", "192"}));
  expect_tensor_lines(r.out, *f);
}

// ---- Unusable files: exit 3, one line on stderr naming the file -------------

void expect_bad_data(const fs::path& path) {
  for (const bool json : {false, true}) {
    std::vector<std::string> args = {"inspect", path.string()};
    if (json) args.push_back("--json");
    const RunResult r = testing::expect_failure(args, kExitBadData);
    EXPECT_NE(r.err.find(path.string()), std::string::npos) << describe(args, r);
  }
}

TEST(InspectErrors, MissingFileExits3) {
  TempDir dir;
  expect_bad_data(dir / "no-such-model.gguf");
}

TEST(InspectErrors, BadMagicExits3) {
  TempDir dir;
  std::vector<std::byte> bytes = small_valid_file();
  bytes[0] = std::byte{'X'};
  write_bytes(dir / "bad-magic.gguf", bytes);
  expect_bad_data(dir / "bad-magic.gguf");
}

TEST(InspectErrors, OtherBrokenFilesExit3) {
  TempDir dir;
  const std::vector<std::byte> valid = small_valid_file();

  write_bytes(dir / "empty.gguf", {});
  expect_bad_data(dir / "empty.gguf");

  write_bytes(dir / "truncated.gguf", std::vector<std::byte>(valid.begin(), valid.begin() + 20));
  expect_bad_data(dir / "truncated.gguf");

  std::vector<std::byte> no_data(valid.begin(), valid.end() - 8);  // the tensor's last 8 bytes
  write_bytes(dir / "short-data.gguf", no_data);
  expect_bad_data(dir / "short-data.gguf");

  std::vector<std::byte> bad_version = valid;
  bad_version[4] = std::byte{99};
  write_bytes(dir / "bad-version.gguf", bad_version);
  expect_bad_data(dir / "bad-version.gguf");

  GgufWriter bad_type;
  bad_type.add_tensor("t", 4, {4}, std::vector<std::byte>(16, std::byte{0}));  // removed Q4_2
  auto written = bad_type.write((dir / "bad-type.gguf").string());
  ASSERT_TRUE(written.ok()) << written.error().message;
  expect_bad_data(dir / "bad-type.gguf");

  fs::create_directories(dir / "a-directory.gguf");
  expect_bad_data(dir / "a-directory.gguf");
}

// The valid file the broken ones start from really is valid.
TEST(InspectErrors, TheUnbrokenFileOpens) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  const std::vector<std::string> args = {"inspect", (dir / "valid.gguf").string()};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
}

// ---- Usage: exit 2 and one line on stderr; --help on stdout, exit 0 ---------

void expect_usage_error(const std::vector<std::string>& args) {
  testing::expect_failure(args, kExitUsage);
}

TEST(InspectUsage, UnknownOptionExits2) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  expect_usage_error({"inspect", "--no-such-option", (dir / "valid.gguf").string()});
  expect_usage_error({"inspect", (dir / "valid.gguf").string(), "--jsn"});
}

TEST(InspectUsage, MissingFileArgumentExits2) {
  expect_usage_error({"inspect"});
  expect_usage_error({"inspect", "--json"});
}

TEST(InspectUsage, TwoFilesExit2) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  expect_usage_error({"inspect", (dir / "valid.gguf").string(), (dir / "valid.gguf").string()});
}

TEST(InspectUsage, HelpPrintsUsageOnStdout) {
  const std::vector<std::string> args = {"inspect", "--help"};
  const RunResult r = run_quip(args);
  EXPECT_EQ(r.status, kExitOk) << describe(args, r);
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--tensors"), std::string::npos) << r.out;
}

// A word that is not a command is a prompt: without a model that is a
// usage error naming what is missing.
TEST(InspectCli, PromptWithoutModelExits2) {
  const std::vector<std::string> args = {"nosuchcommand"};
  const RunResult r = testing::expect_failure(args, kExitUsage);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

TEST(InspectCli, NoCommandExits2) {
  expect_usage_error({});
}

TEST(InspectCli, HelpListsInspect) {
  for (const char* help : {"--help", "-h"}) {
    const std::vector<std::string> args = {help};
    const RunResult r = run_quip(args);
    EXPECT_EQ(r.status, kExitOk) << describe(args, r);
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
  }
}

// ---- Output that cannot be written, values JSON cannot hold -----------------

TEST(InspectOutput, FullDiskIsAFailureWithOneLine) {
  TempDir dir;
  write_bytes(dir / "valid.gguf", small_valid_file());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", (dir / "valid.gguf").string()},
        std::vector<std::string>{"inspect", "--help"}, std::vector<std::string>{"--help"}}) {
    const RunResult r = run_quip(args, {.stdin_from = "/dev/null", .stdout_to = "/dev/full"});
    EXPECT_EQ(r.status, kExitFailure) << describe(args, r);
    EXPECT_EQ(count_lines(r.err), 1u) << describe(args, r);
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  }
}

TEST(InspectOutput, PathWithNewlineStaysOnOneLine) {
  TempDir dir;
  const fs::path path = dir / "two\nlines.gguf";
  write_bytes(path, {std::byte{'x'}});
  const std::vector<std::string> args = {"inspect", path.string()};
  const RunResult r = testing::expect_failure(args, kExitBadData);
  EXPECT_NE(r.err.find("two\\x0Alines.gguf"), std::string::npos) << r.err;
}

TEST(InspectOutput, NonFiniteFloatsAreNamedNotNull) {
  TempDir dir;
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("v.nan", std::numeric_limits<float>::quiet_NaN());
  w.set("v.inf", std::numeric_limits<double>::infinity());
  w.set("v.ninf", -std::numeric_limits<float>::infinity());
  w.set("v.list", make_array(std::vector<float>{1.0f, std::numeric_limits<float>::infinity()}));
  ASSERT_TRUE(w.write((dir / "nan.gguf").string()).ok());
  const OrderedJson j = inspect_json(dir / "nan.gguf");
  const OrderedJson& m = j.at("metadata");
  EXPECT_EQ(m.at("v.nan"), "NaN");
  EXPECT_EQ(m.at("v.inf"), "Infinity");
  EXPECT_EQ(m.at("v.ninf"), "-Infinity");
  EXPECT_EQ(m.at("v.list"), OrderedJson::parse(R"([1.0, "Infinity"])"));
}

TEST(InspectOutput, KeysDifferingInInvalidBytesStayDistinct) {
  TempDir dir;
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("k\xff", uint8_t{1});
  w.set("k\xfe", uint8_t{2});
  ASSERT_TRUE(w.write((dir / "keys.gguf").string()).ok());
  const OrderedJson j = inspect_json(dir / "keys.gguf");
  EXPECT_EQ(j.at("n_kv"), 3);
  EXPECT_EQ(j.at("metadata").size(), 3u);
  EXPECT_EQ(j.at("metadata").at("k\\xFF"), 1);
  EXPECT_EQ(j.at("metadata").at("k\\xFE"), 2);
}

}  // namespace
}  // namespace quip::cli
