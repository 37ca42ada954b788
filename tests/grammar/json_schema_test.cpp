// JSON Schema -> GBNF: a catalogue of schemas the converter must refuse (each
// with the keyword and place its message names), and a corpus of schemas
// (tests/data/json_schemas) whose grammars must match their valid instances
// and refuse their invalid ones. check_json_schemas.py checks the corpus's
// labels with Python's jsonschema, so they do not rest on this converter.
#include "grammar/json_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "support/shared.h"

namespace quip::grammar {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

struct BrokenSchema {
  const char* schema;
  const char* message;  // a substring of the error
};

// Each names what is wrong and where (a JSON pointer, or "the root").
const BrokenSchema kBroken[] = {
    {R"j({"properties": {"tags": {"patternProperties": {"a": {}}}}})j",
     "unsupported keyword 'patternProperties' at /properties/tags"},
    {R"j({"not": {"type": "null"}})j", "unsupported keyword 'not' at the root"},
    {R"j({"type": "integer", "multipleOf": 2})j", "unsupported keyword 'multipleOf' at the root"},
    {R"j({"type": "strin"})j", "unknown type 'strin' at the root"},
    {R"j({"type": ["string", "string"]})j", "type 'string' listed twice at the root"},
    {R"j({"type": []})j", "keyword 'type' at the root must be a type name"},
    {R"j({"$ref": "#/$defs/missing"})j", "'$ref' '#/$defs/missing' points to nothing at the root"},
    {R"j({"items": {"$ref": "https://example.com/s.json"}})j",
     "external '$ref' 'https://example.com/s.json' is not supported"},
    {R"j({"$ref": "#node"})j", "names an anchor; anchors are not supported at the root"},
    {R"j({"$ref": "#/$defs/%zz"})j", "malformed %-escape"},
    {R"j({"type": "string", "pattern": "(ab"})j", "unterminated group '(' at offset 0"},
    {R"j({"pattern": "a(?=b)"})j", "lookahead is not supported at offset 1"},
    {R"j({"pattern": "(?<!a)b"})j", "lookbehind is not supported at offset 0"},
    {R"j({"pattern": "(a)\\1"})j", "backreferences are not supported at offset 3"},
    {R"j({"pattern": "\\bword"})j", "the word boundary '\\b' is not supported"},
    {R"j({"pattern": "(?i)abc"})j",
     "this '(?' group (flags or another extension) is not supported"},
    {R"j({"pattern": "a{3,1}"})j", "repetition bounds out of order at offset 1"},
    {R"j({"pattern": "a^b"})j", "'^' is only supported at the start of the pattern"},
    {R"j({"pattern": "(a$)"})j", "'$' is only supported at the end of the pattern"},
    {R"j({"pattern": "\\p{L}"})j", "Unicode property escapes are not supported"},
    {R"j({"pattern": "[z-a]"})j", "a class range out of order"},
    {R"j({"pattern": "*a"})j", "a repetition of nothing at offset 0"},
    {R"j({"pattern": "a**"})j", "a repetition of a repetition"},
    {R"j({"properties": {"p": {"pattern": "[]"}}})j",
     "unsupported pattern '[]': an empty class ('[]' or '[^]') is not supported at offset 0 at "
     "/properties/p"},
    {R"j({"format": "ipv4"})j", "unsupported format 'ipv4' at the root"},
    {R"j({"type": "array", "minItems": 3, "maxItems": 2})j",
     "'minItems' is greater than 'maxItems' at the root"},
    {R"j({"type": "string", "minLength": 5, "maxLength": 2})j",
     "'minLength' is greater than 'maxLength' at the root"},
    {R"j({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})j",
     "'minItems' asks for more items than 'items': false allows"},
    {"false", "the schema 'false' accepts nothing at the root"},
    {R"j({"properties": {"a": {"anyOf": [false]}}})j",
     "the schema 'false' accepts nothing at /properties/a/anyOf/0"},
    {"3", "a schema must be an object or a boolean, not number at the root"},
    {R"j(["type", "string"])j", "a schema must be an object or a boolean, not array"},
    {R"j({"required": 3})j", "keyword 'required' at the root must be an array of strings"},
    {R"j({"minLength": -1})j", "keyword 'minLength' at the root must be a non-negative integer"},
    {R"j({"maxItems": 1.5})j", "keyword 'maxItems' at the root must be a non-negative integer"},
    {R"j({"items": [{"type": "string"}]})j", "keyword 'items' at the root must be a schema"},
    {R"j({"anyOf": []})j", "keyword 'anyOf' at the root must be a non-empty array of schemas"},
    {R"j({"properties": {"a": 1}})j",
     "keyword 'properties' at the root must be an object of schemas"},
    {R"j({"uniqueItems": "yes"})j", "keyword 'uniqueItems' at the root must be a boolean"},
    {R"j({"minimum": "0"})j", "keyword 'minimum' at the root must be a number"},
    {R"j({"properties": {"a/b": {"type": "foo"}}})j", "unknown type 'foo' at /properties/a~1b"},
    {R"j({"properties": {"a": {"$id": "https://example.com/a"}}})j",
     "keyword '$id' at /properties/a is only supported at the root"},
    {R"j({"properties": {"n": {"type": "number", "minimum": 0}}})j",
     "unsupported keyword 'minimum' for numbers (bounds work for integers only) at /properties/n"},
    {R"j({"type": "integer", "minimum": 10, "maximum": 5})j",
     "the integer bounds leave no integer of at most 16 digits at the root"},
    {R"j({"type": "integer", "minimum": 1e20})j", "the integer bounds leave no integer"},
    {R"j({"type": "array", "uniqueItems": true})j", "unsupported keyword 'uniqueItems' (true)"},
    {R"j({"allOf": [{"type": "string"}, {"minLength": 1}]})j",
     "unsupported keyword 'allOf' with more than one schema at the root"},
    {R"j({"type": "string", "anyOf": [{"minLength": 1}]})j",
     "unsupported keyword 'type' beside 'anyOf' at the root"},
    {R"j({"$ref": "#/$defs/a", "type": "object", "$defs": {"a": {}}})j",
     "unsupported keyword 'type' beside '$ref' at the root"},
    {R"j({"enum": [1, 2], "minimum": 0})j", "unsupported keyword 'minimum' beside 'enum'"},
    {R"j({"enum": [1, 2], "type": "string"})j", "no value of 'enum' is allowed"},
    {R"j({"const": 1, "type": "string"})j", "the value of 'const' is not allowed by 'type'"},
    {R"j({"type": "string", "pattern": "a", "maxLength": 3})j",
     "unsupported keyword 'minLength/maxLength' beside 'pattern'"},
    {R"j({"type": "string", "format": "date", "pattern": "a"})j",
     "unsupported keyword 'format' beside 'pattern'"},
    {R"j({"type": "object", "required": ["x"], "additionalProperties": false})j",
     "required property 'x' is forbidden by 'additionalProperties': false at the root"},
    {R"j({"properties": {"x": false}, "required": ["x"]})j",
     "required property 'x' has the schema 'false'"},
    {R"j({"type": "string", "maxLength": 200000000})j", "repetition count above"},
    {R"j({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}},
         "$ref": "#/$defs/a"})j",
     "a '$ref' cycle that matches no text before coming back (left recursion) at /$defs/a"},
    {R"j({"$ref": "#"})j", "(left recursion) at the root"},
};

TEST(JsonSchemaErrors, EachBrokenSchemaIsRefusedWithItsKeywordAndPlace) {
  EXPECT_GE(std::size(kBroken), 20u);
  for (const BrokenSchema& b : kBroken) {
    SCOPED_TRACE(b.schema);
    const Result<std::string> r = json_schema_to_gbnf(Json::parse(b.schema));
    ASSERT_FALSE(r.ok()) << *r;
    EXPECT_THAT(r.error().message, HasSubstr(b.message));
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << "one line";
  }
}

TEST(JsonSchemaErrors, SchemasNestedTooDeeplyAreRefusedNotOverflowed) {
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += R"({"items": )";
  deep += "{}";
  for (int i = 0; i < 2000; ++i) deep += "}";
  const Result<std::string> r = json_schema_to_gbnf(Json::parse(deep));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("nested deeper than"));
}

std::shared_ptr<const Grammar> compile_schema(const Json& schema) {
  const Result<std::string> gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << gbnf.error().message;
  if (!gbnf.ok()) return nullptr;
  auto g = compile_gbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.error().message << "\n" << *gbnf;
  return g.ok() ? *g : nullptr;
}

std::filesystem::path corpus_dir() {
  return std::filesystem::path(QUIP_TEST_DATA_DIR) / "json_schemas";
}

// Serialisations the grammar must accept for a valid instance: compact, and
// pretty-printed (newlines, two-space indentation, a space after ':').
std::vector<std::string> spellings(const Json& v) {
  return {v.dump(), v.dump(2)};
}

TEST(JsonSchemaCorpus, GrammarsMatchValidInstancesAndRefuseInvalidOnes) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(corpus_dir())) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 30u);
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream in(path);
    const Json c = Json::parse(in);
    const auto g = compile_schema(c.at("schema"));
    if (!g) continue;
    for (const Json& v : c.at("valid")) {
      for (const std::string& text : spellings(v)) EXPECT_TRUE(matches(*g, text)) << text;
    }
    for (const Json& v : c.at("invalid")) {
      for (const std::string& text : spellings(v)) EXPECT_FALSE(matches(*g, text)) << text;
    }
  }
}

