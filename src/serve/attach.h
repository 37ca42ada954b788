// How a `quip` call attaches to a running `quip serve` of the same user: over
// the server's Unix socket (mode 0600), `POST /quip/generate` carries the
// call's session::Request as JSON, and the answer comes back as NDJSON
// events, one per line:
//
//   {"call": ID}                          first: what /quip/cancel names
//   {"progress": [done, total, cached]}   the prompt's evaluation
//   {"reasoning": TEXT}                   reasoning as it comes
//   {"token": ID, "text": TEXT}           each answer token (ID -1: the decoder's rest)
//   {"answer": {...}, "prompt_tokens": [...]}   last: the session::Answer
//   {"failure": {"kind": K, "message": M}}      last: a session::Failure
//
// The server runs the call exactly as the process would (session::
// build_prompt and generate, the same store and prefix cache), so flags,
// output, exit statuses and the conversation record do not depend on which
// engine answered. Client and server each name the protocol's version in
// a header (kProtocolHeader, both ways); a server of another version
// answers 409 with no body, and a client that finds another version (a
// server built before the header: none) hangs up; either way the call runs
// in-process, as when no server is there. Texts are JSON strings: bytes that are not UTF-8 travel
// as \u00XX escapes of each byte (byte_string below), since an answer may
// end inside a character.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "session/session.h"

namespace quip::serve {

// The attach protocol's version: one more whenever the request, the events
// or the answer change in a way the other side would misread.
inline constexpr const char* kProtocolHeader = "Quip-Attach-Protocol";
inline constexpr const char* kProtocolVersion = "1";

// Bytes as a JSON string that keeps every byte (each as the code point of
// its value where it is not UTF-8: latin-1 style), and back.
nlohmann::json byte_string(std::string_view bytes);
std::string from_byte_string(const nlohmann::json& j);

// The request as the attach protocol carries it. The grammar travels as
// its GBNF text (`gbnf`), the conversation continued as its database, id
// and fork turn (the server reads it again from the store).
nlohmann::json request_json(const session::Request& r, const std::string& gbnf);
// The request back, the grammar compiled; failures are Usage (a malformed
// request, a grammar that does not compile) or what reading the
// conversation gives.
session::Outcome<session::Request> request_from_json(const nlohmann::json& j);

nlohmann::json answer_json(const session::Answer& a);
session::Answer answer_from_json(const nlohmann::json& j);

nlohmann::json failure_json(const session::Failure& f);
session::Failure failure_from_json(const nlohmann::json& j);

// The client: runs `request` on the server at `socket`, passing its events
// to `callbacks` and filling `prompt_tokens`. nullopt when no server
// answered there, or it went away before the answer began (the caller then
// runs the call itself). A stop asked by callbacks.keep_going or on_token
// cancels the call on the server, which records what was generated, as a
// stopped call in-process does.
std::optional<session::Outcome<session::Answer>> attached_generate(
    const std::filesystem::path& socket, const session::Request& request, const std::string& gbnf,
    const session::Callbacks& callbacks, std::vector<int32_t>& prompt_tokens);

}  // namespace quip::serve
