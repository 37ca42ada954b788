#include "session/model_stores.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/text.h"

namespace quip::session {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && lower(a) == lower(b);
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // through links, as the hub cache makes them
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The entries of `dir` (files and folders, links followed), sorted by name;
// empty when it cannot be read.
std::vector<fs::directory_entry> entries(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(*it);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return out;
}

// dir/name, or the entry of dir whose name equals it ignoring case (Ollama
// compares names so, and older versions wrote them in lower case).
std::optional<fs::path> child_ignoring_case(const fs::path& dir, std::string_view name) {
  std::error_code ec;
  if (fs::exists(dir / name, ec)) return dir / name;
  for (const fs::directory_entry& e : entries(dir)) {
    if (iequals(e.path().filename().string(), name)) return e.path();
  }
  return std::nullopt;
}

// A small text file (a manifest, a ref), or nullopt when it cannot be read
// or is larger than `limit`.
std::optional<std::string> read_small(const fs::path& p, uintmax_t limit = 1 << 20) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(p, ec);
  if (ec || size > limit) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (!in.good() && !in.eof()) return std::nullopt;
  return s.str();
}

bool is_hex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

// A relative path inside a repository: no empty, "." or ".." component and
// no backslash, so that it never leaves the folder it is joined to.
bool valid_relative_path(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.find('\\') != std::string_view::npos) return false;
  size_t begin = 0;
  while (true) {
    const size_t slash = p.find('/', begin);
    const std::string_view part = p.substr(begin, slash - begin);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string_view::npos) {
      return false;
    }
    if (slash == std::string_view::npos) return true;
    begin = slash + 1;
  }
}

// A Hugging Face repository id as the hub (and llama.cpp) allow it:
// [A-Za-z0-9_] and the separators / . - between them, one '/'.
bool valid_repo_id(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  int slashes = 0;
  bool after_separator = true;
  for (char c : id) {
    if (is_alnum(c) || c == '_') {
      after_separator = false;
    } else if (c == '/' || c == '.' || c == '-') {
      if (after_separator) return false;
      slashes += c == '/' ? 1 : 0;
      after_separator = true;
    } else {
      return false;
    }
  }
  return !after_separator && slashes == 1;
}

