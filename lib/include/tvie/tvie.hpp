// tvie: the training-vs-inference emulator. Umbrella header (docs/library.md: the layers and an example each).
//   run.hpp       the front door: run_compare, run_train, run_train_data_parallel, run_infer_sweep,
//                 run_serve, run_decode, run_allreduce (one shape: workload, settings, RunOptions -> report)
//   report.hpp    ConsoleReporter, JsonReporter, CsvReporter (one overload per report)
//   workload.hpp  the Workload interface you implement to bring your own model
//   models.hpp    the zoo: mlp, cnn, gpt, with presets and analytic counts
//   settings.hpp  TrainSettings, InferSettings, CompareSettings (+ validate)
//   building blocks: train.hpp (Trainer, measure_training), infer.hpp (InferenceSession, measure_inference, sweep),
//   serve.hpp (DynamicBatcher, measure_serving, find_max_qps), decode.hpp (measure_decoding), dist.hpp
//   (Communicator, DataParallel), precision.hpp (AutocastGuard, LossScaler), checkpoint.hpp, memory.hpp
//   (probes, ledgers), timing.hpp (StepTimer), stats.hpp, device.hpp, errors.hpp, log.hpp
#pragma once

#include <tvie/catalog.hpp>
#include <tvie/checkpoint.hpp>
#include <tvie/run.hpp>
#include <tvie/config.hpp>
#include <tvie/context.hpp>
#include <tvie/decode.hpp>
#include <tvie/device.hpp>
#include <tvie/energy.hpp>
#include <tvie/dist.hpp>
#include <tvie/errors.hpp>
#include <tvie/infer.hpp>
#include <tvie/layers.hpp>
#include <tvie/log.hpp>
#include <tvie/max_batch.hpp>
#include <tvie/memory.hpp>
#include <tvie/models.hpp>
#include <tvie/options_file.hpp>
#include <tvie/precision.hpp>
#include <tvie/predict.hpp>
#include <tvie/plan.hpp>
#include <tvie/projection.hpp>
#include <tvie/report.hpp>
#include <tvie/serve.hpp>
#include <tvie/settings.hpp>
#include <tvie/slices.hpp>
#include <tvie/stats.hpp>
#include <tvie/timeline.hpp>
#include <tvie/timing.hpp>
#include <tvie/torchscript.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>
