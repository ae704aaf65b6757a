// `tvie info` and `tvie list`.
#include <iostream>

#include <tvie/tvie.hpp>

#include "commands.hpp"

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

Runner add_list_command(CLI::App& app) {
  app.add_subcommand("list", "List the zoo's models and their presets with analytic sizes and their source");
  return [] {
    for (const auto& model : model_names()) {
      for (const auto& preset : preset_names(model)) {
        const auto facts = make_zoo_workload(model, preset)->facts();  // analytic: builds no module
        std::cout << model << " --preset " << preset << ": " << facts.parameter_count << " parameters, "
                  << facts.forward_flops_per_sample << " forward FLOPs per sample (analytic); "
                  << preset_source(model, preset) << "\n";
      }
    }
    return 0;
  };
}

}  // namespace tvie::cli
