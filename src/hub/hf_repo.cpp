#include "hub/hf_repo.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "base/text.h"

namespace quip::hub {

namespace {

using nlohmann::json;

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_hex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

char upper(char c) {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = upper(c);
  return u;
}

// One part of a repository id: the hub's rule for names.
bool valid_name_part(std::string_view p) {
  if (p.empty() || p.size() > 96) return false;
  for (const char c : p) {
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  const auto edge = [](char c) { return c == '-' || c == '.'; };
  return !edge(p.front()) && !edge(p.back()) && p.find("--") == std::string_view::npos &&
         p.find("..") == std::string_view::npos;
}

// A path inside the repository that stays inside the snapshot folder.
bool valid_repo_path(std::string_view p) {
  if (p.empty() || p.size() > 4096 || p.front() == '/') return false;
  // No backslash (a folder separator elsewhere), and nothing a terminal
  // would act on: the path is printed (controls, invalid UTF-8).
  if (p.find('\\') != std::string_view::npos || printable(p, SIZE_MAX) != p) return false;
  size_t start = 0;
  while (true) {
    const size_t slash = p.find('/', start);
    const std::string_view part = p.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

// The file name without folders, the split suffix and ".gguf".
std::string_view model_stem(std::string_view path) {
  if (const size_t slash = path.rfind('/'); slash != std::string_view::npos) {
    path.remove_prefix(slash + 1);
  }
  if (split_part(path)) {
    path.remove_suffix(std::string_view("-00001-of-00003.gguf").size());
  } else if (path.size() >= 5 && upper(path.substr(path.size() - 5)) == ".GGUF") {
    path.remove_suffix(5);
  }
  return path;
}

bool ends_with_gguf(std::string_view path) {
  return path.size() > 5 && upper(path.substr(path.size() - 5)) == ".GGUF";
}

// A .gguf file that is a model itself, not a projector, an importance
// matrix or a speculative-decoding sidecar (llama.cpp's gguf_filename_is_model).
bool is_model_file(std::string_view path) {
  if (!ends_with_gguf(path)) return false;
  std::string_view name = path;
  if (const size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    name.remove_prefix(slash + 1);
  }
  for (const char* sidecar : {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"}) {
    if (name.find(sidecar) != std::string_view::npos) return false;
  }
  return true;
}

bool is_first_part(std::string_view path) {
  const auto part = split_part(path);
  return !part || part->index == 1;
}

// Whether `path` holds `tag` (upper-cased) as a delimited word.
bool names_tag(std::string_view path, std::string_view tag) {
  const std::string p = upper(path);
  for (size_t at = p.find(tag); at != std::string::npos; at = p.find(tag, at + 1)) {
    const bool start_ok = at == 0 || !is_alnum(p[at - 1]);
    const size_t end = at + tag.size();
    const bool end_ok = end < p.size() && (p[end] == '.' || p[end] == '-');
    if (start_ok && end_ok) return true;
  }
  return false;
}

// All parts of the split model whose first part is `first`.
Result<std::vector<RepoFile>> with_parts(const std::vector<RepoFile>& files,
                                         const RepoFile& first) {
  const auto part = split_part(first.path);
  if (!part) return std::vector<RepoFile>{first};
  // The parts share the path up to "-00001-of-0000N.gguf".
  const std::string_view prefix =
      std::string_view(first.path)
          .substr(0, first.path.size() - std::string_view("00001-of-00003.gguf").size());
  std::vector<RepoFile> parts;
  for (int i = 1; i <= part->count; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%05d-of-%05d.gguf", i, part->count);
    const std::string want = std::string(prefix) + suffix;
    const auto it =
        std::find_if(files.begin(), files.end(), [&](const RepoFile& f) { return f.path == want; });
    if (it == files.end()) {
      return Error{first.path + " is part 1 of " + std::to_string(part->count) +
                   " but the repository has no " + want};
    }
    parts.push_back(*it);
  }
  return parts;
}

}  // namespace

bool valid_revision(std::string_view revision) {
  if (revision.empty() || revision.size() > 200) return false;
  size_t start = 0;
  while (true) {
    const size_t slash = revision.find('/', start);
    const std::string_view part = revision.substr(start, slash - start);
    if (part.empty() || part.front() == '.' || part.ends_with(".lock")) return false;
    for (const char c : part) {
      if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
    }
    if (part.find("..") != std::string_view::npos) return false;
    if (slash == std::string_view::npos) return !part.ends_with('.');
    start = slash + 1;
  }
}

bool is_commit(std::string_view revision) {
  return is_hex(revision, 40);
}

Result<ModelRef> parse_model_ref(std::string_view text) {
  const std::string shown = printable(text, 200);
  if (!text.starts_with("hf:")) {
    return Error{"'" + shown +
                 "': expected hf:ORG/REPO[@REVISION][:QUANT], e.g. "
                 "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0"};
  }
  std::string_view rest = text.substr(3);
  ModelRef ref;
  // (A git ref's name holds no ':', so the first one begins the tag.)
  if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
    const std::string_view tag = rest.substr(colon + 1);
    if (tag.empty() || tag.size() > 64 ||
        !std::all_of(tag.begin(), tag.end(), [](char c) { return is_alnum(c) || c == '_'; })) {
      return Error{"'" + shown +
                   "': the quant tag after ':' must be letters, digits and '_' (e.g. Q4_K_M)"};
    }
    ref.tag = tag;
    rest = rest.substr(0, colon);
  }
  if (const size_t at = rest.find('@'); at != std::string_view::npos) {
    const std::string_view revision = rest.substr(at + 1);
    if (!valid_revision(revision)) {
      return Error{"'" + shown +
                   "': the revision after '@' must be a branch, a tag or a commit: letters, "
                   "digits, '-', '_', '.' and '/' between parts, no '..'"};
    }
    ref.revision = revision;
    rest = rest.substr(0, at);
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || rest.find('/', slash + 1) != std::string_view::npos) {
    return Error{"'" + shown + "': expected hf:ORG/REPO[@REVISION][:QUANT] with exactly one '/'"};
  }
  if (!valid_name_part(rest.substr(0, slash)) || !valid_name_part(rest.substr(slash + 1))) {
    return Error{"'" + shown +
                 "': a repository name is letters, digits, '-', '_' and '.', without '--' or "
                 "'..' and not starting or ending with '-' or '.'"};
  }
  ref.repo = rest;
  return ref;
}

Result<RepoListing> parse_model_info(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{"the hub's answer is not JSON"};
  if (!j.is_object()) return Error{"the hub's answer is not a JSON object"};
  RepoListing listing;
  const auto sha = j.find("sha");
  if (sha == j.end() || !sha->is_string() || !is_hex(sha->get_ref<const std::string&>(), 40)) {
    return Error{"the hub's answer has no 'sha' of 40 hex digits (the commit)"};
  }
  listing.commit = sha->get<std::string>();
  const auto siblings = j.find("siblings");
  if (siblings == j.end() || !siblings->is_array()) {
    return Error{"the hub's answer has no 'siblings' array (the files)"};
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < siblings->size(); ++i) {
    const json& s = (*siblings)[i];
    const std::string where = "siblings[" + std::to_string(i) + "]";
    if (!s.is_object()) return Error{where + " is not an object"};
    const auto name = s.find("rfilename");
    if (name == s.end() || !name->is_string()) return Error{where + " has no 'rfilename' string"};
    RepoFile f;
    f.path = name->get<std::string>();
    if (!valid_repo_path(f.path)) {
      return Error{where + ": 'rfilename' '" + printable(f.path, 200) +
                   "' is not a relative path inside the repository"};
    }
    if (!seen.insert(f.path).second) {
      return Error{where + ": '" + printable(f.path, 200) + "' is listed twice"};
    }
    if (const auto size = s.find("size"); size != s.end() && !size->is_null()) {
      if (!size->is_number_unsigned()) return Error{where + ": 'size' is not a byte count"};
      f.size = size->get<uint64_t>();
    }
    if (const auto lfs = s.find("lfs"); lfs != s.end() && !lfs->is_null()) {
      if (!lfs->is_object()) return Error{where + ": 'lfs' is not an object"};
      const auto hash = lfs->find("sha256");
      if (hash == lfs->end() || !hash->is_string() ||
          !is_hex(hash->get_ref<const std::string&>(), 64)) {
        return Error{where + ": 'lfs.sha256' is not 64 lower-case hex digits"};
      }
      f.sha256 = hash->get<std::string>();
      const auto size = lfs->find("size");
      if (size == lfs->end() || !size->is_number_unsigned()) {
        return Error{where + ": 'lfs.size' is not a byte count"};
      }
      const uint64_t lfs_size = size->get<uint64_t>();
      if (s.contains("size") && !s["size"].is_null() && lfs_size != f.size) {
        return Error{where + ": 'size' " + std::to_string(f.size) + " and 'lfs.size' " +
                     std::to_string(lfs_size) + " differ"};
      }
      f.size = lfs_size;
    }
    listing.files.push_back(std::move(f));
  }
  return listing;
}

std::optional<SplitPart> split_part(std::string_view path) {
  // "-NNNNN-of-NNNNN.gguf" at the end.
  constexpr std::string_view kShape = "-00001-of-00003.gguf";
  if (path.size() < kShape.size()) return std::nullopt;
  const std::string_view tail = path.substr(path.size() - kShape.size());
  const auto digits = [&](size_t from) {
    int v = 0;
    for (size_t i = from; i < from + 5; ++i) {
      if (tail[i] < '0' || tail[i] > '9') return -1;
      v = v * 10 + (tail[i] - '0');
    }
    return v;
  };
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-" || upper(tail.substr(15)) != ".GGUF") {
    return std::nullopt;
  }
  const int index = digits(1), count = digits(10);
  if (index < 1 || count < 1 || index > count) return std::nullopt;
  return SplitPart{index, count};
}

std::string file_quant_tag(std::string_view path) {
  const std::string_view stem = model_stem(path);
  size_t start = stem.size();
  while (start > 0 && (is_alnum(stem[start - 1]) || stem[start - 1] == '_')) --start;
  if (start == stem.size() || start == 0 || (stem[start - 1] != '-' && stem[start - 1] != '.')) {
    return "";
  }
  return upper(stem.substr(start));
}

Result<std::vector<RepoFile>> choose_model_files(const std::vector<RepoFile>& files,
                                                 std::string_view tag) {
  std::vector<const RepoFile*> models;
  for (const RepoFile& f : files) {
    if (is_model_file(f.path) && is_first_part(f.path)) models.push_back(&f);
  }
  if (models.empty()) return Error{"the repository has no GGUF model file"};
  std::vector<std::string> tags;
  if (tag.empty()) {
    tags = {"Q4_K_M", "Q8_0"};
  } else {
    tags = {upper(tag)};
  }
  for (const std::string& t : tags) {
    for (const RepoFile* f : models) {
      if (names_tag(f->path, t)) return with_parts(files, *f);
    }
  }
  if (tag.empty()) return with_parts(files, *models.front());
  // What there is instead: the tags, or the file names that have none.
  std::vector<std::string> available;
  for (const RepoFile* f : models) {
    std::string t = file_quant_tag(f->path);
    if (t.empty()) t = f->path;
    if (std::find(available.begin(), available.end(), t) == available.end()) {
      available.push_back(std::move(t));
    }
  }
  std::string list;
  for (const std::string& a : available) {
    if (!list.empty()) list += ", ";
    list += a;
  }
  return Error{"no GGUF file for the quant tag '" + std::string(tag) +
               "'; the repository has: " + list};
}

namespace {

// A folder variable as huggingface_hub reads it: empty counts as unset, and
// a leading "~/" is the home folder (its expanduser).
std::optional<std::filesystem::path> env_path(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string_view s = v;
  if (s == "~" || s.starts_with("~/")) {
    const char* home = std::getenv("HOME");
    if (home != nullptr && *home != '\0') {
      return std::filesystem::path(home) / std::string(s.substr(s.size() > 1 ? 2 : 1));
    }
  }
  return std::filesystem::path(s);
}

}  // namespace

std::optional<std::filesystem::path> hub_cache_dir() {
  if (auto p = env_path("HF_HUB_CACHE")) return *p;
  if (auto p = env_path("HUGGINGFACE_HUB_CACHE")) return *p;
  if (auto p = env_path("HF_HOME")) return *p / "hub";
  if (auto p = env_path("XDG_CACHE_HOME")) return *p / "huggingface" / "hub";
  if (auto p = env_path("HOME")) return *p / ".cache" / "huggingface" / "hub";
  return std::nullopt;
}

std::optional<std::filesystem::path> hub_token_file() {
  if (auto p = env_path("HF_TOKEN_PATH")) return *p;
  if (auto p = env_path("HF_HOME")) return *p / "token";
  if (auto p = env_path("XDG_CACHE_HOME")) return *p / "huggingface" / "token";
  if (auto p = env_path("HOME")) return *p / ".cache" / "huggingface" / "token";
  return std::nullopt;
}

namespace {

// `s` with each '/' as `with`.
std::string slashes_as(std::string_view s, std::string_view with) {
  std::string out;
  for (const char c : s) {
    if (c == '/') {
      out += with;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string repo_folder_name(std::string_view repo) {
  return "models--" + slashes_as(repo, "--");
}

std::string revision_url_segment(std::string_view revision) {
  return slashes_as(revision, "%2F");
}

std::string snapshot_link_target(std::string_view path, std::string_view sha256) {
  std::string target = "../../";
  for (const char c : path) {
    if (c == '/') target += "../";
  }
  target += "blobs/";
  target += sha256;
  return target;
}

}  // namespace quip::hub
