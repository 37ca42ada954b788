// `quip --backend URL PROMPT`, `QUIP_BACKEND=URL quip ...` and
// `quip -m NAME ...` with a [backends.NAME] table: the conversation goes to
// a remote OpenAI-compatible server (serve/openai_client.h) instead of a
// local model, and its turn is recorded in the local store like any other,
// so that -c and --cid continue it with the same backend.
//
// Which backend, in order: --backend URL (or, when it is not given,
// $QUIP_BACKEND when set and not empty), with -m naming the server's model;
// else the model the call would use (-m, the continued conversation's, the
// config's default) when it is a [backends.NAME] table or a recorded
// backend ("URL" or "URL#MODEL"). Otherwise the call is local.
//
// The API key: the variable that a [backends.NAME] table's api_key_env
// names (the table whose url is the backend's, for a URL or a recorded
// backend), else $QUIP_API_KEY. It is sent only in the Authorization
// header: never printed, recorded or reported.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cli/config.h"
#include "serve/openai_client.h"
#include "session/session.h"

namespace quip::cli {

struct Backend {
  serve::Endpoint endpoint;
  std::string model;        // asked for by name; empty: the server's own (not sent)
  std::string api_key_env;  // where the key comes from; empty: no key
  long timeout_s = 300;     // idle: seconds without a byte from the server

  // What a turn records as its model: "URL", or "URL#MODEL".
  std::string record_name() const;
};

// The backend of this call (see above), or nullopt for a local model.
// Errors (usage): a URL that is not one, a [backends.NAME] whose url is not.
Result<std::optional<Backend>> choose_backend(const std::optional<std::string>& backend_flag,
                                              const std::optional<std::string>& model_flag,
                                              const session::Base* base, const Config& config);

// What the command line gives a remote call besides its backend.
struct RemoteOptions {
  Settings settings;               // the config's top level under the flags
  bool think_flag = false;         // --think was given (off and inline then refused)
  std::vector<std::string> words;  // PROMPT
  std::optional<std::string> file;
};

// One remote call, ready to send.
struct RemoteCall {
  Backend backend;
  std::string api_key;           // the secret: only ever in the Authorization header
  nlohmann::json body;           // the request: model, messages, stream, sampler fields
  nlohmann::json added;          // the messages this turn records (system, user)
  nlohmann::json sent_settings;  // the sampler fields sent, as the turn records them
};

// Reads the prompt and builds the request: the conversation's history
// (request.base) and the new messages, --temp as temperature, --top-p as
// top_p, the seed (request.sampler.seed, which --json reports), -n as
// max_tokens. Sets request.think. Errors (usage): no prompt, a --raw
// conversation, --think off or inline, a key variable that is not set or
// holds a line break.
Result<RemoteCall> prepare_remote_call(Backend backend, const RemoteOptions& options,
                                       session::Request& request);

// Sends the call, streaming its deltas through `callbacks` (on_token with id
// -1, on_reasoning), stopping when keep_going() says so, and records the
// turn (model: Backend::record_name(), no tokens, the server's usage).
// Failures: Runtime, one line naming the host.
session::Outcome<session::Answer> run_remote_call(const RemoteCall& call,
                                                  const session::Request& request,
                                                  const session::Callbacks& callbacks);

}  // namespace quip::cli
