// build/bin/tvie: the command-line tool. Bad input: one line on stderr naming the option and the
// accepted values, exit code 2, no output file.
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

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
    if (prints_usage_errors()) std::cerr << "tvie: error: " << e.what() << " (see tvie --help)\n";
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
