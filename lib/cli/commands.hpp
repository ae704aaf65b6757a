// The subcommands of build/bin/tvie. Each registers its options on the app and returns the function
// that runs it once the command line has been parsed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tvie::cli {

using Runner = std::function<int()>;

// `tvie compare`: training and inference of one model side by side.
Runner add_compare_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie train`: training only, every training option.
Runner add_train_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie infer`: batch x precision sweep of inference with accuracy against fp32.
Runner add_infer_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie serve`: a serving load with latency percentiles.
Runner add_serve_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie launch`: N local ranks of a command with the torchrun environment.
Runner add_launch_command(CLI::App& app);
// `tvie allreduce`: all-reduce bandwidth sweep (nccl-tests' all_reduce_perf).
Runner add_allreduce_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie decode`: KV-cached decoding of gpt.
Runner add_decode_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie cards`: the accelerator catalog.
Runner add_cards_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie plan`: the workload projected onto the catalog's cards.
Runner add_plan_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie info`: versions and devices.
Runner add_info_command(CLI::App& app);
// `tvie list`: the zoo's models and presets.
Runner add_list_command(CLI::App& app, const std::vector<std::string>& argv);
// `tvie reference`: every command and option as Markdown (docs/cli.md).
Runner add_reference_command(CLI::App& app);
std::string cli_reference(const CLI::App& app);

}  // namespace tvie::cli
