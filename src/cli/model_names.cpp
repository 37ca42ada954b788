#include "cli/model_names.h"

#include "base/text.h"
#include "cli/exit_status.h"

namespace quip::cli {

namespace fs = std::filesystem;

namespace {

bool looks_like_path(const std::string& name) {
  return name.starts_with('/') || name.starts_with("./") || name.starts_with("../") ||
         name.starts_with('~');
}

}  // namespace

std::variant<ModelFile, ModelNameError> resolve_model_name(const std::string& name,
                                                           const Config& config,
                                                           const session::StoreRoots& roots) {
  std::error_code ec;
  if (fs::exists(name, ec)) return ModelFile{name, nullptr};
  if (auto it = config.models.find(name); it != config.models.end()) {
    return ModelFile{it->second.path, &it->second};
  }
  if (name.empty() || looks_like_path(name)) return ModelFile{name, nullptr};

  const session::StoreLookup lookup = session::find_in_stores(name, roots);
  const std::string subject = "model '" + printable(name, 4096) + "'";
  if (lookup.found.size() == 1) return ModelFile{lookup.found[0].path, nullptr};
  if (lookup.found.size() > 1) {
    std::string m = subject + " is in " + std::to_string(lookup.found.size()) + " stores: ";
    std::string prefixed;
    for (size_t i = 0; i < lookup.found.size(); ++i) {
      const session::StoreModel& f = lookup.found[i];
      m += (i ? ", " : "");
      m += std::string(session::store_title(f.store)) + " (" + f.path.string() + ")";
      prefixed += (i ? " or " : "");
      prefixed += std::string(session::store_prefix(f.store)) + ":" + name;
    }
    m += "; name one as " + prefixed + ", or give its file";
    return ModelNameError{kExitUsage, printable(m, 4096)};
  }
  if (!lookup.problems.empty()) {
    std::string m = subject + ": ";
    for (size_t i = 0; i < lookup.problems.size(); ++i) {
      m += (i ? "; " : "") + lookup.problems[i];
    }
    return ModelNameError{kExitBadData, printable(m, 4096)};
  }
  std::string m = subject + " is no file, no alias in " +
                  (config.file.empty() ? std::string("config.toml") : config.file.string()) +
                  " and no model in ";
  for (size_t i = 0; i < lookup.looked.size(); ++i) {
    m += (i ? ", " : "");
    m += lookup.looked[i];
  }
  if (!name.starts_with("hf:")) {
    m += " (models in the Hugging Face cache are named hf:ORG/REPO[:QUANT])";
  }
  return ModelNameError{kExitBadData, printable(m, 4096)};
}

std::variant<ModelFile, ModelNameError> resolve_model_name(const std::string& name) {
  std::error_code ec;
  if (fs::exists(name, ec)) return ModelFile{name, nullptr};
  auto config = load_config(std::nullopt);
  if (!config) return ModelNameError{kExitUsage, config.error().message};
  auto r = resolve_model_name(name, *config, session::store_roots());
  // The alias would point into this function's config: only the path leaves it.
  if (auto* f = std::get_if<ModelFile>(&r)) f->alias = nullptr;
  return r;
}

}  // namespace quip::cli
