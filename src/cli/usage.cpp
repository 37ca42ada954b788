#include "cli/usage.h"

#include <algorithm>

#include "cli/exit_status.h"

namespace quip::cli {

std::optional<int> parse_args(CLI::App& app, const std::vector<std::string>& args,
                              std::ostream& out, std::ostream& err) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    err << app.get_name() << ": " << what << " (see '" << app.get_name() << " --help')\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace quip::cli