std::string_view file_name_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Whether a file in a repository is a model rather than a projector, an
// importance matrix, a draft model or a later part of a split (llama.cpp's
// rule for choosing among a repository's files).
bool is_model_file(std::string_view path) {
  const std::string_view name = file_name_of(path);
  if (name.size() < 5 || lower(name.substr(name.size() - 5)) != ".gguf") return false;
  for (std::string_view not_model :
       {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"}) {
    if (lower(name).find(not_model) != std::string::npos) return false;
  }
  const std::optional<SplitName> split = split_name(name);
  return !split || split->index == 1;
}

// Whether `path` holds `quant` followed by '.' or '-', ignoring case.
bool holds_quant(std::string_view path, std::string_view quant) {
  const std::string p = lower(path), q = lower(quant);
  for (size_t at = p.find(q); at != std::string::npos; at = p.find(q, at + 1)) {
    const size_t end = at + q.size();
    if (end < p.size() && (p[end] == '.' || p[end] == '-')) return true;
  }
  return false;
}

// The model among `files` (sorted) that `quant` names; with no quant,
// Q4_K_M, then Q8_0, then the first model.
std::optional<std::string> pick_model(const std::vector<std::string>& files,
                                      std::string_view quant) {
  std::vector<std::string_view> quants;
  if (quant.empty()) {
    quants = {"Q4_K_M", "Q8_0"};
  } else {
    quants = {quant};
  }
  for (std::string_view q : quants) {
    for (const std::string& f : files) {
      if (is_model_file(f) && holds_quant(f, q)) return f;
    }
  }
  if (quant.empty()) {
    for (const std::string& f : files) {
      if (is_model_file(f)) return f;
    }
  }
  return std::nullopt;
}

// The files under `dir` (links included), as paths relative to it, sorted.
std::vector<std::string> files_under(const fs::path& dir, bool recursive) {
  std::vector<std::string> out;
  std::error_code ec;
  if (recursive) {
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec) || it->is_symlink(ec)) {
        out.push_back(it->path().lexically_relative(dir).generic_string());
      }
    }
  } else {
    for (const fs::directory_entry& e : entries(dir)) {
      if (e.is_regular_file(ec) || e.is_symlink(ec)) out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What a store's lookup gives: a file, nothing, or a problem to report.
struct Match {
  std::optional<fs::path> path;
  std::string name;  // the store's own name for it
  std::optional<std::string> problem;
};

Match found(fs::path path, std::string name) {
  Match m;
  m.path = std::move(path);
  m.name = std::move(name);
  return m;
}

Match problem(std::string message) {
  Match m;
  m.problem = std::move(message);
  return m;
}

// An Ollama name with its defaults filled in.
struct OllamaName {
  std::string host = "registry.ollama.ai", ns = "library", model, tag = "latest";
};

// A part of an Ollama name: a letter, digit or '_' first, then those, '-'
// and '.' (and ':' in a host, for a port).
bool valid_ollama_part(std::string_view s, bool host) {
  if (s.empty() || s.size() > 350 || !(is_alnum(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return is_alnum(c) || c == '_' || c == '-' || c == '.' || (host && c == ':');
  });
}

std::optional<OllamaName> parse_ollama(std::string_view name) {
  if (name.find('@') != std::string_view::npos) return std::nullopt;  // a digest: not a tag
  OllamaName n;
  std::string_view base = name;
  const size_t slash = name.rfind('/'), colon = name.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    n.tag = std::string(name.substr(colon + 1));
    base = name.substr(0, colon);
  }
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    const size_t s = base.find('/', begin);
    parts.emplace_back(base.substr(begin, s - begin));
    if (s == std::string_view::npos) break;
    begin = s + 1;
  }
  if (parts.size() == 1) {
    n.model = parts[0];
  } else if (parts.size() == 2) {
    n.ns = parts[0], n.model = parts[1];
  } else if (parts.size() == 3) {
    n.host = parts[0], n.ns = parts[1], n.model = parts[2];
  } else {
    return std::nullopt;
  }
  if (!valid_ollama_part(n.host, true) || !valid_ollama_part(n.ns, false) ||
      !valid_ollama_part(n.model, false) || !valid_ollama_part(n.tag, false) || n.tag.size() > 80) {
    return std::nullopt;
  }
  return n;
}

// As `ollama list` shows it: the default registry and namespace left out.
std::string ollama_display(const OllamaName& n) {
  std::string s;
  if (!iequals(n.host, "registry.ollama.ai")) {
    s = n.host + "/" + n.ns + "/";
  } else if (!iequals(n.ns, "library")) {
    s = n.ns + "/";
  }
  return s + n.model + ":" + n.tag;
}

constexpr std::string_view kOllamaModelLayer = "application/vnd.ollama.image.model";

// The blob a manifest's model layer names.
Result<fs::path> ollama_blob(const fs::path& root, const fs::path& manifest) {
  const std::string where = printable(manifest.string(), 4096);
  auto text = read_small(manifest);
  if (!text) return Error{where + ": cannot read the manifest"};
  auto digest = ollama_model_digest(*text);
  if (!digest) return digest.error().with_context(where);
  const fs::path blob = root / "blobs" / ("sha256-" + *digest);
  if (!is_file(blob)) {
    return Error{where + ": its model blob " + printable(blob.string(), 4096) + " is missing"};
  }
  return blob;
}

Match find_ollama(std::string_view name, const fs::path& root) {
  const std::optional<OllamaName> n = parse_ollama(name);
  if (!n) return {};
  fs::path at = root / "manifests";
  for (const std::string& part : {n->host, n->ns, n->model, n->tag}) {
    const std::optional<fs::path> next = child_ignoring_case(at, part);
    if (!next) return {};
    at = *next;
  }
  if (!is_file(at)) return {};
  auto blob = ollama_blob(root, at);
  if (!blob) return problem(blob.error().message);
  return found(*blob, ollama_display(*n));
}

void list_ollama(const fs::path& root, std::vector<StoreModel>& out) {
  const fs::path manifests = root / "manifests";
  for (const auto& host : entries(manifests)) {
    for (const auto& ns : entries(host.path())) {
      for (const auto& model : entries(ns.path())) {
        for (const auto& tag : entries(model.path())) {
          OllamaName n{host.path().filename().string(), ns.path().filename().string(),
                       model.path().filename().string(), tag.path().filename().string()};
          if (!is_file(tag.path())) continue;
          auto blob = ollama_blob(root, tag.path());
          if (blob) out.push_back({Store::Ollama, ollama_display(n), *blob});
        }
      }
    }
  }
}

// A name in the hub layout (Hugging Face's cache, llama.cpp's newer one, and
// LM Studio's folders, which mirror its repositories).
struct HubName {
  std::string repo;      // ORG/REPO
  std::string revision;  // a branch, tag or commit; empty: main (or the only snapshot)
  std::string quant;     // may be empty
  std::string file;      // a path in the repository, or empty
};

std::optional<HubName> parse_hub(std::string_view name) {
  const size_t first = name.find('/');
  if (first == std::string_view::npos) return std::nullopt;
  HubName n;
  // ORG/REPO@REVISION[:QUANT]: a revision ("refs/pr/3" too) takes the rest
  // up to the quant; no PATH follows it. (A git ref's name holds no ':'.)
  if (const size_t at = name.find('@', first); at != std::string_view::npos) {
    n.repo = std::string(name.substr(0, at));
    const std::string_view rest = name.substr(at + 1);
    const size_t colon = rest.find(':');
    n.revision = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      n.quant = std::string(rest.substr(colon + 1));
      if (n.quant.empty()) return std::nullopt;
    }
    if (!valid_relative_path(n.revision) || !valid_repo_id(n.repo)) return std::nullopt;
    return n;
  }
  const size_t second = name.find('/', first + 1);
  if (second != std::string_view::npos) {
    n.repo = std::string(name.substr(0, second));
    n.file = std::string(name.substr(second + 1));
    if (!valid_relative_path(n.file)) return std::nullopt;
  } else {
    const size_t colon = name.find(':', first);
    n.repo = std::string(name.substr(0, colon));
    if (colon != std::string_view::npos) {
      n.quant = std::string(name.substr(colon + 1));
      if (n.quant.empty()) return std::nullopt;
    }
  }
  if (!valid_repo_id(n.repo)) return std::nullopt;
  return n;
}

