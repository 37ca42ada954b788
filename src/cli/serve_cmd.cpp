#include "cli/serve_cmd.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/paths.h"
#include "base/text.h"
#include "cli/config.h"
#include "cli/exit_status.h"
#include "cli/model_names.h"
#include "cli/prompt_input.h"
#include "cli/report.h"
#include "cli/usage.h"
#include "kernels/thread_pool.h"
#include "serve/attach.h"
#include "serve/server.h"
#include "serve/socket_client.h"
#include "store/prefix_cache.h"

namespace quip::cli {

namespace {

namespace fs = std::filesystem;

// "5m", "30s", "1h", "90" (seconds), "0": a duration; errors name the flag.
Result<std::chrono::milliseconds> parse_duration(const std::string& flag, const std::string& t) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = t.substr(used);
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || !(v >= 0) || v * scale > 1e9) {
    return Error{flag + " '" + printable(t, 40) + "' is not a duration such as 30s, 5m or 1h"};
  }
  return std::chrono::milliseconds(static_cast<int64_t>(v * scale * 1000));
}

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.starts_with("127.");
}

std::optional<fs::path> socket_from(const std::optional<std::string>& flag) {
  if (flag) return fs::path(*flag);
  return server_socket();
}

int stop_server(const fs::path& socket, std::ostream& out, std::ostream& err) {
  httplib::Client c = serve::socket_client(socket, 2);
  auto r = c.Post("/quip/shutdown", "{}", "application/json");
  if (!r) {
    print_error(err, "quip serve", "no quip server is running on " + socket.string());
    return kExitFailure;
  }
  // It drains its calls, then removes its socket.
  for (int i = 0; i < 600; ++i) {
    std::error_code ec;
    if (!fs::exists(socket, ec)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  out << "quip serve: stopped the server on " << socket.string() << '\n';
  return kExitOk;
}

}  // namespace

int serve_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "Keep models loaded and answer the shell's calls and OpenAI or Ollama clients, on a Unix "
      "socket of this user and optionally on a TCP port, until SIGINT or SIGTERM.",
      "quip serve"};
  std::vector<std::string> models;
  std::optional<std::string> host, socket, keep_alive, api_key_file, config_file, threads_text,
      ctx_text;
  std::optional<int> port;
  std::optional<std::string> cache_ram;
  int parallel = 4;
  bool stop = false, no_batching = false;
  app.add_option("-m,--model", models, "a GGUF file or config alias to serve (repeatable)");
  app.add_option("--host", host, "the TCP address (default 127.0.0.1; others need --api-key-file)");
  app.add_option("--port", port, "also listen on this TCP port (11435; 11434 for Ollama clients)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--socket", socket, "the Unix socket (default: $XDG_RUNTIME_DIR/quip/serve.sock)");
  app.add_option("--keep-alive", keep_alive, "unload a model idle this long (default 5m)");
  app.add_option("--parallel", parallel, "calls that generate at once, decoding together (default 4)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--no-batching", no_batching,
               "each call decodes alone, with its share of the threads (a baseline)");
  app.add_option("--cache-ram", cache_ram,
                 "memory for the caches of ended calls, for their follow-ups (default 1G; 0: none)");
  app.add_option("--api-key-file", api_key_file,
                 "a file holding the API key TCP clients must send (Authorization: Bearer)");
  app.add_option("-t,--threads", threads_text, "threads for all calls (default: physical cores)");
  app.add_option("--ctx-size", ctx_text, "context positions per call (default: each model's)");
  app.add_option("--config", config_file, "the config file");
  app.add_flag("--stop", stop, "stop the running server (it finishes its calls first)");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  const auto fail = [&](int status, const std::string& message) {
    print_error(err, "quip serve", message);
    return status;
  };

  const std::optional<fs::path> sock = socket_from(socket);
  if (!sock) return fail(kExitUsage, "no folder for the socket: give --socket PATH or set HOME");
  if (stop) return stop_server(*sock, out, err);

  auto config = load_config(config_file ? std::optional<fs::path>(*config_file) : std::nullopt);
  if (!config) return fail(kExitUsage, config.error().message);

  serve::ServeOptions o;
  o.socket = *sock;
  o.parallel = parallel;
  o.batching = !no_batching;
  if (cache_ram) {
    auto size = store::parse_size(*cache_ram);
    if (!size) return fail(kExitUsage, "--cache-ram: " + size.error().message);
    o.cache_ram_bytes = *size;
  }
  o.version = QUIP_PROJECT_VERSION;
  // The models clients may name: those given, else the config's default
  // and aliases.
  const auto add_model = [&](const std::string& name) -> std::optional<std::string> {
    if (auto it = config->models.find(name); it != config->models.end()) {
      o.models.push_back({name, it->second.path, true});
      return std::nullopt;
    }
    std::error_code ec;
    if (!fs::is_regular_file(name, ec)) {
      // A model of another tool's store, listed by the name it was given.
      auto resolved = resolve_model_name(name, *config, session::store_roots());
      if (auto* e = std::get_if<ModelNameError>(&resolved)) return "-m: " + e->message;
      const fs::path& file = std::get<ModelFile>(resolved).path;
      if (!fs::is_regular_file(file, ec)) {
        return "-m " + printable(name) + ": neither a model file nor an alias in the config";
      }
      o.models.push_back({name, fs::absolute(file, ec), true});
      return std::nullopt;
    }
    // Listed by its name without .gguf; its file name names it too.
    const fs::path p = fs::absolute(name, ec);
    if (p.extension() == ".gguf") {
      o.models.push_back({p.stem().string(), p, true});
      o.models.push_back({p.filename().string(), p, false});
    } else {
      o.models.push_back({p.filename().string(), p, true});
    }
    return std::nullopt;
  };
  if (models.empty() && config->default_model) models.push_back(*config->default_model);
  for (const std::string& m : models) {
    if (auto e = add_model(m)) return fail(kExitUsage, *e);
  }
  for (const auto& [name, alias] : config->models) {
    if (std::none_of(o.models.begin(), o.models.end(),
                     [&](const auto& n) { return n.name == name; })) {
      o.models.push_back({name, alias.path, true});
    }
  }
  if (o.models.empty()) {
    return fail(kExitUsage, "no model to serve: give -m MODEL, or set 'model' in config.toml");
  }
  if (keep_alive) {
    auto d = parse_duration("--keep-alive", *keep_alive);
    if (!d) return fail(kExitUsage, d.error().message);
    o.keep_alive = *d;
  }
  if (threads_text) {
    Settings s;
    if (auto set = set_from_flag("--threads", *threads_text, s); !set) {
      return fail(kExitUsage, set.error().message);
    }
    o.threads = static_cast<int>(*s.threads);
  } else {
    o.threads = kernels::physical_cores();
  }
  if (ctx_text) {
    Settings s;
    if (auto set = set_from_flag("--ctx-size", *ctx_text, s); !set) {
      return fail(kExitUsage, set.error().message);
    }
    o.n_ctx = static_cast<size_t>(*s.ctx_size);
  }
  auto isa = kernels::chosen_isa();
  if (!isa) return fail(kExitUsage, isa.error().message);
  o.isa = *isa;
  o.cache_dir = cache_dir();
  if (o.cache_dir) o.cache_dir = *o.cache_dir;
  o.cache_max_bytes = config->cache_max_size.value_or(store::kDefaultCacheBytes);
  if (host && !port) return fail(kExitUsage, "--host goes with --port");
  o.host = host;
  o.port = port;
  if (api_key_file) {
    auto key = read_input_file(*api_key_file);
    if (!key) return fail(kExitUsage, "--api-key-file: " + key.error().message);
    std::string k = *key;
    while (!k.empty() && is_c_space(k.back())) k.pop_back();
    while (!k.empty() && is_c_space(k.front())) k.erase(k.begin());
    if (k.empty())
      return fail(kExitUsage, "--api-key-file " + printable(*api_key_file) + " is empty");
    o.api_key = k;
  }
  if (port && !is_loopback(host.value_or("127.0.0.1")) && !o.api_key) {
    return fail(kExitUsage, "--host " + printable(*host) +
                                " is reachable from other machines: give --api-key-file too");
  }

  // SIGINT and SIGTERM go to a thread that stops the server; the others
  // never see them. SIGPIPE: a client gone is a failed write, not a death.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  serve::Server server(o);
  if (auto bound = server.bind(); !bound) return fail(kExitFailure, bound.error().message);
  std::string names;
  for (const auto& m : o.models) {
    if (m.listed) names += (names.empty() ? "" : ", ") + m.name;
  }
  err << "quip serve: " << names << " on " << o.socket.string();
  if (port) err << " and http://" << host.value_or("127.0.0.1") << ":" << *port;
  err << "; Ctrl-C stops" << std::endl;

  std::atomic<bool> served{false};
  std::thread signals([&] {
    const timespec tick{0, 200'000'000};
    while (!served) {
      if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) {
        server.stop();
        return;
      }
    }
  });
  server.serve();
  served = true;
  signals.join();
  err << "quip serve: stopped" << std::endl;
  return kExitOk;
}

