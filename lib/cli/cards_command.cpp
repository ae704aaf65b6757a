// `tvie cards`: the accelerator catalog (tvie/catalog.hpp) as a table, JSON or CSV.
#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {
namespace {

struct CardsOptions {
  std::string cards = "all";
  OutputOptions output;
};

}  // namespace

Runner add_cards_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<CardsOptions>();
  auto* cmd = app.add_subcommand("cards",
                                 "The accelerator catalog: dense peaks per precision, memory, bandwidth, power, "
                                 "interconnect, price, each with its source");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_field_option(cmd, "--cards", o->cards, "all, or catalog ids separated by commas (t4,l4,h100-sxm)", "cards")
      ->capture_default_str();
  add_output_options(cmd, o->output, /*with_csv=*/true, "Also write the catalog (with every source) as JSON here");
  return [o, argv]() {
    apply_log_level(o->output);
    check_outputs(o->output);
    emit(run_cards(o->cards, run_options("cpu", argv)), o->output);
    return 0;
  };
}

}  // namespace tvie::cli