fs::path hub_repo_dir(const fs::path& root, std::string_view repo) {
  std::string folder = "models--";
  for (char c : repo) {
    if (c == '/') {
      folder += "--";
    } else {
      folder += c;
    }
  }
  return root / folder;
}

// A revision's snapshot: the one refs/REVISION names, else (a commit) the
// snapshot of that name.
Result<fs::path> hub_revision_snapshot(const fs::path& repo_dir, const std::string& revision) {
  const fs::path snapshots = repo_dir / "snapshots";
  std::string commit = revision;
  if (const fs::path ref = repo_dir / "refs" / revision; is_file(ref)) {
    const std::optional<std::string> text = read_small(ref, 4096);
    commit = text ? std::string(trim_space(*text)) : "";
  }
  if (valid_relative_path(commit) && commit.find('/') == std::string::npos &&
      is_dir(snapshots / commit)) {
    return snapshots / commit;
  }
  return Error{printable(repo_dir.string(), 4096) + ": no snapshot of revision '" +
               printable(revision, 200) + "' (quip pull hf:ORG/REPO@REVISION fetches it)"};
}

// The snapshot a hub repository's refs/main names; else another ref's (in
// name order); else its only snapshot.
Result<fs::path> hub_snapshot(const fs::path& repo_dir) {
  const fs::path snapshots = repo_dir / "snapshots";
  std::vector<fs::path> refs;
  if (is_file(repo_dir / "refs" / "main")) refs.push_back(repo_dir / "refs" / "main");
  for (const auto& e : entries(repo_dir / "refs")) {
    if (e.path().filename() != "main" && is_file(e.path())) refs.push_back(e.path());
  }
  for (const fs::path& ref : refs) {
    const std::optional<std::string> text = read_small(ref, 4096);
    if (!text) continue;
    const std::string rev(trim_space(*text));
    if (valid_relative_path(rev) && rev.find('/') == std::string::npos && is_dir(snapshots / rev)) {
      return snapshots / rev;
    }
  }
  std::vector<fs::path> dirs;
  for (const auto& e : entries(snapshots)) {
    if (is_dir(e.path())) dirs.push_back(e.path());
  }
  if (dirs.size() == 1) return dirs[0];
  return Error{printable(repo_dir.string(), 4096) + ": no snapshot: refs/main names none of " +
               std::to_string(dirs.size()) + " in snapshots/"};
}

