// A model saved from Python (examples/torchscript_from_python.py, torch.jit.save) compared in C++: training and
// inference of the loaded module side by side, inference frozen and optimised for inference (conv-batchnorm
// folding, fusion) as a deployment would run it. Training runs the module's forward with a synthetic loss: it
// measures what a training step costs, it teaches the model nothing.
//
//   python3 examples/torchscript_from_python.py /tmp/model.pt
//   build/bin/torchscript_from_python /tmp/model.pt [--device cpu|cuda|auto]
#include <cstring>
#include <iostream>
#include <string>

#include <tvie/tvie.hpp>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: torchscript_from_python MODEL.pt [--device cpu|cuda|auto]\n";
    return 2;
  }
  std::string device = "auto";
  for (int i = 2; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
  try {
    tvie::install_cpu_memory_counter();
    tvie::TorchScriptSettings script;
    script.path = argv[1];
    script.input_shape = {3, 32, 32};  // one sample, as the Python side's forward expects
    script.fusion = tvie::ScriptFusion::optimize;
    tvie::validate(script);
    const auto workload = tvie::make_torchscript_workload(script);
    tvie::CompareSettings settings;
    settings.train.batch_size = 16;
    settings.train.steps = 5;
    settings.train.warmup_steps = 1;
    settings.infer.batch_size = 16;
    settings.infer.steps = 10;
    const auto report = tvie::run_compare(*workload, settings, {device});
    tvie::ConsoleReporter(std::cout).report(report);
  } catch (const tvie::InvalidArgument& e) {
    std::cerr << "torchscript_from_python: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "torchscript_from_python: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
