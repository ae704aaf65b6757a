// `tvie train`: training only, with every training option.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {

Runner add_train_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<CommonOptions>();
  auto* cmd = app.add_subcommand(
      "train", "Train the model and print the memory ledger, phase times, loss curve and loss-scaling statistics");
  add_common_options(cmd, *o);
  return [o, argv]() {
    apply_common_options(*o);
    const auto& s = o->settings;
    validate(s);
    if (!o->json_path.empty()) check_output_path(o->json_path, "json");
    const TrainReport report = run_train(s, argv);
    ConsoleReporter(std::cout).report(report);
    if (!o->json_path.empty()) {
      JsonReporter(o->json_path).report(report);
      log::info(cat("wrote ", o->json_path));
    }
    return 0;
  };
}

}  // namespace tvie::cli
