// Fuzzes hub::parse_model_info and hub::choose_model_files, which read the
// hub's listing of a repository (untrusted JSON from the network), and
// hub::parse_model_ref, which reads what the user typed. The first byte
// picks the quant tag; the rest is the listing, then the reference. An
// accepted listing never holds a path that leaves the snapshot folder, and
// every error is one line.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hub/hf_repo.h"

namespace {

const char* const kTags[] = {"", "Q4_K_M", "Q8_0", "f16", "IQ4_XS", "Q4_0"};

void check_line(const quip::Error& e) {
  if (e.message.find('\n') != std::string::npos) abort();
}

// Whether a path is absolute or has an empty, "." or ".." component.
bool leaves_snapshot(std::string_view path) {
  if (path.empty() || path.front() == '/') return true;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string_view part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return true;
    if (slash == std::string_view::npos) return false;
    start = slash + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view tag = kTags[data[0] % std::size(kTags)];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto listing = quip::hub::parse_model_info(text);
  if (!listing.ok()) {
    check_line(listing.error());
  } else {
    for (const quip::hub::RepoFile& f : listing->files) {
      if (leaves_snapshot(f.path)) abort();
      if (!f.sha256.empty() && f.sha256.size() != 64) abort();
    }
    auto chosen = quip::hub::choose_model_files(listing->files, tag);
    if (!chosen.ok()) {
      check_line(chosen.error());
    } else if (chosen->empty()) {
      abort();
    }
  }
  auto ref = quip::hub::parse_model_ref(text);
  if (!ref.ok()) {
    check_line(ref.error());
  } else if (ref->repo.find('/') == std::string::npos ||
             !quip::hub::valid_revision(ref->revision)) {
    abort();
  }
  return 0;
}
