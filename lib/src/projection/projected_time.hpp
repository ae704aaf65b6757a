// Projected times put together: phases one after the other, a generation's prefill and decoding steps, a sum of
// steps as its mean step. Shared by the plan and its calibration.
#pragma once

#include <cstdint>
#include <functional>

#include <tvie/plan.hpp>
#include <tvie/projection.hpp>

namespace tvie::projected_time {

// Phases run one after the other: their times add, class by class (a generation's prefill and steps, a training
// step's forward, backward and optimizer).
void add_time(ProjectedTime& into, const ProjectedTime& t);

// The work of a decoding step at `f` of the way from step `a` to step `b`: a step's work is affine in the
// positions it attends to (the attention's FLOPs and the cache it reads grow by one position per step; the
// weights read and the kernels do not change).
StepWork between(const StepWork& a, const StepWork& b, double f);

// A generation's two phases on `card`: the prefill, then new_tokens - 1 decoding steps, step k attending to
// prompt + k - 1 cached positions (each step's work between the first and the last step's). `work(cached)`: the
// cached forward with `cached` positions in the cache (0: the prefill, the prompt's positions new), returned by
// reference from a store whose references stay valid as it grows.
struct GenerationTime {
  ProjectedTime prefill, decoding, last_step;
};

// `prefill_time`, `step_time`: how a prefill's and a decoding step's work become time (default: project_time).
using StepProjector = std::function<ProjectedTime(const StepWork&)>;
GenerationTime project_generation(const std::function<const StepWork&(int64_t)>& work, int64_t prompt,
                                  int64_t new_tokens, const Accelerator& card, const StepProjector& prefill_time = {},
                                  const StepProjector& step_time = {});

// The two phases one after the other. A class is memory-bound in the sum as it is in the phase where it spends the
// longer time.
ProjectedTime whole(const GenerationTime& g);

// `t` per unit: a sum of `n` steps as its mean step.
ProjectedTime per_step(ProjectedTime t, double n);

// One phase projected and calibrated: class by class where `classes` has factors (a class without one takes the
// phase's), else the phase as one (calibration.cpp).
ProjectedTime calibrated_phase(const StepWork& phase, const Accelerator& card, const CalibrationFactor& factor,
                               const ClassCalibration& classes);

}  // namespace tvie::projected_time
