// The option tables of every quip command. The texts are what --help and the
// man page print; the names must match each command's parser (checked at
// every --help, see options.h).
#include "cli/options.h"

#include <utility>

namespace quip::cli {

std::vector<std::string> OptionDoc::each_name() const {
  std::vector<std::string> out;
  for (size_t begin = 0;;) {
    const size_t comma = names.find(',', begin);
    out.push_back(names.substr(begin, comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

OptionDoc flag_doc(std::string names, std::string help) {
  OptionDoc o;
  o.names = std::move(names);
  o.help = std::move(help);
  return o;
}

OptionDoc option_doc(std::string names, std::string value, std::string help, Completes completes) {
  OptionDoc o;
  o.names = std::move(names);
  o.value = std::move(value);
  o.help = std::move(help);
  o.completes = completes;
  return o;
}

OptionDoc choice_doc(std::string names, std::string value, std::vector<std::string> choices,
                     std::string help) {
  OptionDoc o = option_doc(std::move(names), std::move(value), std::move(help), Completes::kChoice);
  o.choices = std::move(choices);
  return o;
}

OptionDoc positional_doc(std::string name, std::string help, Completes completes, bool repeats) {
  OptionDoc o;
  o.names = std::move(name);
  o.help = std::move(help);
  o.completes = completes;
  o.repeats = repeats;
  return o;
}

namespace {

OptionDoc hidden(OptionDoc o) {
  o.hidden = true;
  return o;
}

CommandDoc command(std::string name, std::string summary, std::string synopsis,
                   std::string description, std::vector<OptionDoc> options) {
  CommandDoc c;
  c.name = std::move(name);
  c.summary = std::move(summary);
  c.usage.push_back(UsageLine{std::move(synopsis), ""});
  c.description = std::move(description);
  c.options = std::move(options);
  return c;
}

constexpr Completes kFile = Completes::kFile;
constexpr Completes kModel = Completes::kModel;
constexpr Completes kConversation = Completes::kConversation;

// `quip PROMPT`: the options of generate.cpp's parser.
CommandDoc prompt_command() {
  CommandDoc c;
  c.summary = "a local LLM for the Unix shell";
  c.usage = {
      {"[OPTIONS] PROMPT...", "answer a prompt; stdin, when piped, comes first as context"},
      {"-c PROMPT...", "continue this terminal's last conversation"},
      {"--cid ID[@N] PROMPT...", "continue conversation ID (from turn N: a fork)"},
      {"--raw PROMPT...", "continue a text as it is, without the chat template"},
      {"COMMAND [OPTIONS]", ""},
      {"--version", "version, commit, build and the CPU's kernels"},
  };
  c.description =
      "quip answers one prompt with a local GGUF model and exits; the answer streams to stdout "
      "and nothing else does, so that quip composes in pipes and $(...). Every call is recorded "
      "as a turn of a conversation, which -c or --cid continues; evaluated prompts are kept in a "
      "prefix cache on disk, so a call that starts with what an earlier one evaluated computes "
      "only the rest. When a quip server is running (quip serve) calls are answered by it.";
  c.options = {
      positional_doc("PROMPT",
                     "the prompt (words are joined by spaces); stdin, when not a terminal, comes "
                     "first as context; '-' makes stdin the prompt",
                     Completes::kNothing, true),
      option_doc("-m,--model", "MODEL", "GGUF model file or config alias", kModel),
      option_doc("--backend", "URL",
                 "send the conversation to this OpenAI-compatible server (http[s]://HOST[:PORT]); "
                 "-m names its model (default: $QUIP_BACKEND)"),
      flag_doc("-c,--continue", "continue the last conversation of this terminal"),
      option_doc("--cid", "ID[@N]", "continue conversation ID; ID@N forks it after turn N",
                 kConversation),
      option_doc("-f,--file", "FILE", "read the prompt from FILE", kFile),
      option_doc("--system", "TEXT", "the system message of a new conversation"),
      option_doc("--template", "FILE", "a Jinja chat template instead of the model's", kFile),
      flag_doc("--raw", "feed the prompt as it is, without the chat template"),
      option_doc("--tokens", "IDS", "with --raw: the prompt as token ids \"ID ID ...\""),
      flag_doc("--print-prompt",
               "print the prompt the call would send (with --json: and its token ids); no answer"),
      flag_doc("--estimate",
               "print, without running the model, the prompt's tokens, how many the prefix cache "
               "holds, the memory the call needs and a time from earlier speeds; no answer"),
      option_doc("-n,--n-predict", "N",
                 "stop after N tokens, N in [0, 2^31); -1 (the default): at the end of the turn"),
      option_doc("--temp", "T", "temperature in [0, 100]; 0 is greedy (default 0)"),
      option_doc("--top-k", "K", "keep the K most likely tokens (0: all; default 40)"),
      option_doc("--top-p", "P",
                 "keep the most likely tokens up to probability P in (0, 1] (0.95)"),
      option_doc("--min-p", "P", "drop tokens below P times the most likely, P in [0, 1] (0.05)"),
      option_doc("--repeat-penalty", "R", "penalty for recent tokens in (0, 100] (1: none)"),
      option_doc("-s,--seed", "SEED",
                 "random seed in [0, 2^63); -1 (the default): a fresh one, reported by --json"),
      option_doc("-t,--threads", "N", "threads in [1, 1024] (default: the physical cores)"),
      option_doc("--ctx-size", "N",
                 "context positions in [1, 2^31); 0 (the default): the model's training context"),
      flag_doc("--ignore-eos", "go on past the end of the turn"),
      option_doc("--logprobs", "K",
                 "with --json: the K most likely tokens of each step, K in [0, 1000]"),
      choice_doc("--think", "MODE", {"hide", "show", "off", "inline"},
                 "a thinking model's reasoning: hide (default; recorded, not printed), show (also "
                 "on stderr when it is a terminal), off (ask the model not to think), inline (as "
                 "part of the answer)"),
      option_doc("--grammar", "FILE",
                 "the answer is a sentence of this GBNF grammar (llama.cpp's grammar files)",
                 kFile),
      option_doc("--json-schema", "SCHEMA",
                 "the answer is JSON valid under this JSON Schema (a file, or the schema itself)",
                 kFile),
      option_doc("--choice", "LIST",
                 "the answer is exactly one of these comma-separated strings, and a newline"),
      flag_doc("--json", "print one JSON object instead of the text"),
      flag_doc("--stats", "print token counts and timings as one line on stderr"),
      flag_doc("--local",
               "answer in this process even when a quip server is running (as QUIP_NO_SERVE=1)"),
      flag_doc("--no-cache", "neither restore nor save evaluated prefixes"),
      option_doc("--cache-max-size", "SIZE",
                 "the prefix cache's size limit, e.g. 4GiB (default: config, else 4GiB)"),
      option_doc("--config", "FILE", "the config file (default: ~/.config/quip/config.toml)",
                 kFile),
  };
  return c;
}

CommandDoc cache_command() {
  CommandDoc c = command(
      "cache", "the prefix cache on disk (stats, clear, prune)", "cache [OPTIONS] ACTION",
      "Manage the prefix cache: the evaluated prompts kept on disk so that a call starting with "
      "them evaluates only the rest.",
      {option_doc("--config", "FILE", "the config file (for [cache] max_size)", kFile)});
  c.actions = {
      command("cache stats", "files, bytes and the size limit", "cache stats [OPTIONS]",
              "Print the files, bytes and the size limit of the prefix cache.",
              {flag_doc("--json", "print one JSON object")}),
      command("cache clear", "remove every cached prefix (only quip's own files)", "cache clear",
              "Remove every cached prefix (only quip's own files).", {}),
      command("cache prune", "remove broken files, then the least recently used beyond the limit",
              "cache prune [OPTIONS]",
              "Remove broken files, then the least recently used prefixes beyond the limit.",
              {option_doc("--max-size", "SIZE",
                          "the limit to prune to (default: the configured one)")}),
  };
  return c;
}

const OptionDoc kConversationId =
    positional_doc("ID", "the conversation (see 'quip log')", Completes::kConversation);

std::vector<CommandDoc> build() {
  std::vector<CommandDoc> all;
  all.push_back(prompt_command());
  all.push_back(command(
      "bench", "measure prompt and generation speed (-p, -n, -t, -r, --json)", "bench [OPTIONS]",
      "Measure prompt processing (pp) and generation (tg) speed in tokens/s.",
      {option_doc("-m,--model", "MODEL",
                  "GGUF model: a file, an alias or a name (quip models) (required)", kModel),
       option_doc("-p,--n-prompt", "N", "prompt tokens, evaluated as one batch (0: none; 512)"),
       option_doc("-n,--n-gen", "N", "tokens generated one at a time (0: none; 128)"),
       option_doc("-t,--threads", "N", "threads (default: the physical cores)"),
       option_doc("-r,--repetitions", "N", "repetitions of each test (5)"),
       option_doc("-s,--sequences", "S",
                  "also generate S sequences decoded together, as quip serve batches its calls "
                  "(tgNxS, against tgN)"),
       flag_doc("--json", "print a JSON array of results")}));
  all.push_back(cache_command());
  all.push_back(command(
      "completion", "print a shell's completion script (bash, zsh, fish)", "completion SHELL",
      "Print the completion script for SHELL. The installed package puts these scripts where "
      "bash, zsh and fish look; to use one by hand: source <(quip completion bash). The "
      "candidates come from quip itself: its commands and options, the model aliases of the "
      "config file and the ids of stored conversations.",
      {choice_doc("SHELL", "", {"bash", "zsh", "fish"}, "bash, zsh or fish"),
       hidden(flag_doc("--complete",
                       "print the candidates for the last of the words that follow '--' (a "
                       "command line being typed); the scripts call this"))}));
  all.push_back(command(
      "export", "write a conversation as Markdown or JSON (--format md|json)",
      "export [OPTIONS] ID", "Write a conversation as a Markdown transcript or as JSON.",
      {kConversationId, choice_doc("--format", "FORMAT", {"md", "json"},
                                   "md (the default): Markdown transcript; json: as 'quip show "
                                   "--json'")}));
  all.push_back(command(
      "inspect", "show what a GGUF model file holds (--json, --tensors)", "inspect [OPTIONS] FILE",
      "Print what a GGUF model file holds: architecture, sizes, tokenizer, tensors.",
      {positional_doc("FILE", "GGUF file", kFile),
       flag_doc("--json", "print one JSON object (every metadata key, every tensor)"),
       flag_doc("--tensors", "also list every tensor: name, type, shape, offset")}));
  all.push_back(
      command("log", "list the most recent conversations (-n N, --json)", "log [OPTIONS]",
              "List the most recent conversations, newest first: id, date, turns, model, title.",
              {option_doc("-n,--count", "N", "how many to list (0: all; default 20)"),
               flag_doc("--json", "print a JSON array of objects instead")}));
  all.push_back(command(
      "models", "list the models Ollama, Hugging Face, LM Studio, llama.cpp keep (--json)",
      "models [OPTIONS]",
      "List the GGUF models that Ollama, the Hugging Face cache, LM Studio and llama.cpp's cache "
      "hold, by the names 'quip -m' takes: store, file, size, architecture, parameters, file "
      "type, context length, chat template, and whether quip runs it (if not, why). A file two "
      "stores share is listed once, with every name.",
      {flag_doc("--json", "print one JSON object: the stores' folders and the models")}));
  all.push_back(command("ps", "list the models a running quip server holds (--json)",
                        "ps [OPTIONS]", "List the models a running quip server holds.",
                        {flag_doc("--json", "print the server's answer as JSON"),
                         option_doc("--socket", "PATH", "the server's Unix socket", kFile)}));
  all.push_back(command(
      "pull", "download a GGUF model from Hugging Face (hf:ORG/REPO[@REVISION][:QUANT])",
      "pull MODEL",
      "Download a GGUF model from Hugging Face into its cache (where huggingface_hub and "
      "llama.cpp's -hf find it too) and print the file's path. QUANT picks the file by its "
      "quant tag; without it: Q4_K_M, else Q8_0, else the first GGUF file. REVISION: a branch, "
      "tag or commit (default main). Split models come whole. An interrupted download resumes "
      "on the next pull; every file's SHA-256 is checked before it is used.\n\n"
      "HF_TOKEN (else the file `hf auth login` saves): an access token (private and gated "
      "models); HF_ENDPOINT: another hub; HF_HUB_CACHE or HF_HOME: another cache.",
      {positional_doc("MODEL",
                      "hf:ORG/REPO[@REVISION][:QUANT], e.g. "
                      "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0")}));
  all.push_back(command("rm", "delete a conversation", "rm ID",
                        "Delete a conversation and all its turns (forks of it are kept).",
                        {kConversationId}));
  all.push_back(command(
      "serve", "keep models loaded; answer the shell and OpenAI/Ollama clients (--port)",
      "serve [OPTIONS]",
      "Keep models loaded and answer the shell's calls and OpenAI or Ollama clients, on a Unix "
      "socket of this user and optionally on a TCP port, until SIGINT or SIGTERM.",
      {option_doc("-m,--model", "MODEL", "a GGUF file or config alias to serve (repeatable)",
                  kModel),
       option_doc("--host", "ADDRESS",
                  "the TCP address (default 127.0.0.1; others need --api-key-file)"),
       option_doc("--port", "PORT",
                  "also listen on this TCP port, in [1, 65535] (11435; 11434 for Ollama clients)"),
       option_doc("--socket", "PATH", "the Unix socket (default: $XDG_RUNTIME_DIR/quip/serve.sock)",
                  kFile),
       option_doc("--keep-alive", "DURATION", "unload a model idle this long (default 5m)"),
       option_doc("--parallel", "N",
                  "calls that generate at once, decoding together, in [1, 64] (default 4)"),
       flag_doc("--no-batching",
                "each call decodes alone, with its share of the threads (a "
                "baseline)"),
       option_doc("--cache-ram", "SIZE",
                  "memory for the caches of ended calls, for their follow-ups (default 1G; 0: "
                  "none)"),
       option_doc("--api-key-file", "FILE",
                  "a file holding the API key TCP clients must send (Authorization: Bearer)",
                  kFile),
       option_doc("-t,--threads", "N", "threads for all calls (default: physical cores)"),
       option_doc("--ctx-size", "N", "context positions per call (default: each model's)"),
       option_doc("--config", "FILE", "the config file", kFile),
       flag_doc("--stop", "stop the running server (it finishes its calls first)")}));
  all.push_back(command(
      "show", "show a conversation's turns (--json)", "show [OPTIONS] ID",
      "Show a conversation's turns: the messages, the answers, interrupted ones marked.\n\n"
      "A branch (a fork made with --cid ID@N, or a turn recorded as one because the "
      "conversation moved on while it was computed) is a conversation of its own that starts "
      "with copies of the turns it follows: its header says \"forked from conversation ID at "
      "turn N\", and the conversation it left lists it after turn N.",
      {kConversationId,
       flag_doc("--json", "print everything stored as one JSON object, token ids included")}));
  all.push_back(command(
      "template", "render messages with a chat template (-m, --template)",
      "template [OPTIONS] [MESSAGES]",
      "Print how a chat template renders a JSON list of {\"role\", \"content\"} messages: the "
      "model's own (-m) or a file's (--template).",
      {positional_doc("MESSAGES", "a JSON file of messages; '-' or none reads stdin", kFile),
       option_doc("-m,--model", "FILE", "GGUF model: its template, BOS and EOS texts", kFile),
       option_doc("--template", "FILE", "a Jinja template file (instead of the model's)", kFile),
       flag_doc("--no-generation-prompt",
                "leave out the assistant header that asks for an answer")}));
  all.push_back(command(
      "tokenize", "print the tokens of a text (--ids, --no-bos, --parse-special)",
      "tokenize [OPTIONS] -m FILE TEXT...",
      "Print the tokens a model's vocabulary makes of TEXT (or of stdin with '-').",
      {positional_doc("TEXT", "text to tokenize (words are joined by spaces); '-' reads stdin",
                      Completes::kNothing, true),
       option_doc("-m,--model", "FILE", "GGUF model or vocabulary file (required)", kFile),
       flag_doc("--ids", "print only the ids, on one line"),
       flag_doc("--no-bos", "add no BOS/EOS, whatever the model asks"),
       flag_doc("--parse-special",
                "match special-token text such as <|im_start|> as those tokens")}));
  return all;
}

}  // namespace

const std::vector<CommandDoc>& command_docs() {
  static const std::vector<CommandDoc> all = build();
  return all;
}

const CommandDoc* find_command_doc(std::string_view name) {
  for (const CommandDoc& c : command_docs()) {
    if (c.name == name) return &c;
    for (const CommandDoc& a : c.actions) {
      if (a.name == name) return &a;
    }
  }
  return nullptr;
}

}  // namespace quip::cli
