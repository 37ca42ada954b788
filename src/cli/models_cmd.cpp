#include "cli/models_cmd.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/text.h"
#include "cli/exit_status.h"
#include "cli/inspect.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "gguf/fingerprint.h"
#include "gguf/keys.h"
#include "gguf/reader.h"
#include "session/loaded_model.h"
#include "session/model_stores.h"

namespace quip::cli {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using session::Store;
using session::StoreModel;

struct Name {
  std::string name;  // as -m takes it
  Store store;
  fs::path file;
};

// One model file and what it holds; each fact absent when it cannot be read.
struct Entry {
  std::vector<Name> names;
  uint64_t size = 0;  // bytes, of all its parts
  std::string fingerprint;
  std::optional<std::string> architecture, file_type;
  std::optional<uint64_t> parameters, context_length;
  bool chat_template = false;
  bool runs = false;
  std::string why_not;  // when it does not run (or cannot be read)
};

// The error without the file name in front, which the entry shows already.
std::string without_file(std::string message, const fs::path& file) {
  const std::string prefix = printable(file.string(), 4096) + ": ";
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  return message;
}

Entry describe(const StoreModel& m) {
  namespace k = gguf::keys;
  Entry e;
  std::error_code ec;
  e.size = fs::file_size(m.path, ec);
  auto f = gguf::GgufFile::open(m.path.string());
  if (!f) {
    e.why_not = without_file(f.error().message, m.path);
    return e;
  }
  e.size = f->total_size();
  e.fingerprint = gguf::fingerprint(*f);
  if (auto a = f->get<std::string_view>(k::kArchitecture)) e.architecture = std::string(*a);
  if (auto t = f->get_uint(k::kFileType)) e.file_type = file_type_name(*t);
  if (e.architecture) {
    if (auto n = f->get_uint(k::arch_key(*e.architecture, k::kContextLength))) {
      e.context_length = *n;
    }
  }
  uint64_t params = 0;
  for (const gguf::TensorInfo& t : f->tensors()) params += t.n_elements;
  e.parameters = params;
  e.chat_template = f->find(k::kChatTemplate) != nullptr;
  if (auto r = session::check_runnable(*f)) {
    e.runs = true;
  } else {
    e.why_not = without_file(r.error().message, m.path);
  }
  return e;
}

Json optional_json(const std::optional<std::string>& v) {
  return v ? Json(*v) : Json(nullptr);
}
Json optional_json(const std::optional<uint64_t>& v) {
  return v ? Json(*v) : Json(nullptr);
}

void print_json(const std::vector<Entry>& entries, const session::StoreRoots& roots,
                std::ostream& out) {
  Json stores = Json::array();
  for (Store s : session::kStores) {
    const fs::path& root = roots.of(s);
    std::error_code ec;
    stores.push_back({{"store", session::store_title(s)},
                      {"folder", root.empty() ? Json(nullptr) : Json(root.string())},
                      {"exists", !root.empty() && fs::is_directory(root, ec)}});
  }
  Json models = Json::array();
  for (const Entry& e : entries) {
    Json names = Json::array();
    for (const Name& n : e.names) {
      names.push_back(
          {{"name", n.name}, {"store", session::store_title(n.store)}, {"file", n.file.string()}});
    }
    models.push_back({{"name", e.names[0].name},
                      {"store", session::store_title(e.names[0].store)},
                      {"file", e.names[0].file.string()},
                      {"names", std::move(names)},
                      {"size", e.size},
                      {"fingerprint", e.fingerprint.empty() ? Json(nullptr) : Json(e.fingerprint)},
                      {"architecture", optional_json(e.architecture)},
                      {"parameters", optional_json(e.parameters)},
                      {"file_type", optional_json(e.file_type)},
                      {"context_length", optional_json(e.context_length)},
                      {"chat_template", e.chat_template},
                      {"runs", e.runs},
                      {"why_not", e.runs ? Json(nullptr) : Json(e.why_not)}});
  }
  const Json j = {{"stores", std::move(stores)}, {"models", std::move(models)}};
  out << terminal_safe_json(j.dump(2, ' ', false, Json::error_handler_t::replace)) << '\n';
}

void print_text(const std::vector<Entry>& entries, const session::StoreRoots& roots,
                std::ostream& out) {
  if (entries.empty()) {
    out << "No models found in:\n";
    for (Store s : session::kStores) {
      const fs::path& root = roots.of(s);
      std::error_code ec;
      out << "  " << session::store_title(s) << ": "
          << (root.empty() ? std::string("no folder (HOME is not set)")
                           : printable(root.string(), 4096) +
                                 (fs::is_directory(root, ec) ? "" : " (absent)"))
          << '\n';
    }
    return;
  }
  bool first = true;
  for (const Entry& e : entries) {
    if (!first) out << '\n';
    first = false;
    const Name& n = e.names[0];
    out << printable(n.name, 4096) << " (" << session::store_title(n.store) << ")\n";
    out << "  file      " << printable(n.file.string(), 4096) << '\n';
    for (size_t i = 1; i < e.names.size(); ++i) {
      out << "  also      " << printable(e.names[i].name, 4096) << " ("
          << session::store_title(e.names[i].store)
          << "): " << printable(e.names[i].file.string(), 4096) << '\n';
    }
    if (e.architecture || e.parameters) {
      std::string what = e.architecture ? printable(*e.architecture, 4096) : std::string("-");
      if (e.parameters) what += ", " + human_count(*e.parameters) + " parameters";
      if (e.file_type) what += ", " + *e.file_type;
      if (e.context_length) what += ", context " + std::to_string(*e.context_length);
      what += e.chat_template ? ", chat template" : ", no chat template";
      out << "  model     " << what << '\n';
    }
    out << "  size      " << human_bytes(e.size) << '\n';
    out << "  runs      " << (e.runs ? std::string("yes") : "no: " + printable(e.why_not, 4096))
        << '\n';
  }
}

}  // namespace

int models_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "List the GGUF models that Ollama, the Hugging Face cache, LM Studio and llama.cpp's cache "
      "hold, by the names 'quip -m' takes.",
      "quip models"};
  bool json = false;
  app.add_flag("--json", json, "print one JSON object: the stores' folders and the models");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  const session::StoreRoots roots = session::store_roots();
  std::vector<Entry> entries;
  // Entries by size and fingerprint: the same file in two stores is one.
  std::map<std::pair<uint64_t, std::string>, size_t> seen;
  for (const StoreModel& m : session::list_stores(roots)) {
    Entry e = describe(m);
    const Name name{session::usable_name(m, roots), m.store, m.path};
    if (!e.fingerprint.empty()) {
      auto [it, inserted] = seen.emplace(std::make_pair(e.size, e.fingerprint), entries.size());
      if (!inserted) {
        entries[it->second].names.push_back(name);
        continue;
      }
    }
    e.names.push_back(name);
    entries.push_back(std::move(e));
  }
  if (json) {
    print_json(entries, roots, out);
  } else {
    print_text(entries, roots, out);
  }
  return kExitOk;
}

}  // namespace quip::cli