Match find_hub(const HubName& n, const fs::path& root, std::string_view prefix) {
  const fs::path repo_dir = hub_repo_dir(root, n.repo);
  if (!is_dir(repo_dir)) return {};
  auto snapshot =
      n.revision.empty() ? hub_snapshot(repo_dir) : hub_revision_snapshot(repo_dir, n.revision);
  if (!snapshot) return problem(snapshot.error().message);
  std::string file = n.file;
  if (file.empty()) {
    const std::optional<std::string> picked = pick_model(files_under(*snapshot, true), n.quant);
    if (!picked) return {};
    file = *picked;
  }
  const fs::path path = *snapshot / file;
  std::error_code ec;
  if (!is_file(path)) {
    if (fs::is_symlink(path, ec)) {
      return problem(printable(path.string(), 4096) + " links to a missing blob");
    }
    return {};
  }
  if (!n.revision.empty()) {  // the name as typed: a file's path cannot follow a revision
    return found(path, std::string(prefix) + n.repo + "@" + n.revision +
                           (n.quant.empty() ? "" : ":" + n.quant));
  }
  return found(path, std::string(prefix) + n.repo + "/" + file);
}

void list_hub(const fs::path& root, Store store, std::string_view prefix,
              std::vector<StoreModel>& out) {
  for (const auto& e : entries(root)) {
    const std::string folder = e.path().filename().string();
    if (!folder.starts_with("models--") || !is_dir(e.path())) continue;
    // models--ORG--REPO (the hub allows no "--" in an organization's name).
    const size_t sep = folder.find("--", 8);
    if (sep == std::string::npos) continue;
    std::string repo = folder.substr(8, sep - 8);
    repo += '/';
    repo += folder.substr(sep + 2);
    if (!valid_repo_id(repo)) continue;
    auto snapshot = hub_snapshot(e.path());
    if (!snapshot) continue;
    for (const std::string& f : files_under(*snapshot, true)) {
      if (is_model_file(f) && is_file(*snapshot / f)) {
        out.push_back({store, std::string(prefix) + repo + "/" + f, *snapshot / f});
      }
    }
  }
}

Match find_lmstudio(std::string_view name, const fs::path& root) {
  const std::optional<HubName> n = parse_hub(name);
  if (!n || !n->revision.empty()) return {};  // LM Studio keeps one revision
  const fs::path dir = root / n->repo;
  if (!is_dir(dir)) return {};
  std::string file = n->file;
  if (file.empty()) {
    const std::optional<std::string> picked = pick_model(files_under(dir, false), n->quant);
    if (!picked) return {};
    file = *picked;
  }
  if (!is_file(dir / file)) return {};
  return found(dir / file, n->repo + "/" + file);
}

void list_lmstudio(const fs::path& root, std::vector<StoreModel>& out) {
  for (const auto& publisher : entries(root)) {
    for (const auto& repo : entries(publisher.path())) {
      const std::string id =
          publisher.path().filename().string() + "/" + repo.path().filename().string();
      if (!valid_repo_id(id)) continue;
      for (const std::string& f : files_under(repo.path(), false)) {
        if (is_model_file(f) && is_file(repo.path() / f)) {
          out.push_back({Store::LmStudio, id + "/" + f, repo.path() / f});
        }
      }
    }
  }
}

