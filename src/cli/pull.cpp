#include "cli/pull.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "base/file_io.h"
#include "base/text.h"
#include "cli/download_progress.h"
#include "cli/exit_status.h"
#include "cli/report.h"
#include "cli/stop_signals.h"
#include "cli/usage.h"
#include "hub/hf_download.h"

namespace quip::cli {

int pull_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // The help text is options.cpp's table (quip pull --help, the man page).
  CLI::App app{"", "quip pull"};
  std::string spec;
  app.add_option("MODEL", spec, "hf:ORG/REPO[@REVISION][:QUANT]")->required();
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;

  auto ref = hub::parse_model_ref(spec);
  if (!ref) {
    print_error(err, "quip pull", ref.error().message);
    return kExitUsage;
  }
  auto endpoint = hub::endpoint_from_environment();
  if (!endpoint) {
    print_error(err, "quip pull", endpoint.error().message);
    return kExitUsage;
  }
  auto cache = hub::hub_cache_dir();
  if (!cache) {
    print_error(err, "quip pull", "no cache folder: set HF_HUB_CACHE, HF_HOME or HOME");
    return kExitFailure;
  }
  const std::string shown = "hf:" + ref->repo +
                            (ref->revision == "main" ? "" : "@" + ref->revision) +
                            (ref->tag.empty() ? "" : ":" + ref->tag);

  hub::PullRequest request;
  request.endpoint = *endpoint;
  // The token: HF_TOKEN, else the file `hf auth login` saved (as
  // huggingface_hub looks for it; an empty one is none).
  if (const char* token = std::getenv("HF_TOKEN"); token != nullptr && *token != '\0') {
    request.token = token;
  } else if (const auto file = hub::hub_token_file()) {
    std::error_code ec;
    if (std::filesystem::exists(*file, ec)) {
      auto text = read_regular_file(*file, 4096);
      if (!text) {
        print_error(err, "quip pull", text.error().message);
        return kExitFailure;
      }
      request.token = std::string(trim_space(*text));
      if (!request.token.empty()) {
        request.token_source = "the token in " + printable(file->string(), 4096);
      }
    }
  }
  // The token goes into a header line: nothing that could end it or add another.
  for (const char c : request.token) {
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f) {
      print_error(err, "quip pull",
                  request.token_source + " holds a space, control or non-ASCII character");
      return kExitUsage;
    }
  }
  request.user_agent = "quip/" QUIP_PROJECT_VERSION;
  request.ref = *ref;
  request.cache = *cache;

  // Ctrl-C, SIGTERM and SIGHUP stop the download where it is; the part
  // stays for the next pull.
  catch_stop_signals({SIGXFSZ});
  const bool live = &err == &std::cerr && isatty(STDERR_FILENO) != 0;
  DownloadProgress progress(err, live, PromptProgress::from_environment());
  hub::PullHandlers handlers;
  handlers.on_progress = [&](const hub::PullProgress& p) {
    progress.update(p.file, p.done, p.total, p.at_start);
    return stop_signal() == 0;
  };
  handlers.keep_going = [] { return stop_signal() == 0; };
  auto result = hub::pull(request, handlers);
  progress.clear();
  if (!result) {
    print_error(err, "quip pull", shown + ": " + result.error().message);
    return kExitFailure;
  }
  if (result->interrupted) {
    print_error(err, "quip pull",
                shown + ": interrupted; what was downloaded is kept and the next pull resumes it");
    return stop_signal() != 0 ? kExitSignal + stop_signal() : kExitInterrupted;
  }

  uint64_t total = 0;
  for (const hub::RepoFile& f : result->files) total += f.size;
  std::string files = result->files.front().path;
  if (result->files.size() > 1) {
    files += " and " + std::to_string(result->files.size() - 1) + " more parts";
  }
  std::string summary = shown + ": " + files + ", " + human_size(total);
  if (result->received == 0) {
    summary += ", already in the cache";
  } else {
    const double seconds = progress.seconds();
    summary += ": downloaded " + human_size(result->received) + " in " + duration_text(seconds);
    if (seconds > 0) {
      summary +=
          " (" +
          human_size(static_cast<uint64_t>(static_cast<double>(result->received) / seconds)) +
          "/s)";
    }
  }
  err << "quip pull: " << printable(summary, 4096) << '\n';
  out << result->path.string() << '\n';
  return kExitOk;
}

}  // namespace quip::cli
