// The subcommands that manage recorded conversations (store/store.h), all on
// the database at data_dir()/quip.db:
//   quip log [-n N] [--json]             the most recent conversations
//   quip show ID [--json]                one conversation's turns
//   quip rm ID                           delete a conversation
//   quip export ID [--format md|json]    a transcript
// A missing database means no conversations yet. A malformed ID is a usage
// error (exit 2), an unknown one a failure (exit 1, "quip: no conversation
// 42"), a database that cannot be used exit 3.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace quip::cli {

// Each runs its subcommand on `args` (without "quip NAME"); returns the exit status.
int log_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int show_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int rm_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int export_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace quip::cli