// llama.cpp's name for a repository's file: "ORG/REPO" + "_" + PATH with
// each '/' (and '\') as '_'.
std::string llamacpp_file(std::string_view repo, std::string_view path) {
  std::string s = std::string(repo) + "_" + std::string(path);
  std::replace(s.begin(), s.end(), '/', '_');
  std::replace(s.begin(), s.end(), '\\', '_');
  return s;
}

// The file a manifest=ORG=REPO=TAG.json names.
Result<std::string> llamacpp_manifest_file_at(const fs::path& manifest) {
  const std::string where = printable(manifest.string(), 4096);
  auto text = read_small(manifest);
  if (!text) return Error{where + ": cannot read the manifest"};
  auto file = llamacpp_manifest_file(*text);
  if (!file) return file.error().with_context(where);
  return file;
}

Match find_llamacpp(std::string_view name, const fs::path& root) {
  // A file of the cache by its own name.
  if (name.find('/') == std::string_view::npos) {
    if (name.ends_with(".gguf") && valid_relative_path(name) && is_file(root / name)) {
      return found(root / name, std::string(name));
    }
    return {};
  }
  const std::optional<HubName> n = parse_hub(name);
  if (!n) return {};
  if (n->file.empty()) {
    const std::string tag = n->quant.empty() ? "latest" : n->quant;
    const size_t slash = n->repo.find('/');
    const std::string manifest_name = "manifest=" + n->repo.substr(0, slash) + "=" +
                                      n->repo.substr(slash + 1) + "=" + tag + ".json";
    if (const std::optional<fs::path> manifest = child_ignoring_case(root, manifest_name)) {
      auto file = llamacpp_manifest_file_at(*manifest);
      if (!file) return problem(file.error().message);
      const fs::path path = root / llamacpp_file(n->repo, *file);
      if (!is_file(path)) {
        return problem(printable(manifest->string(), 4096) + ": its file " +
                       printable(path.string(), 4096) + " is missing");
      }
      return found(path, n->repo + ":" + tag);
    }
    // Without a manifest: the repository's files by their names.
    const std::string prefix = llamacpp_file(n->repo, "");
    std::vector<std::string> tails;
    for (const std::string& f : files_under(root, false)) {
      if (f.starts_with(prefix)) tails.push_back(f.substr(prefix.size()));
    }
    if (const std::optional<std::string> picked = pick_model(tails, n->quant)) {
      return found(root / (prefix + *picked), prefix + *picked);
    }
  }
  return find_hub(*n, root, "");
}

void list_llamacpp(const fs::path& root, std::vector<StoreModel>& out) {
  std::set<std::string> named;
  for (const auto& e : entries(root)) {
    const std::string f = e.path().filename().string();
    if (!f.starts_with("manifest=") || !f.ends_with(".json")) continue;
    // manifest=ORG=REPO=TAG.json
    const std::string body = f.substr(9, f.size() - 9 - 5);
    const size_t a = body.find('='), b = body.find('=', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string repo = body.substr(0, a) + "/" + body.substr(a + 1, b - a - 1);
    const std::string tag = body.substr(b + 1);
    if (!valid_repo_id(repo) || tag.empty()) continue;
    auto file = llamacpp_manifest_file_at(e.path());
    if (!file) continue;
    const std::string local = llamacpp_file(repo, *file);
    if (!is_file(root / local)) continue;
    named.insert(local);
    out.push_back({Store::LlamaCpp, repo + ":" + tag, root / local});
  }
  for (const std::string& f : files_under(root, false)) {
    if (named.count(f) == 0 && is_model_file(f) && is_file(root / f)) {
      out.push_back({Store::LlamaCpp, f, root / f});
    }
  }
  list_hub(root, Store::LlamaCpp, "", out);
}

Match find_in(Store s, std::string_view name, const fs::path& root) {
  switch (s) {
    case Store::Ollama: return find_ollama(name, root);
    case Store::HuggingFace: {
      const std::optional<HubName> n = parse_hub(name);
      return n ? find_hub(*n, root, "hf:") : Match{};
    }
    case Store::LmStudio: return find_lmstudio(name, root);
    case Store::LlamaCpp: return find_llamacpp(name, root);
  }
  return {};
}

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? p : c;
}

}  // namespace

