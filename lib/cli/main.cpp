// build/bin/tvie: the command-line tool. Bad input: one line on stderr naming the option and the
// accepted values, exit code 2, no output file.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace {

constexpr int kUsageError = 2;
constexpr int kRunError = 1;

// Under `tvie launch` every rank parses the same command line: its bad input is printed once, by rank 0 (the
// others exit 2 quietly). A rank started by hand with RANK set still prints its own.
bool prints_usage_errors() {
  const char* launched = std::getenv("TVIE_LAUNCHED");
  const char* rank = std::getenv("RANK");
  return launched == nullptr || rank == nullptr || std::string(rank) == "0";
}

// Edits (insertions, deletions, substitutions) that turn `a` into `b`.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The long option of `command` a mistyped `unknown` most likely means: the one it begins ("--prompt" ->
// "--prompt-tokens"), else the nearest within two edits ("--infer-dtpye"), else the longest it begins with
// ("--batch-size" -> "--batch"), else the one it ends with ("--infer-dtype" -> "--dtype"); "" when none is that near.
std::string nearest_option(const CLI::App& command, const std::string& unknown) {
  const std::string typed = unknown.substr(0, unknown.find('='));  // --name=value
  std::string nearest, stem, tail;
  size_t nearest_distance = 3;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      const std::string candidate = "--" + name;
      if (typed.size() > 3 && candidate.rfind(typed, 0) == 0) return candidate;
      const size_t d = edit_distance(typed, candidate);
      if (d < nearest_distance) nearest = candidate, nearest_distance = d;
      if (candidate.size() > 3 && typed.rfind(candidate, 0) == 0 && candidate.size() > stem.size()) stem = candidate;
      const std::string ending = "-" + name;
      if (name.size() > 2 && typed.size() > candidate.size() &&
          typed.compare(typed.size() - ending.size(), ending.size(), ending) == 0)
        tail = candidate;
    }
  }
  return !nearest.empty() ? nearest : !stem.empty() ? stem : tail;
}

// The one line a command line CLI11 cannot parse gets: the argument it does not know, what was probably meant.
std::string usage_error(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* command = nullptr;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->parsed()) command = sub;
  }
  if (command == nullptr) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
    const std::vector<std::string> extra = app.remaining();
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr || !extra.empty())
      return "tvie: error: " +
             (extra.empty() ? std::string("no command") : "'" + extra.front() + "' is not a command") +
             "; accepted: " + names;
    return std::string("tvie: error: ") + e.what() + " (see tvie --help)";
  }
  const std::string name = "tvie " + command->get_name();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::vector<std::string> extra = command->remaining();
    const auto option =
        std::find_if(extra.begin(), extra.end(), [](const std::string& a) { return a.rfind('-', 0) == 0; });
    if (option != extra.end()) {
      const std::string near = nearest_option(*command, *option);
      return name + ": error: " + option->substr(0, option->find('=')) + ": not an option of " + name +
             (near.empty() ? std::string() : "; did you mean " + near + "?") + " (" + name + " --help lists them)";
    }
    if (!extra.empty())
      return name + ": error: '" + extra.front() + "': an argument " + name + " does not take (" + name +
             " --help lists its options)";
  }
  return name + ": error: " + e.what() + " (see " + name + " --help)";
}

}  // namespace

int main(int argc, char** argv) {
  // Before the first tensor, so that every CPU allocation is counted.
  tvie::install_cpu_memory_counter();
  // A rank whose peer died writes into a closed socket: the write must fail (EPIPE) so that the collective's error
  // names the lost rank, rather than SIGPIPE ending the process silently (exit 141).
  std::signal(SIGPIPE, SIG_IGN);

  const std::vector<std::string> args(argv, argv + argc);
  CLI::App app{
      "tvie: the training-vs-inference emulator. Runs the same model in training and in inference "
      "mode and measures, side by side, what each costs."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tvie ") + TVIE_VERSION_STRING);
  // Each subcommand registers itself and returns what runs it; the table keeps the order of `tvie --help`.
  using namespace tvie::cli;
  const std::vector<std::pair<std::string, std::function<Runner()>>> table = {
      {"compare", [&] { return add_compare_command(app, args); }},
      {"train", [&] { return add_train_command(app, args); }},
      {"infer", [&] { return add_infer_command(app, args); }},
      {"serve", [&] { return add_serve_command(app, args); }},
      {"launch", [&] { return add_launch_command(app); }},
      {"allreduce", [&] { return add_allreduce_command(app, args); }},
      {"decode", [&] { return add_decode_command(app, args); }},
      {"list", [&] { return add_list_command(app, args); }},
      {"cards", [&] { return add_cards_command(app, args); }},
      {"plan", [&] { return add_plan_command(app, args); }},
      {"info", [&] { return add_info_command(app); }},
      {"reference", [&] { return add_reference_command(app); }}};
  std::vector<std::pair<CLI::App*, Runner>> commands;
  for (const auto& [name, add] : table) {
    Runner run = add();
    commands.emplace_back(app.get_subcommand(name), std::move(run));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (prints_usage_errors()) std::cerr << usage_error(app, e) << "\n";
    return kUsageError;
  }

  for (auto& [sub, run] : commands) {
    if (!sub->parsed()) continue;
    const std::string name = "tvie " + sub->get_name();
    try {
      apply_config_file(sub);  // --config's options, before anything runs
      return run();
    } catch (const tvie::InvalidArgument& e) {
      if (!prints_usage_errors()) return kUsageError;
      std::cerr << name << ": error: " << tvie::cli::option_for_field(sub, e.field()) << ": got '" << e.value()
                << "'; accepted: " << e.accepted() << "\n";
      return kUsageError;
    } catch (const tvie::ConfigurationMismatch& e) {
      std::cerr << name << ": error: " << e.what() << "\n";
      return kUsageError;
    } catch (const tvie::PredictedOutOfMemory& e) {
      // Refused before anything was built: a setting to change, as a bad value is.
      if (!prints_usage_errors()) return kUsageError;
      std::cerr << name << ": does not fit: " << e.what() << "\n";
      return kUsageError;
    } catch (const tvie::OutOfMemory& e) {
      std::cerr << name << ": out of memory: " << e.what() << "\n";
      return kRunError;
    } catch (const c10::Error& e) {
      std::cerr << name << ": error: " << e.what_without_backtrace() << "\n";  // one line, not LibTorch's frames
      return kRunError;
    } catch (const std::exception& e) {
      std::cerr << name << ": error: " << e.what() << "\n";
      return kRunError;
    }
  }
  return kUsageError;
}
