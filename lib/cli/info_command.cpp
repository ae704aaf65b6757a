// `tvie info` and `tvie list`.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"
#include "options.hpp"

namespace tvie::cli {

Runner add_info_command(CLI::App& app) {
  app.add_subcommand("info", "Print versions and the devices LibTorch sees");
  return [] {
    std::cout << "tvie_version: " << TVIE_VERSION_STRING << "\n"
              << "torch_version: " << make_run_context(c10::Device(c10::kCPU), {}).torch_version << "\n"
              << "built_with_cuda: " << (TVIE_WITH_CUDA ? "yes" : "no") << "\n"
              << "cuda_available: " << (cuda_available() ? "yes" : "no") << "\n"
              << "cuda_devices: " << cuda_device_count() << "\n"
              << "distributed_backends: gloo " << (TVIE_WITH_GLOO ? "yes" : "no (no gloo headers at configure time)")
              << ", nccl " << (TVIE_WITH_NCCL ? "yes" : "no") << "\n"
              << "quantized_engine_int8_cpu: "
              << (nn::linear_weights_supported(nn::LinearWeights::int8_dynamic, c10::Device(c10::kCPU)) ? "yes" : "no")
              << "\n";
    for (int i = 0; i < cuda_device_count(); ++i)
      std::cout << "  " << describe_device(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))) << "\n";
    return 0;
  };
}

Runner add_list_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<OutputOptions>();
  auto* cmd = app.add_subcommand(
      "list", "List the zoo's models and their presets: parameters, forward FLOPs, blocks (analytic) and the source");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_output_options(cmd, *o, /*with_csv=*/true, "Also write the list as JSON here");
  return [o, argv]() {
    apply_log_level(*o);
    check_outputs(*o);
    emit(run_list(run_options("cpu", argv)), *o);
    return 0;
  };
}

}  // namespace tvie::cli