TEST(JsonSchemaCorpus, ValidInstancesArePrefixesAllTheWay) {
  // The sampler relies on is_prefix: every prefix of a valid text must be
  // one, or generation would dead-end inside a valid answer.
  std::ifstream in(corpus_dir() / "nested_objects.json");
  const Json c = Json::parse(in);
  const auto g = compile_schema(c.at("schema"));
  ASSERT_TRUE(g);
  const std::string text = c.at("valid").at(0).dump(2);
  for (size_t n = 0; n <= text.size(); ++n) {
    EXPECT_TRUE(is_prefix(*g, text.substr(0, n))) << text.substr(0, n);
  }
  EXPECT_FALSE(is_prefix(*g, R"({"person": {"namx)"));  // no property starts so
}

TEST(JsonSchemaCorpus, WhiteSpaceIsBounded) {
  const auto g = compile_schema(Json::parse(R"({"type": "array", "items": {"type": "integer"}})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "[1, 2]"));
  EXPECT_TRUE(matches(*g, "[\n  1,\n  2\n]"));
  EXPECT_FALSE(matches(*g, "[1,  2]"));                              // two spaces
  EXPECT_FALSE(matches(*g, "[1,\n" + std::string(21, ' ') + "2]"));  // deeper than 20
  EXPECT_FALSE(matches(*g, " [1]"));                                 // nothing before the value
  EXPECT_FALSE(matches(*g, "[1] "));                                 // nor after it
  EXPECT_FALSE(matches(*g, "[1 ,2]"));                               // nor before a comma
}

TEST(JsonSchemaCorpus, UnorderedJsonPutsPropertiesInNameOrder) {
  const nlohmann::json schema = nlohmann::json::parse(
      R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
          "required": ["a", "b"], "additionalProperties": false})");
  const Result<std::string> gbnf = json_schema_to_gbnf(schema);
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  auto g = compile_gbnf(*gbnf);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(matches(**g, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(**g, R"({"b":2,"a":1})"));
  // The ordered form keeps the schema's order.
  const auto ordered = compile_schema(Json::parse(schema.dump()));
  ASSERT_TRUE(ordered);
  EXPECT_TRUE(matches(*ordered, R"({"a":1,"b":2})"));  // dump() sorted the keys too
}

TEST(JsonSchemaCorpus, StringsTakeEveryJsonSpellingAndCountCharacters) {
  const auto g =
      compile_schema(Json::parse(R"({"type": "string", "minLength": 2, "maxLength": 2})"));
  ASSERT_TRUE(g);
  for (const char* ok : {R"("ab")", R"("\u0061\u00E9")", R"("\ud83d\ude00x")", R"("\"\\")",
                         R"("\/\b")", "\"\xC3\xA9\xF0\x9F\x98\x80\""}) {
    EXPECT_TRUE(matches(*g, ok)) << ok;
  }
  for (const char* bad : {R"("a")", R"("abc")", R"("\ud83dx")", R"("\ude00x")", "\"a\x01\"",
                          R"("\x41b")", R"("\u00G0")"}) {
    EXPECT_FALSE(matches(*g, bad)) << bad;
  }
}

// Runs check_json_schemas.py with the first Python that has jsonschema and
// rfc3339-validator (its date-time and time checkers need it).
TEST(JsonSchemaLabels, AgreeWithPythonJsonschema) {
  const std::string python = quip::testing::python_with_jsonschema();
  if (python.empty()) {
    if (std::getenv("CI") != nullptr) {
      FAIL() << "no python3 with jsonschema and rfc3339-validator (CI is set)";
    }
    GTEST_SKIP() << "no python3 with jsonschema and rfc3339-validator";
  }
  const std::filesystem::path script =
      std::filesystem::path(QUIP_TEST_DATA_DIR) / ".." / "grammar" / "check_json_schemas.py";
  const std::string command =
      python + " '" + script.string() + "' '" + corpus_dir().string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) output.append(buf.data(), n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr(" 0 mismatches"));
}

}  // namespace
}  // namespace quip::grammar
