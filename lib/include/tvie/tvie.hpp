// tvie: the training-vs-inference emulator. Umbrella header.
//   workload.hpp  the Workload interface you implement to bring your own model
//   models.hpp    the zoo: mlp, cnn, gpt, with presets and analytic counts
//   settings.hpp  TrainSettings, InferSettings, CompareSettings (+ validate)
//   train.hpp     Trainer, run_training          infer.hpp   InferenceSession, run_inference
//   compare.hpp   run_compare                    report.hpp  ConsoleReporter, JsonReporter
//   memory.hpp    probes and ledgers             timing.hpp  StepTimer      stats.hpp  summarize
//   decode.hpp    run_decoding (KV cache)      serve.hpp   run_serving, DynamicBatcher, poisson_schedule_s
//   precision.hpp AutocastGuard, LossScaler      checkpoint.hpp  activation checkpointing
//   device.hpp    resolve_device                 errors.hpp  typed exceptions  log.hpp  logging
#pragma once

#include <tvie/checkpoint.hpp>
#include <tvie/compare.hpp>
#include <tvie/config.hpp>
#include <tvie/context.hpp>
#include <tvie/decode.hpp>
#include <tvie/device.hpp>
#include <tvie/dist.hpp>
#include <tvie/errors.hpp>
#include <tvie/infer.hpp>
#include <tvie/layers.hpp>
#include <tvie/log.hpp>
#include <tvie/memory.hpp>
#include <tvie/models.hpp>
#include <tvie/precision.hpp>
#include <tvie/report.hpp>
#include <tvie/serve.hpp>
#include <tvie/settings.hpp>
#include <tvie/stats.hpp>
#include <tvie/timing.hpp>
#include <tvie/torchscript.hpp>
#include <tvie/train.hpp>
#include <tvie/workload.hpp>