Result<std::string> ollama_model_digest(std::string_view manifest) {
  const nlohmann::json j = nlohmann::json::parse(manifest, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"the manifest is not a JSON object"};
  const auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) {
    return Error{"the manifest has no 'layers' array"};
  }
  for (const nlohmann::json& layer : *layers) {
    if (!layer.is_object() || layer.value("mediaType", nlohmann::json()) != kOllamaModelLayer) {
      continue;
    }
    const nlohmann::json digest = layer.value("digest", nlohmann::json());
    const std::string d = digest.is_string() ? digest.get<std::string>() : "";
    if (!d.starts_with("sha256:") || !is_hex(std::string_view(d).substr(7), 64)) {
      return Error{"the model layer's digest '" + printable(d, 4096) +
                   "' is not sha256: and 64 hex digits"};
    }
    return d.substr(7);
  }
  return Error{"no layer of mediaType " + std::string(kOllamaModelLayer) + " (not a GGUF model)"};
}

Result<std::string> llamacpp_manifest_file(std::string_view manifest) {
  const nlohmann::json j = nlohmann::json::parse(manifest, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"the manifest is not a JSON object"};
  const auto gguf = j.find("ggufFile");
  if (gguf == j.end() || !gguf->is_object() || !gguf->contains("rfilename") ||
      !(*gguf)["rfilename"].is_string()) {
    return Error{"the manifest has no ggufFile.rfilename"};
  }
  const std::string file = (*gguf)["rfilename"].get<std::string>();
  if (!valid_relative_path(file)) {
    return Error{"ggufFile.rfilename '" + printable(file, 4096) + "' is not a file name"};
  }
  return file;
}

std::string_view store_title(Store s) {
  switch (s) {
    case Store::Ollama: return "Ollama";
    case Store::HuggingFace: return "Hugging Face";
    case Store::LmStudio: return "LM Studio";
    case Store::LlamaCpp: return "llama.cpp";
  }
  return "";
}

std::string_view store_prefix(Store s) {
  switch (s) {
    case Store::Ollama: return "ollama";
    case Store::HuggingFace: return "hf";
    case Store::LmStudio: return "lmstudio";
    case Store::LlamaCpp: return "llama.cpp";
  }
  return "";
}

const fs::path& StoreRoots::of(Store s) const {
  switch (s) {
    case Store::Ollama: return ollama;
    case Store::HuggingFace: return huggingface;
    case Store::LmStudio: return lmstudio;
    case Store::LlamaCpp: return llamacpp;
  }
  return ollama;
}

StoreRoots store_roots(const GetEnv& env, const fs::path& ollama_system) {
  StoreRoots r;
  const std::optional<std::string> home = env("HOME");
  const std::optional<std::string> xdg_cache = env("XDG_CACHE_HOME");

  if (auto v = env("OLLAMA_MODELS")) {
    r.ollama = *v;
  } else if (home && is_dir(fs::path(*home) / ".ollama" / "models")) {
    r.ollama = fs::path(*home) / ".ollama" / "models";
  } else {
    r.ollama = ollama_system;
  }

  if (auto v = env("HF_HUB_CACHE")) {
    r.huggingface = *v;
  } else if (auto old = env("HUGGINGFACE_HUB_CACHE")) {
    r.huggingface = *old;
  } else if (auto hf_home = env("HF_HOME")) {
    r.huggingface = fs::path(*hf_home) / "hub";
  } else if (xdg_cache) {
    r.huggingface = fs::path(*xdg_cache) / "huggingface" / "hub";
  } else if (home) {
    r.huggingface = fs::path(*home) / ".cache" / "huggingface" / "hub";
  }

  if (home) {
    fs::path lms_home = fs::path(*home) / ".lmstudio";
    // LM Studio writes where it moved its home into this file.
    if (auto pointer = read_small(fs::path(*home) / ".lmstudio-home-pointer", 4096)) {
      const std::string to(trim_space(*pointer));
      if (!to.empty() && fs::path(to).is_absolute()) lms_home = to;
    }
    r.lmstudio = lms_home / "models";
  }

  if (auto v = env("LLAMA_CACHE")) {
    r.llamacpp = *v;
  } else if (xdg_cache) {
    r.llamacpp = fs::path(*xdg_cache) / "llama.cpp";
  } else if (home) {
    r.llamacpp = fs::path(*home) / ".cache" / "llama.cpp";
  }
  return r;
}

