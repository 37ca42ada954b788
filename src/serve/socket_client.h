// An HTTP client of a server's Unix socket (serve/server.h): the shell's
// attached calls, `quip ps` and `quip serve --stop`, and a server asking
// whether another already answers there.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <ctime>
#include <filesystem>

namespace quip::serve {

// Waits `connect_seconds` for the server to accept and `read_seconds` for
// each read of its answer.
inline httplib::Client socket_client(const std::filesystem::path& socket, time_t connect_seconds,
                                     time_t read_seconds = CPPHTTPLIB_READ_TIMEOUT_SECOND) {
  httplib::Client c(socket.string());
  c.set_address_family(AF_UNIX);
  c.set_connection_timeout(connect_seconds, 0);
  c.set_read_timeout(read_seconds, 0);
  return c;
}

}  // namespace quip::serve