int ps_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"List the models a running quip server holds.", "quip ps"};
  bool json = false;
  std::optional<std::string> socket;
  app.add_flag("--json", json, "print the server's answer as JSON");
  app.add_option("--socket", socket, "the server's Unix socket");
  if (std::optional<int> status = parse_args(app, args, out, err)) return *status;
  const std::optional<fs::path> sock = socket_from(socket);
  httplib::Client c = serve::socket_client(sock.value_or(fs::path("/nonexistent")), 2);
  auto r = sock ? c.Get("/api/ps") : httplib::Result(nullptr, httplib::Error::Connection);
  if (!r || r->status != 200) {
    print_error(err, "quip ps",
                "no quip server is running on " + (sock ? sock->string() : std::string("(none)")));
    return kExitFailure;
  }
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("models") || !j["models"].is_array()) {
    print_error(err, "quip ps", "the server's answer is malformed");
    return kExitFailure;
  }
  if (json) {
    out << j.dump() << '\n';
    return kExitOk;
  }
  out << std::left << std::setw(32) << "NAME" << std::setw(10) << "SIZE" << std::setw(8) << "IN USE"
      << "UNTIL\n";
  for (const auto& m : j["models"]) {
    const double mib = m.value("size", 0.0) / (1024.0 * 1024.0);
    std::ostringstream size;
    size << std::fixed << std::setprecision(mib < 10 ? 1 : 0) << mib << " MiB";
    out << std::left << std::setw(32) << m.value("name", std::string()) << std::setw(10)
        << size.str() << std::setw(8) << m.value("in_use", 0) << m.value("expires_at", "") << '\n';
  }
  return kExitOk;
}

}  // namespace quip::cli