StoreRoots store_roots() {
  return store_roots([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  });
}

std::optional<SplitName> split_name(std::string_view file_name) {
  // PREFIX-NNNNN-of-NNNNN.gguf: 20 characters after the prefix.
  constexpr size_t kTail = 20;
  if (file_name.size() <= kTail) return std::nullopt;
  const std::string_view tail = file_name.substr(file_name.size() - kTail);
  const auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (tail[0] != '-' || !digits(tail.substr(1, 5)) || tail.substr(6, 4) != "-of-" ||
      !digits(tail.substr(10, 5)) || lower(tail.substr(15)) != ".gguf") {
    return std::nullopt;
  }
  SplitName s;
  s.prefix = std::string(file_name.substr(0, file_name.size() - kTail));
  s.index = std::stoi(std::string(tail.substr(1, 5)));
  s.count = std::stoi(std::string(tail.substr(10, 5)));
  if (s.index < 1 || s.count < 1 || s.index > s.count) return std::nullopt;
  return s;
}

std::string usable_name(const StoreModel& m, const StoreRoots& roots) {
  if (m.store == Store::HuggingFace) return m.name;  // hf: already
  if (find_in_stores(m.name, roots).found.size() == 1) return m.name;
  return std::string(store_prefix(m.store)) + ":" + m.name;
}

StoreLookup find_in_stores(std::string_view name, const StoreRoots& roots) {
  StoreLookup r;
  std::vector<Store> stores;
  for (Store s : kStores) {
    const std::string prefix = std::string(store_prefix(s)) + ":";
    if (name.starts_with(prefix)) {
      stores = {s};
      name.remove_prefix(prefix.size());
      break;
    }
  }
  if (stores.empty()) {
    // Hugging Face names carry their prefix always (hf:ORG/REPO).
    stores = {Store::Ollama, Store::LmStudio, Store::LlamaCpp};
  }
  for (Store s : stores) {
    const fs::path& root = roots.of(s);
    std::string looked = std::string(store_title(s)) + " (";
    if (root.empty()) {
      looked += "no folder: HOME is not set)";
    } else {
      looked += root.string() + (is_dir(root) ? ")" : ", absent)");
    }
    r.looked.push_back(printable(looked, 4096));
    if (root.empty() || !is_dir(root)) continue;
    Match m = find_in(s, name, root);
    if (m.problem) r.problems.push_back(std::string(store_title(s)) + ": " + *m.problem);
    if (!m.path) continue;
    // The same file reached through two stores (a link from one into
    // another) is one model.
    const fs::path canonical = canonical_or_same(*m.path);
    const bool seen = std::any_of(r.found.begin(), r.found.end(), [&](const StoreModel& f) {
      return canonical_or_same(f.path) == canonical;
    });
    if (!seen) r.found.push_back({s, std::move(m.name), std::move(*m.path)});
  }
  return r;
}

std::vector<StoreModel> list_stores(const StoreRoots& roots) {
  std::vector<StoreModel> out;
  for (Store s : kStores) {
    const fs::path& root = roots.of(s);
    if (root.empty() || !is_dir(root)) continue;
    const size_t begin = out.size();
    switch (s) {
      case Store::Ollama: list_ollama(root, out); break;
      case Store::HuggingFace: list_hub(root, s, "hf:", out); break;
      case Store::LmStudio: list_lmstudio(root, out); break;
      case Store::LlamaCpp: list_llamacpp(root, out); break;
    }
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(begin), out.end(),
              [](const StoreModel& a, const StoreModel& b) { return a.name < b.name; });
  }
  return out;
}

}  // namespace quip::session
